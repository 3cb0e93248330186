/* Private: the failure of every GPU entry point in a build without CUDA
 * (OMMA_CUDA=OFF or no toolkit), shared by the layers' *_none.c files. */
#ifndef OMMA_GPU_NONE_H
#define OMMA_GPU_NONE_H

#include "core/error.h"

#define GPU_NONE_TEXT "omma was built without CUDA (OMMA_CUDA=OFF)"

/* Returns OMMA_ERR_NO_DEVICE with "WHAT: omma was built without CUDA ...". */
#define GPU_NONE_FAIL(what) OMMA_FAIL(OMMA_ERR_NO_DEVICE, "%s: " GPU_NONE_TEXT, (what))

#endif
