/* Private: a strict reader of FlexBuffers, the schema-less format TFLite
 * stores a custom operator's options in (custom_options, format
 * FLEXBUFFERS). Only what MediaPipe's operators need: a root map, scalar
 * integers and floats (inline or indirect), typed and untyped vectors of
 * integers. Every offset, width, length and key is checked against the
 * bytes before use; a violation is OMMA_ERR_FORMAT naming `what` and the
 * byte offset. Multi-byte values are read byte by byte (little-endian).
 * Tested by tests/model/test_flexbuffer.c, fuzzed through fuzz_tflite. */
#ifndef OMMA_MODEL_FLEXBUFFER_H
#define OMMA_MODEL_FLEXBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

/* A value: where it is stored, the width of the slot holding it, and its
 * packed type (FlexBuffers' type << 2 | log2 of its own width). */
typedef struct fx_ref {
    const uint8_t *b;
    size_t size;
    const char *what; /* for messages: "model.tflite: op 192 custom options" */
    size_t pos; /* the slot */
    int slot_width; /* 1, 2, 4 or 8 bytes */
    int type; /* FlexBuffers' type */
    int width; /* 1, 2, 4 or 8: the width of what an offset points to */
} fx_ref;

/* The root value of size bytes at b. */
omma_status fx_root(const uint8_t *b, size_t size, const char *what, fx_ref *out);

/* The value of `key` in map m; *found false (and OMMA_OK) when absent.
 * OMMA_ERR_FORMAT when m is not a map or is malformed. */
omma_status fx_map_get(const fx_ref *m, const char *key, fx_ref *out, bool *found);

/* An integer (signed, unsigned, inline or indirect, or a bool); a float
 * that is an exact integer is accepted too. OMMA_ERR_FORMAT otherwise or
 * when it does not fit in an int32. */
omma_status fx_int(const fx_ref *r, const char *key, int32_t *v);

/* A float (inline or indirect, 32 or 64 bits) or an integer. */
omma_status fx_float(const fx_ref *r, const char *key, double *v);

/* A vector (typed int/uint, or untyped of integer elements): its length,
 * and element k. */
omma_status fx_vector_len(const fx_ref *r, const char *key, size_t *len);
omma_status fx_vector_int(const fx_ref *r, const char *key, size_t k, int32_t *v);

#endif
