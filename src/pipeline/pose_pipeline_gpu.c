/* The pose pipeline's copies for the CUDA backend (pose_pipeline_copy.h). */
#include "pipeline/pose_pipeline_copy.h"

#include <stdint.h>

#include "gpu/memory.h"

omma_status pp_copy_in(omma_device *dev, omma_exec *x, float *dev_dst, const float *src,
                       size_t bytes)
{
    return gpu_copy_h2d_async(dev, (CUdeviceptr)(uintptr_t)dev_dst, src, bytes,
                              (CUstream)omma_exec_stream(x));
}

omma_status pp_copy_out(omma_device *dev, omma_exec *x, float *dst, const float *dev_src,
                        size_t bytes)
{
    return gpu_copy_d2h_async(dev, dst, (CUdeviceptr)(uintptr_t)dev_src, bytes,
                              (CUstream)omma_exec_stream(x));
}
