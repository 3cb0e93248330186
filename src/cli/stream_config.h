/* omma stream --config FILE: a JSON file holding what the command line
 * holds (docs/CONFIG.md), read with json-c. Every option of the command
 * has a key, its long name without the dashes ("max-faces": 2); a
 * string or a number is its value, true turns a flag on (on|off options
 * take true and false too), an array repeats the option. Objects group
 * keys: "outputs" and "thresholds" hold options as the top level does, and
 * an object under a key K holds K's sub-options ("lsl": {"bind": ...} is
 * --lsl-bind). Structured sections: "cameras" (the SOURCEs, with name,
 * resolution and fps), "participants" (--participant) and "regions" (a
 * participant's region by name).
 *
 * The file becomes a list of option items with the file's line and the
 * key's path for every one: errors say FILE:LINE: key PATH. json-c gives
 * the offset of a syntax error; for the keys, a light scan of the text
 * walks the same path (the text is valid JSON by then) to the key's
 * position. No printing here: errors come back as text. */
#ifndef OMMA_CLI_STREAM_CONFIG_H
#define OMMA_CLI_STREAM_CONFIG_H

#include <stddef.h>

#include "cli/args.h"

#define CLI_CONFIG_KEY_MAX 160

typedef struct cli_config_item {
    const cli_option *option; /* from the table; NULL: a SOURCE (a camera) */
    char *value; /* owned; NULL for a flag */
    char key[CLI_CONFIG_KEY_MAX]; /* "cameras[1].fps" */
    int line; /* 1-based */
} cli_config_item;

typedef struct cli_config {
    char *path;
    cli_config_item *items;
    int n, cap;
} cli_config;

/* Parses text (len bytes, named path in messages) into *out against the
 * option table. Returns 1, or 0 with err = "PATH:LINE: key KEY: what is
 * wrong" (*out then empty). */
int cli_config_parse(const char *path, const char *text, size_t len, const cli_option *options,
                     cli_config *out, char *err, size_t cap);

/* Reads the file, then cli_config_parse. */
int cli_config_load(const char *path, const cli_option *options, cli_config *out, char *err,
                    size_t cap);

void cli_config_free(cli_config *c);

#endif
