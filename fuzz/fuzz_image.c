/* libFuzzer target for the image decoders (src/io/image_*.c: libpng
 * and libjpeg-turbo behind omma's strict error handling), and the JPEG
 * marker walk that finds where MJPEG's missing Huffman tables go
 * (src/io/jpeg_tables.c: 0, or the offset of a scan marker in the input).
 *
 * Any input must give either an image whose size matches its pixels, or an
 * error (FORMAT / UNSUPPORTED / OUT_OF_MEMORY) with a message naming the
 * file and a zeroed image; anything else traps, and ASan/UBSan catch reads
 * out of bounds, leaks and undefined behaviour. Built and run by
 * fuzz/run.sh image (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/image_decode.h"
#include "io/jpeg_tables.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t scan = io_jpeg_missing_dht_at(data, size);
    if (scan && (scan + 1 >= size || data[scan] != 0xff || data[scan + 1] != 0xda))
        __builtin_trap();
    io_image img;
    omma_status st = io_image_decode("fuzz.img", data, size, &img);
    if (st == OMMA_OK) {
        if (!img.rgb || img.width <= 0 || img.height <= 0 ||
            (long long)img.width * img.height > IO_IMAGE_MAX_PIXELS)
            __builtin_trap();
        /* Touch the last byte: the buffer must hold every pixel. */
        volatile uint8_t last = img.rgb[(size_t)img.width * (size_t)img.height * 3 - 1];
        (void)last;
        io_image_free(&img);
        return 0;
    }
    if (img.rgb || img.width || img.height ||
        (st != OMMA_ERR_FORMAT && st != OMMA_ERR_UNSUPPORTED && st != OMMA_ERR_OUT_OF_MEMORY) ||
        strncmp(omma_last_error(), "fuzz.img: ", 10) != 0)
        __builtin_trap();
    return 0;
}
