/* omma — the whole public API in one include. */
#ifndef OMMA_OMMA_H
#define OMMA_OMMA_H

#include "omma/status.h"
#include "omma/log.h"
#include "omma/engine.h"

#if defined(__has_include)
#if __has_include("omma/device.h")
#include "omma/device.h"
#endif
#endif

#endif
