#define _POSIX_C_SOURCE 200809L /* strndup, strdup */
/* The XML subset of LSL stream descriptions: a recursive-descent reader
 * that keeps elements and their text, and a text buffer to write it. */
#include "lsl/lsl_xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void lsl_buf_append(lsl_buf *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void lsl_buf_puts(lsl_buf *b, const char *s)
{
    lsl_buf_append(b, s, strlen(s));
}

void lsl_buf_printf(lsl_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        lsl_buf_append(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    lsl_buf_append(b, big, (size_t)n);
    free(big);
}

void lsl_buf_escape(lsl_buf *b, const char *text)
{
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&':
            lsl_buf_puts(b, "&amp;");
            break;
        case '<':
            lsl_buf_puts(b, "&lt;");
            break;
        case '>':
            lsl_buf_puts(b, "&gt;");
            break;
        case '"':
            lsl_buf_puts(b, "&quot;");
            break;
        case '\'':
            lsl_buf_puts(b, "&apos;");
            break;
        default:
            lsl_buf_append(b, p, 1);
        }
    }
}

void lsl_buf_element(lsl_buf *b, const char *indent, const char *name, const char *text)
{
    lsl_buf_puts(b, indent);
    if (!text || !*text) {
        lsl_buf_printf(b, "<%s />\n", name);
        return;
    }
    lsl_buf_printf(b, "<%s>", name);
    lsl_buf_escape(b, text);
    lsl_buf_printf(b, "</%s>\n", name);
}

void lsl_buf_free(lsl_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* --- reader --- */

typedef struct reader {
    const char *s;
    size_t len, pos;
} reader;

static int at(const reader *r, const char *lit)
{
    size_t n = strlen(lit);
    return r->len - r->pos >= n && memcmp(r->s + r->pos, lit, n) == 0;
}

static void skip_space(reader *r)
{
    while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' ||
                               r->s[r->pos] == '\r' || r->s[r->pos] == '\n'))
        r->pos++;
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || (unsigned char)c >= 0x80;
}

/* Skips "<?...?>", "<!--...-->" and "<!...>" at pos; 0 when none is there. */
static omma_status skip_markup(reader *r, int *skipped)
{
    *skipped = 0;
    const char *end_lit = NULL;
    if (at(r, "<?"))
        end_lit = "?>";
    else if (at(r, "<!--"))
        end_lit = "-->";
    else if (at(r, "<!"))
        end_lit = ">";
    if (!end_lit)
        return OMMA_OK;
    size_t start = r->pos;
    r->pos += 2;
    while (r->pos < r->len && !at(r, end_lit))
        r->pos++;
    if (r->pos >= r->len)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unterminated markup at byte %zu", start);
    r->pos += strlen(end_lit);
    *skipped = 1;
    return OMMA_OK;
}

