/* JSON output helpers shared by the subcommands' --json modes. */
#ifndef OMMA_CLI_JSON_H
#define OMMA_CLI_JSON_H

/* Prints s to stdout as a JSON string literal (quotes, backslashes and
 * control characters escaped). */
void cli_json_string(const char *s);

#endif
