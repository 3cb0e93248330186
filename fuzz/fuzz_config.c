/* libFuzzer target for omma stream --config's parser (src/cli/stream_config.c):
 * the input is the file's text. It must parse, or fail with a message that
 * names the file, a line within the text and a key ("cfg.json:LINE: key
 * ..."); every parsed item has a line within the text and a value that
 * is a string. Anything else traps; ASan/UBSan catch the rest. Built and
 * run by fuzz/run.sh config. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/stream_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A table like omma stream's: switches, values, on|off, sub-options. */
static const cli_option options[] = {
    {"--backend", "gpu|cpu", ""}, {"--fps", "F", ""},         {"--resolution", "WxH", ""},
    {"--loop", NULL, ""},         {"--graphs", "on|off", ""}, {"--lsl", NULL, ""},
    {"--lsl-name", "NAMES", ""},  {"--lsl-bind", "ADDR", ""}, {"--data", "DIR", ""},
    {"--sink", "URL", ""},        {"--participant", "P", ""}, {"--min-score", "S", ""},
    {"--config", "FILE", ""},     {NULL, NULL, NULL},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    cli_config c;
    char err[1024];
    if (!cli_config_parse("cfg.json", (const char *)data, size, options, &c, err, sizeof err)) {
        int line = 0;
        if (c.n != 0 || c.items || sscanf(err, "cfg.json:%d: key ", &line) != 1 || line < 1 ||
            line > lines || !strstr(err, ": key "))
            __builtin_trap();
        return 0;
    }
    for (int i = 0; i < c.n; i++)
        if (c.items[i].line < 1 || c.items[i].line > lines || !c.items[i].key[0] ||
            (!c.items[i].option && !c.items[i].value))
            __builtin_trap();
    cli_config_free(&c);
    return 0;
}