/* Appends text [from, to) with entities decoded to out. */
static omma_status decode_text(const char *s, size_t from, size_t to, lsl_buf *out)
{
    for (size_t i = from; i < to; i++) {
        if (s[i] != '&') {
            lsl_buf_append(out, s + i, 1);
            continue;
        }
        size_t semi = i + 1;
        while (semi < to && semi - i < 12 && s[semi] != ';')
            semi++;
        if (semi >= to || s[semi] != ';')
            return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad entity at byte %zu", i);
        const char *e = s + i + 1;
        size_t n = semi - i - 1;
        char c = 0;
        if (n == 3 && !memcmp(e, "amp", 3))
            c = '&';
        else if (n == 2 && !memcmp(e, "lt", 2))
            c = '<';
        else if (n == 2 && !memcmp(e, "gt", 2))
            c = '>';
        else if (n == 4 && !memcmp(e, "quot", 4))
            c = '"';
        else if (n == 4 && !memcmp(e, "apos", 4))
            c = '\'';
        else if (n >= 2 && e[0] == '#') {
            unsigned long v = 0;
            int hex = e[1] == 'x';
            size_t k = hex ? 2 : 1;
            if (k >= n)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad character reference at byte %zu", i);
            for (; k < n; k++) {
                char d = e[k];
                int dv = d >= '0' && d <= '9'          ? d - '0'
                         : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                         : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10
                                                       : -1;
                if (dv < 0 || v > 0x10FFFF)
                    return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad character reference at byte %zu",
                                     i);
                v = v * (hex ? 16 : 10) + (unsigned long)dv;
            }
            if (v == 0 || v > 0x10FFFF)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad character reference at byte %zu", i);
            unsigned char u[4];
            size_t un;
            if (v < 0x80) {
                u[0] = (unsigned char)v;
                un = 1;
            } else if (v < 0x800) {
                u[0] = (unsigned char)(0xC0 | (v >> 6));
                u[1] = (unsigned char)(0x80 | (v & 0x3F));
                un = 2;
            } else if (v < 0x10000) {
                u[0] = (unsigned char)(0xE0 | (v >> 12));
                u[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
                u[2] = (unsigned char)(0x80 | (v & 0x3F));
                un = 3;
            } else {
                u[0] = (unsigned char)(0xF0 | (v >> 18));
                u[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3F));
                u[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
                u[3] = (unsigned char)(0x80 | (v & 0x3F));
                un = 4;
            }
            lsl_buf_append(out, u, un);
            i = semi;
            continue;
        } else {
            return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unknown entity '&%.*s;' at byte %zu", (int)n, e,
                             i);
        }
        lsl_buf_append(out, &c, 1);
        i = semi;
    }
    return OMMA_OK;
}

static omma_status parse_element(reader *r, int depth, lsl_xml_node **out);

static omma_status parse_content(reader *r, int depth, lsl_xml_node *node)
{
    lsl_buf text = {0};
    omma_status st = OMMA_OK;
    node->inner_begin = r->pos;
    for (;;) {
        if (r->pos >= r->len) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: element <%s> is not closed", node->name);
            goto done;
        }
        if (r->s[r->pos] != '<') {
            size_t from = r->pos;
            while (r->pos < r->len && r->s[r->pos] != '<')
                r->pos++;
            if ((st = decode_text(r->s, from, r->pos, &text)) != OMMA_OK)
                goto done;
            continue;
        }
        if (at(r, "<![CDATA[")) {
            size_t from = r->pos + 9;
            r->pos = from;
            while (r->pos < r->len && !at(r, "]]>"))
                r->pos++;
            if (r->pos >= r->len) {
                st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unterminated CDATA at byte %zu", from);
                goto done;
            }
            lsl_buf_append(&text, r->s + from, r->pos - from);
            r->pos += 3;
            continue;
        }
        int skipped;
        if ((st = skip_markup(r, &skipped)) != OMMA_OK)
            goto done;
        if (skipped)
            continue;
        if (at(r, "</")) {
            node->inner_end = r->pos;
            r->pos += 2;
            size_t n = strlen(node->name);
            if (r->len - r->pos < n || memcmp(r->s + r->pos, node->name, n) != 0 ||
                (r->pos + n < r->len && name_char(r->s[r->pos + n]))) {
                st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: <%s> closed by another tag at byte %zu",
                               node->name, r->pos);
                goto done;
            }
            r->pos += n;
            skip_space(r);
            if (r->pos >= r->len || r->s[r->pos] != '>') {
                st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad closing tag of <%s>", node->name);
                goto done;
            }
            r->pos++;
            goto done;
        }
        lsl_xml_node *child = NULL;
        if ((st = parse_element(r, depth + 1, &child)) != OMMA_OK)
            goto done;
        if (node->last_child)
            node->last_child->next = child;
        else
            node->child = child;
        node->last_child = child;
    }
done:
    if (st == OMMA_OK && text.failed)
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "XML: out of memory");
    if (st == OMMA_OK) {
        node->text = text.data ? text.data : strdup("");
        if (!node->text)
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "XML: out of memory");
    } else {
        lsl_buf_free(&text);
    }
    return st;
}

