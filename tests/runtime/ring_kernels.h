/* Kernels for the frame ring's GPU test (ring_kernels.cu), launched
 * through the runtime API on omma's streams. */
#ifndef OMMA_TEST_RING_KERNELS_H
#define OMMA_TEST_RING_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The test pattern of frame k: byte i of the packed frame is
 * ring_pattern(k, i); bytes 0..7 also hold k (little-endian uint64). */
#ifdef __CUDACC__
__host__ __device__
#endif
    static inline uint8_t
    ring_pattern(uint64_t k, size_t i)
{
    return (uint8_t)((k * 131u + i * 7u + (i >> 8) * 3u) & 0xFFu);
}

/* What the consumer saw in one frame: the k read from its first 8 bytes and
 * how many bytes after them differ from ring_pattern(k, i). */
typedef struct ring_seen {
    unsigned long long k;
    unsigned int mismatches;
    unsigned int pad_;
} ring_seen;

/* Reads the packed frame of `bytes` bytes at `frame` (bytes >= 8) and
 * writes *out (out->mismatches must be zero before: the kernel adds). */
cudaError_t ring_check_frame(const uint8_t *frame, size_t bytes, ring_seen *out,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
