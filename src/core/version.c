/* The version and build facts (omma/version.h), from the configure step
 * (cmake/build_info.h.in). */
#include "omma/version.h"

#include "core/build_info.h"

_Static_assert(OMMA_VERSION_MAJOR == OMMA_BUILD_VERSION_MAJOR &&
                   OMMA_VERSION_MINOR == OMMA_BUILD_VERSION_MINOR &&
                   OMMA_VERSION_PATCH == OMMA_BUILD_VERSION_PATCH,
               "include/omma/version.h and CMakeLists.txt's project(VERSION) differ");

const char *omma_version(void) { return OMMA_BUILD_VERSION; }

const char *omma_build_commit(void) { return OMMA_BUILD_COMMIT; }

const char *omma_build_features(void) { return OMMA_BUILD_FEATURES; }
