/* LSL discovery queries: a recursive-descent evaluator of the XPath subset
 * that resolvers send (lsl_query.h). */
#include "lsl/lsl_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_DEPTH 64

typedef enum { V_BOOL, V_NUM, V_STR, V_NODE } vkind;

typedef struct value {
    vkind kind;
    int b; /* V_BOOL; V_NODE: the node exists */
    double num;
    char str[300]; /* V_STR, V_NODE (its text) */
} value;

typedef struct qparser {
    const char *s;
    size_t len, pos;
    const lsl_info *info;
    int depth;
} qparser;

static void skip_ws(qparser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\r' || p->s[p->pos] == '\n'))
        p->pos++;
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

/* Is the word w next (and not the start of a longer name)? Consumes it. */
static int take_word(qparser *p, const char *w)
{
    skip_ws(p);
    size_t n = strlen(w);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n) != 0)
        return 0;
    if (p->pos + n < p->len && name_char(p->s[p->pos + n]))
        return 0;
    p->pos += n;
    return 1;
}

static int take_char(qparser *p, char c)
{
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == c) {
        p->pos++;
        return 1;
    }
    return 0;
}

static omma_status syntax(qparser *p, const char *what)
{
    return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL query: %s at offset %zu of '%.*s'", what, p->pos,
                     (int)(p->len > 200 ? 200 : p->len), p->s);
}

/* The text of info's field name, or 0 when <info> has no such child. */
static int field_text(const lsl_info *in, const char *name, char *out, size_t cap)
{
#define STR(field)                                                                                 \
    if (strcmp(name, #field) == 0) {                                                               \
        snprintf(out, cap, "%s", in->field);                                                       \
        return 1;                                                                                  \
    }
    STR(name)
    STR(type)
    STR(source_id)
    STR(uid)
    STR(session_id)
    STR(hostname)
    STR(v4address)
#undef STR
    if (strcmp(name, "channel_count") == 0)
        snprintf(out, cap, "%d", in->channel_count);
    else if (strcmp(name, "channel_format") == 0)
        snprintf(out, cap, "%s", lsl_format_name(in->format));
    else if (strcmp(name, "nominal_srate") == 0)
        snprintf(out, cap, "%.17g", in->nominal_srate);
    else if (strcmp(name, "version") == 0)
        snprintf(out, cap, "%d.%02d", in->version / 100, in->version % 100);
    else if (strcmp(name, "created_at") == 0)
        snprintf(out, cap, "%.17g", in->created_at);
    else if (strcmp(name, "v4data_port") == 0)
        snprintf(out, cap, "%d", in->v4data_port);
    else if (strcmp(name, "v4service_port") == 0)
        snprintf(out, cap, "%d", in->v4service_port);
    else if (strcmp(name, "v6address") == 0)
        snprintf(out, cap, "%s", "");
    else if (strcmp(name, "v6data_port") == 0 || strcmp(name, "v6service_port") == 0)
        snprintf(out, cap, "%s", "0");
    else if (strcmp(name, "desc") == 0)
        snprintf(out, cap, "%s", "");
    else
        return 0;
    return 1;
}

static double to_number(const value *v)
{
    switch (v->kind) {
    case V_BOOL:
        return v->b;
    case V_NUM:
        return v->num;
    default: {
        if (v->kind == V_NODE && !v->b)
            return NAN;
        const char *s = v->str;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        char *end;
        double x = strtod(s, &end);
        if (end == s)
            return NAN;
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        return *end ? NAN : x;
    }
    }
}

static int to_bool(const value *v)
{
    switch (v->kind) {
    case V_BOOL:
        return v->b;
    case V_NUM:
        return v->num != 0 && !isnan(v->num);
    case V_STR:
        return v->str[0] != '\0';
    default:
        return v->b;
    }
}

static const char *to_string(const value *v, char *tmp, size_t cap)
{
    switch (v->kind) {
    case V_BOOL:
        return v->b ? "true" : "false";
    case V_NUM:
        snprintf(tmp, cap, "%.17g", v->num);
        return tmp;
    default:
        return v->str;
    }
}

static omma_status parse_or(qparser *p, value *out);

static omma_status parse_operand(qparser *p, value *out)
{
    memset(out, 0, sizeof *out);
    skip_ws(p);
    if (p->pos >= p->len)
        return syntax(p, "expected a value");
    char c = p->s[p->pos];
    if (c == '\'' || c == '"') {
        size_t from = ++p->pos;
        while (p->pos < p->len && p->s[p->pos] != c)
            p->pos++;
        if (p->pos >= p->len)
            return syntax(p, "unterminated string");
        size_t n = p->pos - from;
        if (n >= sizeof out->str)
            return syntax(p, "string literal too long");
        out->kind = V_STR;
        memcpy(out->str, p->s + from, n);
        out->str[n] = '\0';
        p->pos++;
        return OMMA_OK;
    }
    if ((c >= '0' && c <= '9') || c == '.' || c == '-') {
        char tmp[64];
        size_t n = 0;
        while (p->pos < p->len && n + 1 < sizeof tmp &&
               ((p->s[p->pos] >= '0' && p->s[p->pos] <= '9') || p->s[p->pos] == '.' ||
                (n == 0 && p->s[p->pos] == '-')))
            tmp[n++] = p->s[p->pos++];
        tmp[n] = '\0';
        char *end;
        out->num = strtod(tmp, &end);
        if (end == tmp || *end)
            return syntax(p, "bad number");
        out->kind = V_NUM;
        return OMMA_OK;
    }
    if (c == '(') {
        p->pos++;
        OMMA_TRY(parse_or(p, out));
        if (!take_char(p, ')'))
            return syntax(p, "expected ')'");
        return OMMA_OK;
    }
    if (!name_char(c))
        return syntax(p, "unexpected character");
    size_t from = p->pos;
    while (p->pos < p->len && (name_char(p->s[p->pos]) || p->s[p->pos] == '/'))
        p->pos++;
    size_t n = p->pos - from;
    char name[64];
    if (n >= sizeof name)
        return syntax(p, "name too long");
    memcpy(name, p->s + from, n);
    name[n] = '\0';
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == '(') {
        p->pos++;
        int starts = strcmp(name, "starts-with") == 0, contains = strcmp(name, "contains") == 0,
            not = strcmp(name, "not") == 0, tru = strcmp(name, "true") == 0,
            fal = strcmp(name, "false") == 0;
        if (tru || fal) {
            if (!take_char(p, ')'))
                return syntax(p, "expected ')'");
            out->kind = V_BOOL;
            out->b = tru;
            return OMMA_OK;
        }
        if (!starts && !contains && !not )
            return syntax(p, "unsupported function");
        value a;
        OMMA_TRY(parse_or(p, &a));
        if (not ) {
            if (!take_char(p, ')'))
                return syntax(p, "expected ')'");
            out->kind = V_BOOL;
            out->b = !to_bool(&a);
            return OMMA_OK;
        }
        if (!take_char(p, ','))
            return syntax(p, "expected ','");
        value b;
        OMMA_TRY(parse_or(p, &b));
        if (!take_char(p, ')'))
            return syntax(p, "expected ')'");
        char ta[64], tb[64];
        const char *sa = to_string(&a, ta, sizeof ta), *sb = to_string(&b, tb, sizeof tb);
        out->kind = V_BOOL;
        out->b = starts ? strncmp(sa, sb, strlen(sb)) == 0 : strstr(sa, sb) != NULL;
        return OMMA_OK;
    }
    out->kind = V_NODE;
    out->b = strchr(name, '/') == NULL && field_text(p->info, name, out->str, sizeof out->str);
    if (!out->b)
        out->str[0] = '\0';
    return OMMA_OK;
}

