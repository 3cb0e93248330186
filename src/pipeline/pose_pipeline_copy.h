/* Private: the pose pipeline's host <-> device copies for the CUDA backend
 * (pose_pipeline_gpu.c; pose_pipeline_none.c fails them in a build without
 * CUDA), on the exec's own stream, counted by the device. */
#ifndef OMMA_PIPELINE_POSE_PIPELINE_COPY_H
#define OMMA_PIPELINE_POSE_PIPELINE_COPY_H

#include <stddef.h>

#include "omma/device.h"
#include "omma/engine.h"

omma_status pp_copy_in(omma_device *dev, omma_exec *x, float *dev_dst, const float *src,
                       size_t bytes);
omma_status pp_copy_out(omma_device *dev, omma_exec *x, float *dst, const float *dev_src,
                        size_t bytes);

#endif