static omma_status parse_element(reader *r, int depth, lsl_xml_node **out)
{
    *out = NULL;
    if (depth > LSL_XML_MAX_DEPTH)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: nested deeper than %d elements", LSL_XML_MAX_DEPTH);
    size_t start = r->pos;
    if (r->pos >= r->len || r->s[r->pos] != '<')
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: expected an element at byte %zu", start);
    r->pos++;
    size_t name_from = r->pos;
    while (r->pos < r->len && name_char(r->s[r->pos]))
        r->pos++;
    if (r->pos == name_from)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: element without a name at byte %zu", start);
    lsl_xml_node *node = calloc(1, sizeof *node);
    if (!node || !(node->name = strndup(r->s + name_from, r->pos - name_from))) {
        free(node);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "XML: out of memory");
    }
    omma_status st = OMMA_OK;
    /* Attributes: name="value" or name='value', read past. */
    for (;;) {
        skip_space(r);
        if (r->pos >= r->len) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unterminated tag <%s>", node->name);
            goto fail;
        }
        char c = r->s[r->pos];
        if (c == '>' || c == '/')
            break;
        size_t an = r->pos;
        while (r->pos < r->len && name_char(r->s[r->pos]))
            r->pos++;
        skip_space(r);
        if (r->pos == an || r->pos >= r->len || r->s[r->pos] != '=') {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad attribute in <%s> at byte %zu", node->name,
                           r->pos);
            goto fail;
        }
        r->pos++;
        skip_space(r);
        if (r->pos >= r->len || (r->s[r->pos] != '"' && r->s[r->pos] != '\'')) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unquoted attribute in <%s>", node->name);
            goto fail;
        }
        char q = r->s[r->pos++];
        while (r->pos < r->len && r->s[r->pos] != q)
            r->pos++;
        if (r->pos >= r->len) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: unterminated attribute in <%s>", node->name);
            goto fail;
        }
        r->pos++;
    }
    if (r->s[r->pos] == '/') {
        r->pos++;
        if (r->pos >= r->len || r->s[r->pos] != '>') {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "XML: bad empty tag <%s>", node->name);
            goto fail;
        }
        r->pos++;
        node->inner_begin = node->inner_end = r->pos;
        if (!(node->text = strdup(""))) {
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "XML: out of memory");
            goto fail;
        }
        *out = node;
        return OMMA_OK;
    }
    r->pos++; /* '>' */
    if ((st = parse_content(r, depth, node)) != OMMA_OK)
        goto fail;
    *out = node;
    return OMMA_OK;
fail:
    lsl_xml_free(node);
    return st;
}

omma_status lsl_xml_parse(const char *buf, size_t len, lsl_xml_node **root)
{
    *root = NULL;
    if (!buf)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "XML: no input");
    if (len > LSL_XML_MAX_BYTES)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: %zu bytes, more than %d", len, LSL_XML_MAX_BYTES);
    if (memchr(buf, '\0', len))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: NUL byte in the document");
    reader r = {buf, len, 0};
    if (at(&r, "\xEF\xBB\xBF"))
        r.pos += 3;
    for (;;) {
        skip_space(&r);
        int skipped;
        OMMA_TRY(skip_markup(&r, &skipped));
        if (!skipped)
            break;
    }
    lsl_xml_node *node = NULL;
    OMMA_TRY(parse_element(&r, 1, &node));
    for (;;) {
        skip_space(&r);
        int skipped;
        omma_status st = skip_markup(&r, &skipped);
        if (st != OMMA_OK) {
            lsl_xml_free(node);
            return st;
        }
        if (!skipped)
            break;
    }
    if (r.pos != r.len) {
        lsl_xml_free(node);
        return OMMA_FAIL(OMMA_ERR_FORMAT, "XML: data after the document element at byte %zu",
                         r.pos);
    }
    *root = node;
    return OMMA_OK;
}

void lsl_xml_free(lsl_xml_node *n)
{
    while (n) {
        lsl_xml_node *next = n->next;
        lsl_xml_free(n->child);
        free(n->name);
        free(n->text);
        free(n);
        n = next;
    }
}

const lsl_xml_node *lsl_xml_child(const lsl_xml_node *n, const char *name)
{
    for (const lsl_xml_node *c = n ? n->child : NULL; c; c = c->next)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

const char *lsl_xml_child_text(const lsl_xml_node *n, const char *name)
{
    const lsl_xml_node *c = lsl_xml_child(n, name);
    return c ? c->text : "";
}
