/* Private: VIS_HD marks the vision stages' small functions that the CPU
 * reference and the CUDA kernels share (one source for both backends):
 * static inline in C, also __host__ __device__ under nvcc. Code marked so
 * stays plain C that also compiles as CUDA C++: no allocation, no casts
 * from void *, no designated initializers. */
#ifndef OMMA_VISION_HD_H
#define OMMA_VISION_HD_H

#ifdef __CUDACC__
#define VIS_HD static inline __host__ __device__
#else
#define VIS_HD static inline
#endif

#endif