static int compare(const value *a, const value *b, int negate)
{
    /* A missing node (empty node-set) compares false with everything. */
    if ((a->kind == V_NODE && !a->b) || (b->kind == V_NODE && !b->b))
        return 0;
    int eq;
    if (a->kind == V_BOOL || b->kind == V_BOOL) {
        eq = to_bool(a) == to_bool(b);
    } else if (a->kind == V_NUM || b->kind == V_NUM) {
        double x = to_number(a), y = to_number(b);
        if (isnan(x) || isnan(y))
            return negate; /* NaN != anything */
        eq = x == y;
    } else {
        eq = strcmp(a->str, b->str) == 0;
    }
    return negate ? !eq : eq;
}

static omma_status parse_comparison(qparser *p, value *out)
{
    if (++p->depth > MAX_DEPTH)
        return syntax(p, "nested too deeply");
    OMMA_TRY(parse_operand(p, out));
    skip_ws(p);
    int negate = 0;
    if (p->pos + 1 < p->len && p->s[p->pos] == '!' && p->s[p->pos + 1] == '=') {
        negate = 1;
        p->pos += 2;
    } else if (p->pos < p->len && p->s[p->pos] == '=') {
        p->pos++;
    } else {
        p->depth--;
        return OMMA_OK;
    }
    value rhs;
    OMMA_TRY(parse_operand(p, &rhs));
    int r = compare(out, &rhs, negate);
    out->kind = V_BOOL;
    out->b = r;
    p->depth--;
    return OMMA_OK;
}

static omma_status parse_and(qparser *p, value *out)
{
    OMMA_TRY(parse_comparison(p, out));
    while (take_word(p, "and")) {
        value rhs;
        OMMA_TRY(parse_comparison(p, &rhs));
        int r = to_bool(out) && to_bool(&rhs);
        out->kind = V_BOOL;
        out->b = r;
    }
    return OMMA_OK;
}

static omma_status parse_or(qparser *p, value *out)
{
    if (++p->depth > MAX_DEPTH)
        return syntax(p, "nested too deeply");
    OMMA_TRY(parse_and(p, out));
    while (take_word(p, "or")) {
        value rhs;
        OMMA_TRY(parse_and(p, &rhs));
        int r = to_bool(out) || to_bool(&rhs);
        out->kind = V_BOOL;
        out->b = r;
    }
    p->depth--;
    return OMMA_OK;
}

omma_status lsl_query_match(const char *query, size_t len, const lsl_info *info, int *match)
{
    *match = 0;
    if (len > LSL_QUERY_MAX_BYTES)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "LSL query: %zu bytes, more than %d", len,
                         LSL_QUERY_MAX_BYTES);
    qparser p = {query, len, 0, info, 0};
    skip_ws(&p);
    if (p.pos == len) {
        *match = 1;
        return OMMA_OK;
    }
    value v;
    OMMA_TRY(parse_or(&p, &v));
    skip_ws(&p);
    if (p.pos != len)
        return syntax(&p, "unexpected text after the expression");
    *match = to_bool(&v);
    return OMMA_OK;
}
