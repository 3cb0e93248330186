/* omma — the library's version and what it was built with.
 * Thread safety: all functions here may be called from any thread; the
 * strings are static and never freed. */
#ifndef OMMA_VERSION_H
#define OMMA_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define OMMA_VERSION_MAJOR 0
#define OMMA_VERSION_MINOR 1
#define OMMA_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH" ("0.1.0"). */
const char *omma_version(void);

/* The git commit omma was configured from (short hash), or "unknown" when
 * it was built outside a git checkout. */
const char *omma_build_commit(void);

/* The optional parts built in, space-separated, in this order: "cuda"
 * (the GPU backend; without it the GPU calls fail with OMMA_ERR_NO_DEVICE),
 * "ffmpeg" (video files), "libjpeg", "libpng", "libmicrohttpd" (the metrics
 * endpoint), "libv4l2" (V4L2 cameras), and for test builds
 * "fault-injection" and "sanitizers". */
const char *omma_build_features(void);

#ifdef __cplusplus
}
#endif

#endif
