/* omma — the whole public API in one include. */
#ifndef OMMA_OMMA_H
#define OMMA_OMMA_H

#include "omma/status.h"
#include "omma/log.h"
#include "omma/device.h"
#include "omma/engine.h"
#include "omma/face.h"
#include "omma/pipeline.h"
#include "omma/pose.h"
#include "omma/bus.h"
#include "omma/version.h"

#endif
