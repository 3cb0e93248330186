/* Private: the Huffman tables Motion JPEG may leave out. MJPEG frames in
 * AVI ("AVI1") and from many USB webcams carry no DHT segment: decoders
 * are to use the standard tables of JPEG's Annex K.3, which libjpeg and
 * FFmpeg assume and nvJPEG does not (io/jpeg_gpu.c inserts them). The
 * tables come from libjpeg's own (jpeg_set_defaults: exactly Annex K's),
 * so a build without libjpeg has none. Any thread. */
#ifndef OMMA_IO_JPEG_TABLES_H
#define OMMA_IO_JPEG_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* Where a DHT segment must go into the JPEG p (n bytes): the offset of its
 * first scan (SOS) when no DHT comes before it; 0 when one does, or the
 * data does not start with SOI or its markers cannot be followed to a
 * scan (the decoder then says what is wrong). */
size_t io_jpeg_missing_dht_at(const uint8_t *p, size_t n);

/* The standard tables (luma and chroma, DC and AC) as one DHT segment,
 * its marker included, and its size in *bytes; NULL with *bytes 0 in a
 * build without libjpeg. Made once, then shared (read only). */
const uint8_t *io_jpeg_std_dht(size_t *bytes);

#endif
