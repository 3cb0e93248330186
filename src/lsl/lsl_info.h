/* Private: an LSL stream's description (the <info> document that outlets
 * send in discovery replies, "shortinfo", and on request with its <desc>,
 * "fullinfo"), written and read as liblsl does. */
#ifndef OMMA_LSL_INFO_H
#define OMMA_LSL_INFO_H

#include <stddef.h>

#include "lsl/lsl_xml.h"
#include "omma/status.h"

/* LSL's channel formats, numbered as on the wire and in liblsl. */
typedef enum lsl_format {
    LSL_FORMAT_UNDEFINED = 0,
    LSL_FORMAT_FLOAT32 = 1,
    LSL_FORMAT_DOUBLE64 = 2,
    LSL_FORMAT_STRING = 3, /* not carried by omma's data server or inlet */
    LSL_FORMAT_INT32 = 4,
    LSL_FORMAT_INT16 = 5,
    LSL_FORMAT_INT8 = 6,
    LSL_FORMAT_INT64 = 7,
} lsl_format;

#define LSL_PROTOCOL_VERSION 110
#define LSL_MAX_CHANNELS 65536

typedef struct lsl_info {
    char name[256];
    char type[128];
    char source_id[256];
    char uid[64];
    char session_id[128];
    char hostname[256];
    char v4address[64]; /* filled by a resolver from the reply's sender */
    int channel_count;
    lsl_format format;
    double nominal_srate; /* 0: irregular */
    int version; /* protocol version x 100 (110) */
    double created_at; /* LSL clock */
    int v4data_port, v4service_port;
    char *desc; /* inner XML of <desc>, owned; NULL when empty */
} lsl_info;

/* Bytes of one value of a numeric format; 0 for strings or unknown ones. */
size_t lsl_format_size(lsl_format f);
/* "float32", ...; "undefined" for unknown values. */
const char *lsl_format_name(lsl_format f);

/* Writes the <info> document: with its <desc> when full, else <desc />. */
void lsl_info_write(const lsl_info *info, int full, lsl_buf *out);

/* Reads an <info> document (shortinfo or fullinfo) into *info, whose desc
 * the caller frees with lsl_info_clear. Fails with OMMA_ERR_FORMAT naming
 * the field when the document is not a valid stream description. */
omma_status lsl_info_parse(const char *buf, size_t len, lsl_info *info);

/* Deep copy (desc duplicated). */
omma_status lsl_info_copy(lsl_info *dst, const lsl_info *src);
void lsl_info_clear(lsl_info *info);

/* The labels of desc's <channels><channel><label> elements, in order, as
 * one buffer of NUL-separated strings (*labels, caller frees) and their
 * count; 0 labels when desc has none. */
omma_status lsl_info_channel_labels(const lsl_info *info, char **labels, int *n);

/* Appends one <channel> of desc's <channels> list (the XDF/LSL metadata
 * convention: label, unit, type), escaped. */
void lsl_desc_channel(lsl_buf *desc, const char *label, const char *unit, const char *type);

/* Sets uid to a random version-4 UUID (from /dev/urandom). */
omma_status lsl_info_new_uid(lsl_info *info);

#endif
