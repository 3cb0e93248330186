/* omma bench runtime --ui-viewers: simulated viewers of the live view
 * (ui/ui_server.h), each a browser's traffic over real HTTP on loopback:
 * an event stream following a page of 24 cameras and one large view,
 * read as fast as it comes; the page's thumbnails fetched once a second
 * and the large view's preview five times a second (what ui.js does). */
#ifndef OMMA_CLI_BENCH_VIEWERS_H
#define OMMA_CLI_BENCH_VIEWERS_H

#include <stdint.h>

typedef struct bench_viewers bench_viewers;

typedef struct bench_viewers_stats {
    uint64_t images, image_bytes, image_errors; /* previews fetched (200), bytes, other answers */
    uint64_t event_bytes; /* event-stream bytes read */
} bench_viewers_stats;

/* Starts n viewers (1..64) of the live view on 127.0.0.1:port with
 * n_cameras cameras; viewer v watches cameras from v * 24 (modulo
 * n_cameras) and shows the first of them large. NULL when a thread could
 * not start (the message says why). */
bench_viewers *bench_viewers_start(int n, int port, int n_cameras);

/* Stops and joins them, with their totals. NULL is ignored. */
void bench_viewers_stop(bench_viewers *v, bench_viewers_stats *out);

#endif
