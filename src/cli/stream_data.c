#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_cond_timedwait */
/* omma stream --data: per-frame CSV files (stream_data.h). */
#include "cli/stream_data.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_layout.h"

#define PENDING_MAX (16u << 20)
#define FLUSH_NS 500000000ull
#define ROW_MAX (LSL_LANDMARKS_CHANNELS * 16 + 256)

typedef struct data_camera {
    char path[4200];
    int fd;
    pthread_mutex_t lock; /* pending, counts */
    char *pending;
    size_t len, cap;
    unsigned long long rows, dropped, written;
    int failed; /* a write failed: said once, the file is abandoned */
    float sample[LSL_LANDMARKS_CHANNELS];
    char row[ROW_MAX];
} data_camera;

struct cli_data_sink {
    int n;
    int people; /* the files are the participants' (a camera column) */
    data_camera *cams;
    pthread_t writer;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop, started;
};

/* Appends to the camera's pending rows; 0 when the buffer is full. */
static int pend(data_camera *c, const char *p, size_t n)
{
    if (c->len + n > c->cap) {
        if (c->len + n > PENDING_MAX)
            return 0;
        size_t cap = c->cap ? c->cap : 65536;
        while (cap < c->len + n)
            cap *= 2;
        char *q = realloc(c->pending, cap);
        if (!q)
            return 0;
        c->pending = q;
        c->cap = cap;
    }
    memcpy(c->pending + c->len, p, n);
    c->len += n;
    return 1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* Writes every camera's pending rows (writer thread, or at stop). */
static void flush_all(cli_data_sink *d)
{
    for (int i = 0; i < d->n; i++) {
        data_camera *c = &d->cams[i];
        pthread_mutex_lock(&c->lock);
        char *buf = c->pending;
        size_t len = c->len;
        c->pending = NULL;
        c->len = c->cap = 0;
        pthread_mutex_unlock(&c->lock);
        if (len && !c->failed) {
            if (write_all(c->fd, buf, len)) {
                c->written += len;
            } else {
                cli_error("--data: writing %s: %s; its later rows are dropped", c->path,
                          strerror(errno));
                c->failed = 1;
            }
        }
        free(buf);
    }
}

static void *writer_main(void *arg)
{
    cli_data_sink *d = arg;
    pthread_mutex_lock(&d->lock);
    while (!d->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)FLUSH_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&d->wake, &d->lock, &until);
        pthread_mutex_unlock(&d->lock);
        flush_all(d);
        pthread_mutex_lock(&d->lock);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static void header(data_camera *c, int people)
{
    size_t n = (size_t)snprintf(c->row, sizeof c->row, "frame,capture_time,unix_time,%sface_id",
                                people ? "camera," : "");
    for (int ch = 0; ch < LSL_LANDMARKS_CHANNELS; ch++) {
        char label[48];
        lsl_layout_landmarks_label(ch, label, sizeof label);
        n += (size_t)snprintf(c->row + n, sizeof c->row - n, ",%s", label);
    }
    n += (size_t)snprintf(c->row + n, sizeof c->row - n, "\n");
    pend(c, c->row, n);
}

int cli_data_start(const cli_stream_opts *o, cli_data_sink **out)
{
    *out = NULL;
    const char *dir = o->data_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return cli_fail(OMMA_ERR_IO, "--data %s: cannot make it: %s", dir, strerror(errno));
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return cli_fail(OMMA_ERR_IO, "--data %s: not a folder", dir);
    int people = o->n_participants > 0, n = people ? o->n_participants : o->rt.n_cameras;
    cli_data_sink *d = calloc(1, sizeof *d);
    data_camera *cams = calloc((size_t)n, sizeof *cams);
    if (!d || !cams) {
        free(d);
        free(cams);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--data: out of memory");
    }
    d->cams = cams;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    d->people = people;
    for (int i = 0; i < n; i++) {
        data_camera *c = &cams[i];
        const char *name = people ? o->participants[i].name : o->names[i];
        pthread_mutex_init(&c->lock, NULL);
        d->n = i + 1;
        snprintf(c->path, sizeof c->path, "%s/%s.csv", dir, name);
        c->fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (c->fd < 0) {
            int e = errno;
            cli_data_stop(d);
            if (e == EEXIST)
                return cli_fail(OMMA_ERR_IO,
                                "--data: %s/%s.csv exists (omma never overwrites data: move it "
                                "or choose another folder)",
                                dir, name);
            return cli_fail(OMMA_ERR_IO, "--data: creating %s/%s.csv: %s", dir, name, strerror(e));
        }
        header(c, people);
    }
    if (pthread_create(&d->writer, NULL, writer_main, d) != 0) {
        cli_data_stop(d);
        return cli_fail(OMMA_ERR_INTERNAL, "--data: cannot start the writer thread");
    }
    d->started = 1;
    *out = d;
    return -1;
}

static size_t put_value(char *p, size_t cap, float v)
{
    if (!isfinite(v)) {
        p[0] = ',';
        return 1;
    }
    return (size_t)snprintf(p, cap, ",%.7g", v);
}

/* One row of file `slot` with `face` (NULL: none) of the frame r. */
static void row(cli_data_sink *d, int slot, const rt_result *r, const omma_face *face)
{
    data_camera *c = &d->cams[slot];
    /* Unix time of the capture: now on the wall clock less its age. */
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    uint64_t now = core_now_ns();
    double unix_time = (double)wall.tv_sec + (double)wall.tv_nsec * 1e-9 -
                       (now > r->capture_ns ? (double)(now - r->capture_ns) * 1e-9 : 0.0);
    pthread_mutex_lock(&c->lock);
    lsl_layout_landmarks_sample(face, r->width, r->height, c->sample);
    size_t n =
        (size_t)snprintf(c->row, sizeof c->row, "%llu,%.6f,%.6f,", (unsigned long long)(r->seq - 1),
                         lsl_clock_from_ns(r->capture_ns), unix_time);
    if (d->people)
        n += (size_t)snprintf(c->row + n, sizeof c->row - n, "%d,", r->camera);
    if (face)
        n += (size_t)snprintf(c->row + n, sizeof c->row - n, "%d", face->id);
    for (int ch = 0; ch < LSL_LANDMARKS_CHANNELS && n + 32 < sizeof c->row; ch++)
        n += put_value(c->row + n, sizeof c->row - n, c->sample[ch]);
    c->row[n++] = '\n';
    if (!c->failed && pend(c, c->row, n))
        c->rows++;
    else
        c->dropped++;
    pthread_mutex_unlock(&c->lock);
}

void cli_data_result(cli_data_sink *d, const rt_result *r)
{
    if (!d || d->people || r->camera < 0 || r->camera >= d->n)
        return;
    const omma_face *face = NULL; /* the camera's oldest track, as on LSL */
    for (int i = 0; i < r->n_faces; i++)
        if (!face || r->faces[i].id < face->id)
            face = &r->faces[i];
    row(d, r->camera, r, face);
}

void cli_data_participant(cli_data_sink *d, int p, const rt_result *r, const omma_face *face)
{
    if (d && d->people && p >= 0 && p < d->n)
        row(d, p, r, face);
}

int cli_data_stop(cli_data_sink *d)
{
    if (!d)
        return 0;
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->stop = 1;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->writer, NULL);
    }
    flush_all(d);
    int bad = 0;
    for (int i = 0; i < d->n; i++) {
        data_camera *c = &d->cams[i];
        if (c->fd >= 0) {
            if (close(c->fd) != 0 && !c->failed) {
                cli_error("--data: closing %s: %s", c->path, strerror(errno));
                c->failed = 1;
            }
            if (d->started)
                fprintf(stderr, "omma stream: %s: %llu rows%s%llu dropped\n", c->path, c->rows,
                        c->failed ? " (write failed), " : ", ", c->dropped);
        }
        bad |= c->failed || c->dropped;
        free(c->pending);
        pthread_mutex_destroy(&c->lock);
    }
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->lock);
    free(d->cams);
    free(d);
    return bad;
}
