/* Private: H.264 and HEVC as MP4 and Matroska store them (each NAL unit
 * after its length, the parameter sets in the avcC / hvcC record) turned
 * into Annex B (each unit after a start code), which NVIDIA's parser reads
 * (video_nvdec.c). It does what FFmpeg's h264_mp4toannexb and
 * hevc_mp4toannexb filters did there, without their allocations and
 * packet moves per frame: the output buffer is kept from packet to packet
 * and only grows. Unlike those filters it does not repeat the parameter
 * sets before each key frame: the parser keeps them from the header sent
 * to it first (io_annexb.header). One converter per stream, used by one
 * thread at a time. */
#ifndef OMMA_IO_ANNEXB_H
#define OMMA_IO_ANNEXB_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

typedef struct io_annexb {
    int length_size; /* bytes before each unit: 1, 2 or 4 */
    uint8_t *header; /* the record's parameter sets (and SEI), Annex B */
    size_t header_size;
    uint8_t *buf; /* the last packet converted */
    size_t cap;
} io_annexb;

/* Reads an avcC record (hevc 0) or an hvcC record (hevc 1): the units'
 * length size and the parameter sets. Errors: OMMA_ERR_FORMAT (cut short,
 * not version 1, a length size of 3), OMMA_ERR_OUT_OF_MEMORY; *a is then
 * empty (io_annexb_free accepts it). */
omma_status io_annexb_init(io_annexb *a, int hevc, const uint8_t *record, size_t size);

/* Converts one packet: *out (valid until the next call or io_annexb_free)
 * holds its units, each after 00 00 00 01; zero-length units are left out.
 * Errors: OMMA_ERR_FORMAT (a unit's length runs past the packet: damage),
 * OMMA_ERR_OUT_OF_MEMORY; *out is then NULL and *out_size 0. */
omma_status io_annexb_convert(io_annexb *a, const uint8_t *data, size_t size, const uint8_t **out,
                              size_t *out_size);

/* Frees the buffers; the struct is left empty. Accepts NULL. */
void io_annexb_free(io_annexb *a);

#endif
