/* The pose pipeline's CUDA copies in a build without CUDA (OMMA_CUDA=OFF):
 * never reached, since the CUDA engines fail to load first. */
#include "gpu/none.h"
#include "pipeline/pose_pipeline_copy.h"

omma_status pp_copy_in(omma_device *dev, omma_exec *x, float *dev_dst, const float *src,
                       size_t bytes)
{
    (void)dev, (void)x, (void)dev_dst, (void)src, (void)bytes;
    return GPU_NONE_FAIL("the GPU pose pipeline");
}

omma_status pp_copy_out(omma_device *dev, omma_exec *x, float *dst, const float *dev_src,
                        size_t bytes)
{
    (void)dev, (void)x, (void)dst, (void)dev_src, (void)bytes;
    return GPU_NONE_FAIL("the GPU pose pipeline");
}
