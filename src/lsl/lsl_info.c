#define _POSIX_C_SOURCE 200809L /* strdup */
/* Stream descriptions: the <info> document as liblsl writes and reads it. */
#include "lsl/lsl_info.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"

static const char *const format_names[] = {"undefined", "float32", "double64", "string",
                                           "int32",     "int16",   "int8",     "int64"};

size_t lsl_format_size(lsl_format f)
{
    switch (f) {
    case LSL_FORMAT_FLOAT32:
        return 4;
    case LSL_FORMAT_DOUBLE64:
        return 8;
    case LSL_FORMAT_INT32:
        return 4;
    case LSL_FORMAT_INT16:
        return 2;
    case LSL_FORMAT_INT8:
        return 1;
    case LSL_FORMAT_INT64:
        return 8;
    default:
        return 0;
    }
}

const char *lsl_format_name(lsl_format f)
{
    return (unsigned)f < sizeof format_names / sizeof format_names[0] ? format_names[f]
                                                                      : "undefined";
}

void lsl_info_write(const lsl_info *info, int full, lsl_buf *out)
{
    char num[64];
    const char *in = "\t";
    lsl_buf_puts(out, "<?xml version=\"1.0\"?>\n<info>\n");
    lsl_buf_element(out, in, "name", info->name);
    lsl_buf_element(out, in, "type", info->type);
    snprintf(num, sizeof num, "%d", info->channel_count);
    lsl_buf_element(out, in, "channel_count", num);
    lsl_buf_element(out, in, "channel_format", lsl_format_name(info->format));
    lsl_buf_element(out, in, "source_id", info->source_id);
    snprintf(num, sizeof num, "%.17g", info->nominal_srate);
    lsl_buf_element(out, in, "nominal_srate", num);
    snprintf(num, sizeof num, "%d.%02d", info->version / 100, info->version % 100);
    lsl_buf_element(out, in, "version", num);
    snprintf(num, sizeof num, "%.17g", info->created_at);
    lsl_buf_element(out, in, "created_at", num);
    lsl_buf_element(out, in, "uid", info->uid);
    lsl_buf_element(out, in, "session_id", info->session_id);
    lsl_buf_element(out, in, "hostname", info->hostname);
    lsl_buf_element(out, in, "v4address", info->v4address);
    snprintf(num, sizeof num, "%d", info->v4data_port);
    lsl_buf_element(out, in, "v4data_port", num);
    snprintf(num, sizeof num, "%d", info->v4service_port);
    lsl_buf_element(out, in, "v4service_port", num);
    lsl_buf_element(out, in, "v6address", "");
    lsl_buf_element(out, in, "v6data_port", "0");
    lsl_buf_element(out, in, "v6service_port", "0");
    if (full && info->desc && *info->desc) {
        lsl_buf_puts(out, "\t<desc>");
        lsl_buf_puts(out, info->desc);
        lsl_buf_puts(out, "</desc>\n");
    } else {
        lsl_buf_puts(out, "\t<desc />\n");
    }
    lsl_buf_puts(out, "</info>\n");
}

static omma_status copy_field(char *dst, size_t cap, const lsl_xml_node *info, const char *key,
                              int required)
{
    const char *v = lsl_xml_child_text(info, key);
    size_t n = strlen(v);
    if (n >= cap)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: <%s> is %zu bytes long, more than %zu", key,
                         n, cap - 1);
    if (required && n == 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: <%s> is missing or empty", key);
    memcpy(dst, v, n + 1);
    return OMMA_OK;
}

static omma_status int_field(const lsl_xml_node *info, const char *key, long lo, long hi, int *out)
{
    const char *v = lsl_xml_child_text(info, key);
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (!*v || *end || errno || x < lo || x > hi)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "stream info: <%s> is '%.40s', not an integer in [%ld, %ld]", key, v, lo,
                         hi);
    *out = (int)x;
    return OMMA_OK;
}

static omma_status real_field(const lsl_xml_node *info, const char *key, double *out)
{
    const char *v = lsl_xml_child_text(info, key);
    char *end;
    double x = strtod(v, &end);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (!*v || *end || !isfinite(x))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: <%s> is '%.40s', not a number", key, v);
    *out = x;
    return OMMA_OK;
}

