/* LSL's TCP data protocol 1.10: request and response headers, test
 * patterns, sample encoding (lsl_feed.h). */
#include "lsl/lsl_feed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Next line of text [pos, len): its bounds without \r\n; 0 at the end. */
static int next_line(const char *t, size_t len, size_t *pos, size_t *from, size_t *to)
{
    if (*pos >= len)
        return 0;
    *from = *pos;
    const char *nl = memchr(t + *pos, '\n', len - *pos);
    size_t end = nl ? (size_t)(nl - t) : len;
    *pos = nl ? end + 1 : len;
    while (end > *from && (t[end - 1] == '\r' || t[end - 1] == ' ' || t[end - 1] == '\t'))
        end--;
    *to = end;
    return 1;
}

static int parse_long(const char *s, size_t n, long *out)
{
    char tmp[32];
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    double d = strtod(tmp, &end); /* liblsl writes some integers as floor() doubles */
    if (*end || errno || d < -2147483648.0 || d > 2147483647.0)
        return 0;
    *out = (long)d;
    return 1;
}

/* A header line "Key: value ; comment" -> lowercase key, value bounds. */
static int split_header(const char *t, size_t from, size_t to, char *key, size_t kcap,
                        size_t *vfrom, size_t *vto)
{
    const char *colon = memchr(t + from, ':', to - from);
    if (!colon)
        return 0;
    size_t c = (size_t)(colon - t);
    const char *semi = memchr(t + c, ';', to - c);
    if (semi)
        to = (size_t)(semi - t);
    size_t kf = from, kt = c;
    while (kf < kt && (t[kf] == ' ' || t[kf] == '\t'))
        kf++;
    while (kt > kf && (t[kt - 1] == ' ' || t[kt - 1] == '\t'))
        kt--;
    if (kt - kf >= kcap)
        return 0;
    for (size_t i = kf; i < kt; i++) {
        char ch = t[i];
        key[i - kf] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
    }
    key[kt - kf] = '\0';
    *vfrom = c + 1;
    *vto = to;
    while (*vfrom < *vto && (t[*vfrom] == ' ' || t[*vfrom] == '\t'))
        (*vfrom)++;
    return 1;
}

static omma_status header_long(const char *what, const char *t, size_t vf, size_t vt,
                               const char *key, long *out)
{
    if (!parse_long(t + vf, vt - vf, out))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s header %s: '%.*s' is not a number", what, key,
                         (int)(vt - vf > 40 ? 40 : vt - vf), t + vf);
    return OMMA_OK;
}

omma_status lsl_feed_request_parse(const char *text, size_t len, lsl_feed_request *req)
{
    memset(req, 0, sizeof *req);
    req->byte_order = 1234;
    req->value_size = -1;
    req->has_ieee754 = 1;
    req->supports_subnormals = 1;
    req->max_buffer_length = -1;
    req->max_chunk_length = 0;
    if (len > LSL_FEED_MAX_REQUEST)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request longer than %d bytes",
                         LSL_FEED_MAX_REQUEST);
    size_t pos = 0, from, to;
    if (!next_line(text, len, &pos, &from, &to))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: empty");
    static const char v100[] = "LSL:streamfeed", vnn[] = "LSL:streamfeed/";
    size_t n = to - from;
    if (n == sizeof v100 - 1 && memcmp(text + from, v100, n) == 0) {
        /* 1.00: one more line, "max_buffered chunk_granularity". */
        req->version = 100;
        req->protocol_version = 100;
        if (!next_line(text, len, &pos, &from, &to))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request 1.00: no parameter line");
        char tmp[64];
        if (to - from >= sizeof tmp)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request 1.00: parameter line too long");
        memcpy(tmp, text + from, to - from);
        tmp[to - from] = '\0';
        long a, b;
        if (sscanf(tmp, "%ld %ld", &a, &b) != 2)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request 1.00: bad parameters '%s'", tmp);
        req->max_buffer_length = a;
        req->max_chunk_length = b;
        return OMMA_OK;
    }
    if (n <= sizeof vnn - 1 || memcmp(text + from, vnn, sizeof vnn - 1) != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: unknown method '%.*s'",
                         (int)(n > 40 ? 40 : n), text + from);
    size_t vf = from + sizeof vnn - 1, vt = vf;
    while (vt < to && text[vt] >= '0' && text[vt] <= '9')
        vt++;
    long version;
    if (vt == vf || vt - vf > 6 || !parse_long(text + vf, vt - vf, &version) || version <= 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: bad protocol version");
    req->version = (int)version;
    req->protocol_version = (int)version;
    while (vt < to && text[vt] == ' ')
        vt++;
    if (to - vt >= sizeof req->uid)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: UID too long");
    memcpy(req->uid, text + vt, to - vt);
    req->uid[to - vt] = '\0';
    int ended = 0;
    while (next_line(text, len, &pos, &from, &to)) {
        if (to == from) {
            ended = 1;
            break;
        }
        char key[40];
        size_t hf, ht;
        if (!split_header(text, from, to, key, sizeof key, &hf, &ht))
            continue; /* liblsl ignores lines without a key */
        long v;
        if (strcmp(key, "native-byte-order") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            if (v != 1234 && v != 4321)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: byte order %ld", v);
            req->byte_order = (int)v;
        } else if (strcmp(key, "has-ieee754-floats") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->has_ieee754 = v != 0;
        } else if (strcmp(key, "supports-subnormals") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->supports_subnormals = v != 0;
        } else if (strcmp(key, "value-size") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->value_size = (int)v;
        } else if (strcmp(key, "data-protocol-version") == 0 ||
                   strcmp(key, "protocol-version") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->protocol_version = (int)v;
        } else if (strcmp(key, "max-buffer-length") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->max_buffer_length = v;
        } else if (strcmp(key, "max-chunk-length") == 0) {
            OMMA_TRY(header_long("LSL feed request", text, hf, ht, key, &v));
            req->max_chunk_length = v;
        }
    }
    if (!ended)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed request: headers not ended by a blank line");
    return OMMA_OK;
}

