/* Private: the small XML subset LSL's stream descriptions use (elements,
 * text, the five predefined entities and numeric character references;
 * declarations, comments and attributes are read past), and a growing
 * text buffer to write it. The parser reads untrusted network input: it
 * bounds depth and size and fails with OMMA_ERR_FORMAT saying where. */
#ifndef OMMA_LSL_XML_H
#define OMMA_LSL_XML_H

#include <stddef.h>

#include "omma/status.h"

#define LSL_XML_MAX_DEPTH 32
#define LSL_XML_MAX_BYTES (1 << 20)

typedef struct lsl_xml_node {
    char *name;
    char *text; /* the element's own text, entities decoded, "" when none */
    size_t inner_begin, inner_end; /* byte range of its content in the input */
    struct lsl_xml_node *child, *last_child, *next;
} lsl_xml_node;

/* Parses one document; *root is its top element (caller frees it with
 * lsl_xml_free). */
omma_status lsl_xml_parse(const char *buf, size_t len, lsl_xml_node **root);
void lsl_xml_free(lsl_xml_node *n);

/* The first child named name, or NULL. */
const lsl_xml_node *lsl_xml_child(const lsl_xml_node *n, const char *name);
/* Text of the first child named name, "" when there is none. */
const char *lsl_xml_child_text(const lsl_xml_node *n, const char *name);

/* A text buffer that grows; after a failed allocation it stays failed and
 * further appends do nothing (checked once at the end). */
typedef struct lsl_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    int failed;
} lsl_buf;

void lsl_buf_append(lsl_buf *b, const void *p, size_t n);
void lsl_buf_puts(lsl_buf *b, const char *s);
void lsl_buf_printf(lsl_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends text with &, <, >, " and ' escaped. */
void lsl_buf_escape(lsl_buf *b, const char *text);
/* Appends <name>escaped text</name>. */
void lsl_buf_element(lsl_buf *b, const char *indent, const char *name, const char *text);
void lsl_buf_free(lsl_buf *b);

#endif