static omma_status parse_fields(const lsl_xml_node *root, const char *buf, lsl_info *info)
{
    if (strcmp(root->name, "info") != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: document element is <%s>, not <info>",
                         root->name);
    OMMA_TRY(copy_field(info->name, sizeof info->name, root, "name", 1));
    OMMA_TRY(copy_field(info->type, sizeof info->type, root, "type", 0));
    OMMA_TRY(copy_field(info->source_id, sizeof info->source_id, root, "source_id", 0));
    OMMA_TRY(copy_field(info->uid, sizeof info->uid, root, "uid", 1));
    OMMA_TRY(copy_field(info->session_id, sizeof info->session_id, root, "session_id", 0));
    OMMA_TRY(copy_field(info->hostname, sizeof info->hostname, root, "hostname", 0));
    OMMA_TRY(copy_field(info->v4address, sizeof info->v4address, root, "v4address", 0));
    OMMA_TRY(int_field(root, "channel_count", 0, LSL_MAX_CHANNELS, &info->channel_count));
    const char *fmt = lsl_xml_child_text(root, "channel_format");
    info->format = LSL_FORMAT_UNDEFINED;
    for (int f = 1; f <= LSL_FORMAT_INT64; f++)
        if (strcmp(fmt, format_names[f]) == 0)
            info->format = (lsl_format)f;
    if (info->format == LSL_FORMAT_UNDEFINED)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: unknown channel format '%.40s'", fmt);
    OMMA_TRY(real_field(root, "nominal_srate", &info->nominal_srate));
    if (info->nominal_srate < 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: negative nominal_srate");
    double version;
    OMMA_TRY(real_field(root, "version", &version));
    /* Kept in hundredths (1.10 -> 110): what rounds to 0 is out of range. */
    if (!(version >= 0.005 && version <= 1000))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "stream info: version %g out of range", version);
    info->version = (int)(version * 100 + 0.5);
    OMMA_TRY(real_field(root, "created_at", &info->created_at));
    OMMA_TRY(int_field(root, "v4data_port", 0, 65535, &info->v4data_port));
    OMMA_TRY(int_field(root, "v4service_port", 0, 65535, &info->v4service_port));
    const lsl_xml_node *desc = lsl_xml_child(root, "desc");
    if (desc && desc->inner_end > desc->inner_begin) {
        info->desc = strndup(buf + desc->inner_begin, desc->inner_end - desc->inner_begin);
        if (!info->desc)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream info: out of memory");
    }
    return OMMA_OK;
}

omma_status lsl_info_parse(const char *buf, size_t len, lsl_info *info)
{
    memset(info, 0, sizeof *info);
    lsl_xml_node *root = NULL;
    OMMA_TRY(lsl_xml_parse(buf, len, &root));
    omma_status st = parse_fields(root, buf, info);
    lsl_xml_free(root);
    if (st != OMMA_OK)
        lsl_info_clear(info);
    return st;
}

omma_status lsl_info_copy(lsl_info *dst, const lsl_info *src)
{
    *dst = *src;
    dst->desc = NULL;
    if (src->desc && !(dst->desc = strdup(src->desc)))
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream info: out of memory");
    return OMMA_OK;
}

void lsl_info_clear(lsl_info *info)
{
    free(info->desc);
    memset(info, 0, sizeof *info);
}

omma_status lsl_info_channel_labels(const lsl_info *info, char **labels, int *n)
{
    *labels = NULL;
    *n = 0;
    if (!info->desc || !*info->desc)
        return OMMA_OK;
    /* Wrap desc's content so it is one document. */
    lsl_buf doc = {0};
    lsl_buf_puts(&doc, "<desc>");
    lsl_buf_puts(&doc, info->desc);
    lsl_buf_puts(&doc, "</desc>");
    if (doc.failed) {
        lsl_buf_free(&doc);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream info: out of memory");
    }
    lsl_xml_node *root = NULL;
    omma_status st = lsl_xml_parse(doc.data, doc.len, &root);
    lsl_buf_free(&doc);
    if (st != OMMA_OK)
        return st;
    lsl_buf out = {0};
    int count = 0;
    const lsl_xml_node *chs = lsl_xml_child(root, "channels");
    for (const lsl_xml_node *c = chs ? chs->child : NULL; c; c = c->next) {
        if (strcmp(c->name, "channel") != 0)
            continue;
        const char *label = lsl_xml_child_text(c, "label");
        lsl_buf_append(&out, label, strlen(label) + 1);
        count++;
    }
    lsl_xml_free(root);
    if (out.failed) {
        lsl_buf_free(&out);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream info: out of memory");
    }
    *labels = out.data;
    *n = count;
    return OMMA_OK;
}

void lsl_desc_channel(lsl_buf *desc, const char *label, const char *unit, const char *type)
{
    lsl_buf_puts(desc, "<channel>");
    lsl_buf_puts(desc, "<label>");
    lsl_buf_escape(desc, label);
    lsl_buf_puts(desc, "</label>");
    if (unit && *unit) {
        lsl_buf_puts(desc, "<unit>");
        lsl_buf_escape(desc, unit);
        lsl_buf_puts(desc, "</unit>");
    }
    if (type && *type) {
        lsl_buf_puts(desc, "<type>");
        lsl_buf_escape(desc, type);
        lsl_buf_puts(desc, "</type>");
    }
    lsl_buf_puts(desc, "</channel>");
}

omma_status lsl_info_new_uid(lsl_info *info)
{
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "open /dev/urandom: %s", strerror(errno));
    ssize_t got = read(fd, b, sizeof b);
    close(fd);
    if (got != (ssize_t)sizeof b)
        return OMMA_FAIL(OMMA_ERR_IO, "read /dev/urandom: short read");
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    snprintf(info->uid, sizeof info->uid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return OMMA_OK;
}