omma_status lsl_feed_response_parse(const char *text, size_t len, lsl_feed_response *resp)
{
    memset(resp, 0, sizeof *resp);
    resp->byte_order = 1234;
    if (len > LSL_FEED_MAX_REQUEST)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response longer than %d bytes",
                         LSL_FEED_MAX_REQUEST);
    size_t pos = 0, from, to;
    if (!next_line(text, len, &pos, &from, &to))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response: empty");
    char line[128];
    size_t n = to - from < sizeof line - 1 ? to - from : sizeof line - 1;
    memcpy(line, text + from, n);
    line[n] = '\0';
    int version, status;
    if (sscanf(line, "LSL/%d %d", &version, &status) != 2)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response: bad status line '%s'", line);
    resp->version = version;
    resp->status = status;
    resp->data_protocol_version = 100;
    int ended = 0;
    while (next_line(text, len, &pos, &from, &to)) {
        if (to == from) {
            ended = 1;
            break;
        }
        char key[40];
        size_t hf, ht;
        if (!split_header(text, from, to, key, sizeof key, &hf, &ht))
            continue;
        long v;
        if (strcmp(key, "uid") == 0) {
            if (ht - hf >= sizeof resp->uid)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response: UID too long");
            memcpy(resp->uid, text + hf, ht - hf);
            resp->uid[ht - hf] = '\0';
        } else if (strcmp(key, "byte-order") == 0) {
            OMMA_TRY(header_long("LSL feed response", text, hf, ht, key, &v));
            resp->byte_order = v == 0 ? 1234 : (int)v;
            if (resp->byte_order != 1234 && resp->byte_order != 4321)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response: byte order %ld", v);
        } else if (strcmp(key, "suppress-subnormals") == 0) {
            OMMA_TRY(header_long("LSL feed response", text, hf, ht, key, &v));
            resp->suppress_subnormals = v != 0;
        } else if (strcmp(key, "data-protocol-version") == 0) {
            OMMA_TRY(header_long("LSL feed response", text, hf, ht, key, &v));
            resp->data_protocol_version = (int)v;
        }
    }
    if (status == 200 && !ended)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL feed response: headers not ended by a blank line");
    return OMMA_OK;
}

void lsl_test_pattern(lsl_format f, int n, int offset, void *values)
{
    for (int k = 0; k < n; k++) {
        int neg = k % 2 == 1;
        switch (f) {
        case LSL_FORMAT_FLOAT32: {
            float v = (float)(k + offset);
            ((float *)values)[k] = neg ? -v : v;
            break;
        }
        case LSL_FORMAT_DOUBLE64: {
            double v = (double)((size_t)k + (size_t)offset + 16777217u);
            ((double *)values)[k] = neg ? -v : v;
            break;
        }
        case LSL_FORMAT_INT32: {
            size_t v = ((size_t)k + (size_t)offset + 65537u) % 2147483647u;
            ((int32_t *)values)[k] = neg ? -(int32_t)v : (int32_t)v;
            break;
        }
        case LSL_FORMAT_INT16: {
            size_t v = ((size_t)k + (size_t)offset + 257u) % 32767u;
            ((int16_t *)values)[k] = (int16_t)(neg ? -(int)v : (int)v);
            break;
        }
        case LSL_FORMAT_INT8: {
            size_t v = ((size_t)k + (size_t)offset + 1u) % 127u;
            ((int8_t *)values)[k] = (int8_t)(neg ? -(int)v : (int)v);
            break;
        }
        case LSL_FORMAT_INT64: {
            int64_t v = (int64_t)k + 2147483649LL + offset;
            ((int64_t *)values)[k] = neg ? -v : v;
            break;
        }
        default:
            break;
        }
    }
}

void lsl_sample_encode(uint8_t *out, double timestamp, const void *values, size_t value_bytes)
{
    out[0] = LSL_TAG_TRANSMITTED;
    memcpy(out + 1, &timestamp, 8);
    if (value_bytes)
        memcpy(out + 9, values, value_bytes);
}

void lsl_swap_values(void *values, int n, size_t width)
{
    uint8_t *p = values;
    for (int i = 0; i < n; i++, p += width)
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}
