#define _DEFAULT_SOURCE /* sockets, nanosleep */
/* Simulated live-view viewers (bench_viewers.h): two threads each, one
 * reading the event stream, one fetching previews. Blocking sockets with
 * one-second timeouts so that stop is seen within a second. */
#include "cli/bench_viewers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#define PAGE 24
#define MAX_VIEWERS 16

typedef struct viewer {
    struct bench_viewers *all;
    int index;
    pthread_t events, images;
    int events_started, images_started;
    uint64_t images_ok, image_bytes, image_errors, event_bytes;
} viewer;

struct bench_viewers {
    int n, port, n_cameras;
    atomic_int stop;
    viewer v[MAX_VIEWERS];
};

static int open_conn(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 1};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_request(int fd, const char *path, int keep)
{
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", path,
                     keep ? "" : "Connection: close\r\n");
    return send(fd, req, (size_t)n, MSG_NOSIGNAL) == n;
}

/* The page's cameras as "a,b,c". */
static void page_list(const viewer *v, char *out, size_t cap, int *first)
{
    int n = v->all->n_cameras, start = (v->index * PAGE) % n, len = 0;
    *first = start;
    out[0] = 0;
    for (int k = 0; k < PAGE && k < n; k++)
        len += snprintf(out + len, cap - (size_t)len, "%s%d", k ? "," : "", (start + k) % n);
}

static void *events_main(void *arg)
{
    viewer *v = arg;
    char list[512], path[700], buf[65536];
    int first;
    page_list(v, list, sizeof list, &first);
    snprintf(path, sizeof path, "/api/events?cams=%s&large=%d", list, first);
    while (!atomic_load(&v->all->stop)) {
        int fd = open_conn(v->all->port);
        if (fd < 0 || !send_request(fd, path, 1)) {
            if (fd >= 0)
                close(fd);
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
            continue;
        }
        while (!atomic_load(&v->all->stop)) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r == 0)
                break;
            if (r > 0)
                v->event_bytes += (uint64_t)r;
        }
        close(fd);
    }
    return NULL;
}

/* One preview: 1 when it came back 200. */
static int fetch(viewer *v, int cam, const char *size)
{
    char path[128], buf[65536];
    snprintf(path, sizeof path, "/api/preview/%d.jpg?size=%s", cam, size);
    int fd = open_conn(v->all->port);
    if (fd < 0)
        return 0;
    int ok = 0;
    uint64_t bytes = 0;
    if (send_request(fd, path, 0)) {
        ssize_t r;
        while ((r = recv(fd, buf, sizeof buf, 0)) > 0) {
            if (bytes == 0)
                ok = r > 12 && strncmp(buf + 9, "200", 3) == 0;
            bytes += (uint64_t)r;
        }
    }
    close(fd);
    if (ok)
        v->images_ok++, v->image_bytes += bytes;
    else
        v->image_errors++;
    return ok;
}

static void *images_main(void *arg)
{
    viewer *v = arg;
    char list[512];
    int first;
    page_list(v, list, sizeof list, &first);
    int n = v->all->n_cameras < PAGE ? v->all->n_cameras : PAGE;
    uint64_t next_thumbs = 0;
    while (!atomic_load(&v->all->stop)) {
        uint64_t now = core_now_ns();
        fetch(v, first, "large");
        if (now >= next_thumbs) {
            for (int k = 1; k < n && !atomic_load(&v->all->stop); k++)
                fetch(v, (first + k) % v->all->n_cameras, "thumb");
            next_thumbs = now + 1000000000ull;
        }
        uint64_t spent = core_now_ns() - now;
        if (spent < 200000000ull) {
            struct timespec ts = {0, (long)(200000000ull - spent)};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

bench_viewers *bench_viewers_start(int n, int port, int n_cameras)
{
    if (n < 1 || n > MAX_VIEWERS || n_cameras < 1) {
        fprintf(stderr, "omma: error: --ui-viewers: 1..%d viewers\n", MAX_VIEWERS);
        return NULL;
    }
    bench_viewers *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->n = n, b->port = port, b->n_cameras = n_cameras;
    for (int i = 0; i < n; i++) {
        viewer *v = &b->v[i];
        v->all = b;
        v->index = i;
        v->events_started = pthread_create(&v->events, NULL, events_main, v) == 0;
        v->images_started = pthread_create(&v->images, NULL, images_main, v) == 0;
        if (!v->events_started || !v->images_started) {
            fprintf(stderr, "omma: error: --ui-viewers: could not start viewer %d's threads\n", i);
            bench_viewers_stop(b, NULL);
            return NULL;
        }
    }
    return b;
}

void bench_viewers_stop(bench_viewers *b, bench_viewers_stats *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!b)
        return;
    atomic_store(&b->stop, 1);
    for (int i = 0; i < b->n; i++) {
        viewer *v = &b->v[i];
        if (v->events_started)
            pthread_join(v->events, NULL);
        if (v->images_started)
            pthread_join(v->images, NULL);
        if (out) {
            out->images += v->images_ok;
            out->image_bytes += v->image_bytes;
            out->image_errors += v->image_errors;
            out->event_bytes += v->event_bytes;
        }
    }
    free(b);
}
