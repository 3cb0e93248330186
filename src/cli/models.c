/* placeholder: replaced by the real command */
#include <stdio.h>
int cli_models(int argc, char **argv);
int cli_models(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not built yet\n"); return 1; }
