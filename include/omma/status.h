/* omma — status codes and the thread-local error detail.
 *
 * Every fallible omma function returns an omma_status (0 = OMMA_OK). When it
 * fails, a human-readable detail (what failed, the CUDA call with its error
 * name and string, file:line) is stored in a thread-local buffer readable with
 * omma_last_error() until the next failure on the same thread.
 * Thread safety: all functions here may be called from any thread. */
#ifndef OMMA_STATUS_H
#define OMMA_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum omma_status {
    OMMA_OK = 0,
    OMMA_ERR_INVALID_ARG,   /* a caller passed a bad argument */
    OMMA_ERR_NO_DEVICE,     /* no driver, no GPU, or no GPU with that ordinal */
    OMMA_ERR_CUDA,          /* a CUDA/cuBLAS/cuDNN call failed (detail names it) */
    OMMA_ERR_OUT_OF_MEMORY, /* host or device allocation failed */
    OMMA_ERR_IO,            /* a file or socket could not be read or written */
    OMMA_ERR_FORMAT,        /* input data is malformed (model, image, config...) */
    OMMA_ERR_UNSUPPORTED,   /* valid input that omma does not handle */
    OMMA_ERR_BUSY,          /* an object owned by one user is in use elsewhere */
    OMMA_ERR_TIMEOUT,       /* a wait ran past its deadline */
    OMMA_ERR_CLOSED,        /* the object or peer was closed */
    OMMA_ERR_DEVICE_LOST,   /* sticky error: the device context is unusable */
    OMMA_ERR_INTERNAL,      /* a bug in omma */
    OMMA_STATUS_COUNT
} omma_status;

/* Short constant name of a status ("OMMA_ERR_CUDA"); "OMMA_ERR_UNKNOWN" for
 * values out of range. Never NULL. */
const char *omma_status_str(omma_status st);

/* Detail of the last failure on the calling thread; "" when none yet.
 * The pointer stays valid until the next omma call on this thread. */
const char *omma_last_error(void);

/* Forget the calling thread's last error detail. */
void omma_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
