/* omma lsl ls | read NAME: the Lab Streaming Layer streams visible from
 * this machine, and one stream's samples, with omma's own resolver and
 * inlet (src/lsl/): a way to check a lab's setup without other tools. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_inlet.h"
#include "lsl/lsl_resolver.h"

static const cli_option ls_options[] = {
    {"--wait", "S", "listen for answers this long (default 1)"},
    {"--query", "Q", "only streams matching Q, e.g. \"type='Landmark'\" (LSL's query language)"},
    {"--peers", "LIST", "also ask these IPv4 hosts, comma-separated (LSL's KnownPeers)"},
    {"--json", NULL, "one JSON line per stream"},
    {NULL, NULL, NULL},
};

static const cli_option read_options[] = {
    {"--count", "N", "samples to print (default 10)"},
    {"--wait", "S", "how long to look for the stream and wait for each sample (5)"},
    {"--peers", "LIST", "also ask these IPv4 hosts (as for ls)"},
    {"--json", NULL, "one JSON line per sample"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma lsl ls [--wait S] [--query Q] [--peers LIST] [--json]\n"
                "       omma lsl read NAME [--count N] [--wait S] [--peers LIST] [--json]\n"
                "  The Lab Streaming Layer: streams of omma stream --lsl or any LSL program.\n"
                "  ls: every stream that answers: name, type, channels and format, nominal\n"
                "  rate, source_id, host and uid.\n"
                "  read: the stream named NAME: its channels, the time correction to its\n"
                "  host's clock, then samples (timestamp on the outlet's LSL clock, values).\n");
    fprintf(to, "ls options:\n");
    cli_print_options(to, ls_options);
    fprintf(to, "read options:\n");
    cli_print_options(to, read_options);
}

static void print_info_json(const lsl_info *s)
{
    printf("{\"name\":");
    cli_json_string(s->name);
    printf(",\"type\":");
    cli_json_string(s->type);
    printf(",\"channels\":%d,\"format\":\"%s\",\"rate\":%.17g,\"source_id\":", s->channel_count,
           lsl_format_name(s->format), s->nominal_srate);
    cli_json_string(s->source_id);
    printf(",\"hostname\":");
    cli_json_string(s->hostname);
    printf(",\"address\":");
    cli_json_string(s->v4address);
    printf(",\"data_port\":%d,\"uid\":", s->v4data_port);
    cli_json_string(s->uid);
    printf("}\n");
}

static int lsl_ls(int argc, char **argv)
{
    double wait = 1.0;
    const char *query = "", *peers = NULL;
    int json = 0;
    cli_args args;
    cli_args_init(&args, "lsl ls", ls_options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("lsl", "unexpected argument '%s'", v);
        if (opt == &ls_options[0] && !cli_arg_double(opt->name, v, 0.05, 600, &wait))
            return cli_see_help("lsl");
        if (opt == &ls_options[1])
            query = v;
        if (opt == &ls_options[2])
            peers = v;
        if (opt == &ls_options[3])
            json = 1;
    }
    lsl_resolve_options ro = {.query = query, .wait_s = wait, .peers = peers};
    lsl_info *found = NULL;
    int n = 0;
    omma_status st = lsl_resolve(&ro, &found, &n);
    if (st != OMMA_OK)
        return cli_fail(st, "looking for LSL streams");
    if (!json && n == 0)
        printf("no LSL stream answered within %g s\n", wait);
    if (!json && n > 0)
        printf("%-28s %-12s %9s %-9s %9s  %-36s %-28s %s\n", "NAME", "TYPE", "CHANNELS", "FORMAT",
               "RATE", "SOURCE_ID", "HOST", "UID");
    for (int i = 0; i < n; i++) {
        const lsl_info *s = &found[i];
        if (json) {
            print_info_json(s);
            continue;
        }
        char host[400];
        snprintf(host, sizeof host, "%s (%s:%d)", s->hostname, s->v4address, s->v4data_port);
        printf("%-28s %-12s %9d %-9s %9.6g  %-36s %-28s %s\n", s->name, s->type, s->channel_count,
               lsl_format_name(s->format), s->nominal_srate, s->source_id, host, s->uid);
    }
    lsl_resolve_free(found, n);
    return CLI_EXIT_OK;
}

static void print_value(const lsl_info *s, const uint8_t *vals, int k)
{
    switch (s->format) {
    case LSL_FORMAT_FLOAT32: {
        float f;
        memcpy(&f, vals + 4 * (size_t)k, 4);
        if (f != f)
            printf("%s", "null");
        else
            printf("%.9g", f);
        break;
    }
    case LSL_FORMAT_DOUBLE64: {
        double d;
        memcpy(&d, vals + 8 * (size_t)k, 8);
        if (d != d)
            printf("%s", "null");
        else
            printf("%.17g", d);
        break;
    }
    case LSL_FORMAT_INT32: {
        int32_t x;
        memcpy(&x, vals + 4 * (size_t)k, 4);
        printf("%d", x);
        break;
    }
    case LSL_FORMAT_INT16: {
        int16_t x;
        memcpy(&x, vals + 2 * (size_t)k, 2);
        printf("%d", x);
        break;
    }
    case LSL_FORMAT_INT8:
        printf("%d", (int8_t)vals[k]);
        break;
    case LSL_FORMAT_INT64: {
        int64_t x;
        memcpy(&x, vals + 8 * (size_t)k, 8);
        printf("%lld", (long long)x);
        break;
    }
    default:
        printf("null");
    }
}

static int lsl_read(int argc, char **argv)
{
    long count = 10;
    double wait = 5.0;
    const char *name = NULL, *peers = NULL;
    int json = 0;
    cli_args args;
    cli_args_init(&args, "lsl read", read_options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL) {
            if (name)
                return cli_usage_error("lsl", "unexpected argument '%s'", v);
            name = v;
            continue;
        }
        if (opt == &read_options[0] && !cli_arg_long(opt->name, v, 0, 1000000000L, &count))
            return cli_see_help("lsl");
        if (opt == &read_options[1] && !cli_arg_double(opt->name, v, 0.05, 600, &wait))
            return cli_see_help("lsl");
        if (opt == &read_options[2])
            peers = v;
        if (opt == &read_options[3])
            json = 1;
    }
    if (!name)
        return cli_usage_error("lsl", "omma lsl read needs a stream NAME");
    if (strchr(name, '\''))
        return cli_usage_error("lsl", "a stream name cannot hold a quote (')");
    char q[400];
    lsl_query_byprop(q, sizeof q, "name", name);
    lsl_resolve_options ro = {.query = q, .wait_s = wait, .minimum = 1, .peers = peers};
    lsl_info *found = NULL;
    int n = 0;
    omma_status st = lsl_resolve(&ro, &found, &n);
    if (st != OMMA_OK)
        return cli_fail(st, "looking for LSL stream %s", name);
    if (n == 0) {
        cli_error("no LSL stream named %s answered within %g s", name, wait);
        return CLI_EXIT_ERROR;
    }
    lsl_inlet *in = NULL;
    st = lsl_inlet_open(&found[0], wait, &in);
    lsl_resolve_free(found, n);
    if (st != OMMA_OK)
        return cli_fail(st, "connecting to LSL stream %s", name);
    const lsl_info *s = lsl_inlet_info(in);
    char *labels = NULL;
    int nl = 0;
    if (lsl_info_channel_labels(s, &labels, &nl) != OMMA_OK)
        nl = 0;
    double corr = 0, rtt = 0;
    omma_status tst = lsl_inlet_time_correction(in, 8, wait, &corr, &rtt);
    fprintf(stderr, "omma lsl: %s: %s, %d %s channels at %g Hz, source_id %s, host %s (%s)\n",
            s->name, s->type, s->channel_count, lsl_format_name(s->format), s->nominal_srate,
            s->source_id, s->hostname, s->v4address);
    if (nl > 0) {
        fprintf(stderr, "omma lsl: channel labels:");
        const char *l = labels;
        for (int i = 0; i < nl && i < 8; i++, l += strlen(l) + 1)
            fprintf(stderr, " %s", l);
        fprintf(stderr, "%s (%d)\n", nl > 8 ? " ..." : "", nl);
    }
    if (tst == OMMA_OK)
        fprintf(stderr, "omma lsl: time correction %.6f ms (round trip %.3f ms)\n", corr * 1e3,
                rtt * 1e3);
    else
        fprintf(stderr, "omma lsl: no time correction: %s\n", omma_last_error());
    free(labels);
    size_t bytes = (size_t)s->channel_count * lsl_format_size(s->format);
    uint8_t *vals = malloc(bytes ? bytes : 1);
    /* The age of each sample on arrival: from its timestamp (mapped to this
     * machine's clock) to now. For omma stream, capture to here. */
    double *age = malloc(sizeof *age * (size_t)(count > 0 ? count : 1));
    size_t n_age = 0;
    int rc = CLI_EXIT_OK;
    for (long i = 0; i < count && vals && age; i++) {
        double ts;
        st = lsl_inlet_pull(in, vals, &ts, wait);
        double now = lsl_clock_now();
        if (st != OMMA_OK) {
            rc = cli_fail(st, "reading LSL stream %s", name);
            break;
        }
        age[n_age++] = (now - (ts + corr)) * 1e3;
        printf(json ? "{\"timestamp\":%.17g,\"values\":[" : "%.6f", ts);
        for (int k = 0; k < s->channel_count; k++) {
            printf(json ? (k ? "," : "") : " ");
            print_value(s, vals, k);
        }
        printf(json ? "]}\n" : "\n");
        fflush(stdout);
    }
    if (n_age > 0)
        fprintf(stderr,
                "omma lsl: %zu samples; age on arrival (from timestamp to here): p50 %.3f ms, "
                "p99 %.3f ms\n",
                n_age, cli_percentile(age, n_age, 0.5), cli_percentile(age, n_age, 0.99));
    free(age);
    free(vals);
    lsl_inlet_close(in);
    return rc;
}

int cli_lsl(int argc, char **argv)
{
    static const char *const subs[] = {"ls", "read"};
    if (argc < 2)
        return cli_usage_error("lsl", "omma lsl needs ls or read");
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "ls") == 0)
        return lsl_ls(argc - 1, argv + 1);
    if (strcmp(argv[1], "read") == 0)
        return lsl_read(argc - 1, argv + 1);
    return cli_unknown("lsl", "lsl command", argv[1], subs, 2);
}
