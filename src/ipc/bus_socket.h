/* Private: the frame bus's Unix-domain sockets.
 *
 * A bus NAME is the socket DIR/NAME.sock, DIR a private directory (mode
 * 0700, owned by the user): $OMMA_BUS_DIR, else $XDG_RUNTIME_DIR/omma-bus,
 * else /tmp/omma-bus-UID. Sockets are SOCK_SEQPACKET: one send is one
 * message, a peer's death is a hang-up. Every call here has a timeout or
 * does not block; SIGPIPE is never raised (MSG_NOSIGNAL). File descriptors
 * travel with SCM_RIGHTS; one received beyond the open-file limit is
 * reported (the kernel drops it and sets MSG_CTRUNC), never ignored. */
#ifndef OMMA_IPC_BUS_SOCKET_H
#define OMMA_IPC_BUS_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

#include "omma/status.h"

/* The bus directory into out (cap bytes), created 0700 when missing (dir:
 * an explicit one, or NULL for the default above). Errors: OMMA_ERR_IO (it
 * cannot be made, or is not a directory), OMMA_ERR_INVALID_ARG (it belongs
 * to another user or others may enter it: the message names the mode). */
omma_status bus_dir(const char *dir, char *out, size_t cap);

/* Checks a bus or camera name: 1..63 characters of [A-Za-z0-9._-], not
 * starting with '.'. Errors: OMMA_ERR_INVALID_ARG naming what is wrong. */
omma_status bus_name_check(const char *what, const char *name);

/* DIR/NAME.sock into out. Errors as bus_dir and bus_name_check. */
omma_status bus_socket_path(const char *dir, const char *name, char *out, size_t cap);

/* Listens on path. A socket file left by a dead publisher is replaced; a
 * live one is OMMA_ERR_BUSY ("bus NAME is already published"). */
omma_status bus_listen(const char *path, int *fd);

/* Connects to path, waiting up to timeout_ms. Errors: OMMA_ERR_CLOSED (no
 * publisher: nothing there, or refused), OMMA_ERR_TIMEOUT, OMMA_ERR_IO. */
omma_status bus_connect(const char *path, int timeout_ms, int *fd);

/* Accepts one pending connection (non-blocking; *fd = -1 when none) and
 * reads the peer's credentials. */
omma_status bus_accept(int listen_fd, int *fd, pid_t *pid, uid_t *uid, gid_t *gid);

/* Whether a peer with uid/gid may attach: the same user, or a member of
 * allow_gid (>= 0). */
int bus_peer_allowed(uid_t uid, gid_t gid, long allow_gid);

/* Sends one message (and send_fd when >= 0) without blocking. Errors:
 * OMMA_ERR_BUSY (the peer's queue is full: it is not reading),
 * OMMA_ERR_CLOSED (the peer hung up), OMMA_ERR_IO. */
omma_status bus_send(int fd, const void *msg, size_t n, int send_fd);

/* As bus_send, but waits up to timeout_ms for room (control messages). */
omma_status bus_send_wait(int fd, const void *msg, size_t n, int send_fd, int timeout_ms);

/* Receives one message into buf (cap bytes) waiting up to timeout_ms (0:
 * not at all, < 0: without limit); *n = 0 when none came in time. A received
 * fd goes to *recv_fd (-1 when none; the caller closes it); recv_fd NULL
 * refuses messages that carry one. Errors: OMMA_ERR_CLOSED (hang-up),
 * OMMA_ERR_FORMAT (a message longer than cap, or more fds than one),
 * OMMA_ERR_IO (an fd was dropped: the open-file limit is reached). */
omma_status bus_recv(int fd, void *buf, size_t cap, size_t *n, int *recv_fd, int timeout_ms);

/* As bus_recv, in one system call whether or not a message is waiting:
 * the wait is the socket's receive timeout, set by bus_set_recv_timeout
 * (<= 0: without limit), which also makes the socket's receives block
 * (bus_send and bus_recv never do); a signal ends it early (*n = 0 then
 * too). For a reader's hot path, which waits alike every time. */
omma_status bus_recv_blocking(int fd, void *buf, size_t cap, size_t *n, int *recv_fd);
omma_status bus_set_recv_timeout(int fd, int timeout_ms);

#endif
