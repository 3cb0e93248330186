#define _POSIX_C_SOURCE 200809L /* poll */
/* V4L2 cameras as a source, through libv4l2 (libv4lconvert turns the
 * camera's MJPEG, YUYV... into the I420 asked for): mmap streaming, each
 * frame handed out in its buffer and queued again at the next read. With
 * decode gpu or auto and a device, a camera that sends MJPEG natively (the
 * common USB-webcam mode at 1080p30) is asked for MJPEG instead, and each
 * JPEG is decoded on the GPU with nvJPEG (io/jpeg_gpu.h): its buffer is
 * queued again as soon as the JPEG is staged, the frame handed out as NV12
 * in device memory on the decoder's stream, so only the compressed bytes
 * cross PCIe; a JPEG nvJPEG refuses (damaged) is counted and skipped.
 * Without nvJPEG, gpu is an error and auto goes on with libv4lconvert. The
 * wait for a frame is a poll() loop of 100 ms slices (poll, not select: a
 * process with many cameras may have descriptors above FD_SETSIZE) so an
 * interrupt is seen promptly. */
#include "core/error.h"
#include "runtime/source_private.h"

#ifdef OMMA_HAVE_LIBV4L2

#include <errno.h>
#include <fcntl.h>
#include <libv4l2.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "io/image_file.h"
#ifdef OMMA_HAVE_NVJPEG
#include "io/jpeg_gpu.h"
#endif

#define CAM_BUFFERS 4
#define WAIT_SLICE_MS 100

typedef struct cam_buffer {
    void *start;
    size_t length;
} cam_buffer;

typedef struct v4l2_src {
    int fd;
    int wrapped; /* fd was given to libv4l2 (v4l2_fd_open) */
    cam_buffer *bufs;
    unsigned nbufs; /* mapped */
    int streaming;
    int held; /* the buffer handed out, -1 when none */
    /* I420 in a buffer: Y, then U, then V. */
    int y_pitch, c_pitch;
    size_t u_offset, v_offset, frame_bytes;
#ifdef OMMA_HAVE_NVJPEG
    io_jpeg_gpu *jg; /* MJPEG decoded on the GPU; NULL: I420 from libv4lconvert */
    long refused; /* JPEGs nvJPEG refused (damaged) */
#endif
} v4l2_src;

/* v4l2_ioctl passes calls on a descriptor libv4l2 has not taken straight
 * to ioctl. */
static int xioctl(int fd, unsigned long request, void *arg)
{
    int r;
    do {
        r = v4l2_ioctl(fd, request, arg);
    } while (r == -1 && errno == EINTR);
    return r;
}

static const char *fourcc(uint32_t f, char buf[5])
{
    for (int i = 0; i < 4; i++) {
        char c = (char)((f >> (8 * i)) & 0xff);
        buf[i] = c >= 32 && c < 127 ? c : '?';
    }
    buf[4] = '\0';
    return buf;
}

/* Asks the camera for pixfmt (named `what` in errors) at the requested
 * size, or its current one; *fmt is the driver's answer and *want_w,
 * *want_h the size asked for. */
static omma_status ask_format(rt_source *s, v4l2_src *c, uint32_t pixfmt, const char *what,
                              struct v4l2_format *fmt, uint32_t *want_w, uint32_t *want_h)
{
    const char *dev = s->spec;
    memset(fmt, 0, sizeof *fmt);
    fmt->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(c->fd, VIDIOC_G_FMT, fmt) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: VIDIOC_G_FMT: %s", dev, strerror(errno));
    if (s->opt.width) {
        fmt->fmt.pix.width = (uint32_t)s->opt.width;
        fmt->fmt.pix.height = (uint32_t)s->opt.height;
    }
    *want_w = fmt->fmt.pix.width;
    *want_h = fmt->fmt.pix.height;
    fmt->fmt.pix.pixelformat = pixfmt;
    fmt->fmt.pix.field = V4L2_FIELD_ANY;
    fmt->fmt.pix.bytesperline = 0;
    fmt->fmt.pix.sizeimage = 0;
    if (xioctl(c->fd, VIDIOC_S_FMT, fmt) != 0) {
        int err = errno;
        return OMMA_FAIL(err == EBUSY ? OMMA_ERR_IO : OMMA_ERR_UNSUPPORTED,
                         "%s: the camera refuses %s at %ux%u (VIDIOC_S_FMT: %s)", dev, what,
                         *want_w, *want_h, strerror(err));
    }
    return OMMA_OK;
}

/* The size the camera gives (w x h): the one asked for, if one was, and
 * one omma takes. */
static omma_status check_size(const rt_source *s, uint32_t w, uint32_t h, uint32_t want_w,
                              uint32_t want_h)
{
    if (s->opt.width && (w != want_w || h != want_h))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: the camera gives %ux%u, not the %ux%u asked for", s->spec, w, h,
                         want_w, want_h);
    if (w == 0 || h == 0 || w > IO_IMAGE_MAX_SIDE || h > IO_IMAGE_MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: the camera's frames are %ux%u", s->spec, w,
                         h);
    return OMMA_OK;
}

/* A failed call while streaming: an unplugged camera, or another error. */
static omma_status stream_error(rt_source *s, const char *call, int err)
{
    if (err == ENODEV || err == ENXIO || err == EIO)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: frame %ld: the camera is disconnected (%s: %s)", s->spec,
                         s->index, call, strerror(err));
    return OMMA_FAIL(OMMA_ERR_IO, "%s: frame %ld: %s: %s", s->spec, s->index, call, strerror(err));
}

static omma_status queue(rt_source *s, v4l2_src *c, unsigned index)
{
    struct v4l2_buffer buf;
    memset(&buf, 0, sizeof buf);
    buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    buf.memory = V4L2_MEMORY_MMAP;
    buf.index = index;
    if (xioctl(c->fd, VIDIOC_QBUF, &buf) != 0)
        return stream_error(s, "VIDIOC_QBUF", errno);
    return OMMA_OK;
}

/* When the driver stamped the buffer with CLOCK_MONOTONIC (core_now_ns's
 * clock), that time; else now. */
static uint64_t capture_time(const struct v4l2_buffer *buf)
{
    uint64_t now = core_now_ns();
    if ((buf->flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) != V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        return now;
    uint64_t t =
        (uint64_t)buf->timestamp.tv_sec * 1000000000u + (uint64_t)buf->timestamp.tv_usec * 1000u;
    return t > 0 && t <= now ? t : now;
}

#ifdef OMMA_HAVE_NVJPEG
/* The JPEG in buffer buf decoded on the GPU into *frame: 1; 0 when nvJPEG
 * refused it (counted: the next frame); -1 on a failure (*st). The buffer
 * is queued again either way. */
static int decode_jpeg(rt_source *s, v4l2_src *c, const struct v4l2_buffer *buf, size_t used,
                       omma_frame *frame, omma_status *st)
{
    *st = io_jpeg_gpu_give_back(c->jg); /* the last frame: reused once the stream passed */
    if (*st == OMMA_OK)
        *st = io_jpeg_gpu_decode(c->jg, c->bufs[buf->index].start, used, frame);
    omma_status q = queue(s, c, buf->index); /* the JPEG is staged: the camera may refill it */
    if (*st == OMMA_OK && (frame->width != s->info.width || frame->height != s->info.height))
        *st = OMMA_FAIL(OMMA_ERR_FORMAT, "a %dx%d JPEG from a %dx%d camera", frame->width,
                        frame->height, s->info.width, s->info.height);
    if (*st == OMMA_ERR_FORMAT || *st == OMMA_ERR_INVALID_ARG) {
        memset(frame, 0, sizeof *frame);
        src_set_damage(s, 0, ++c->refused);
        *st = q;
        return q == OMMA_OK ? 0 : -1;
    }
    if (*st != OMMA_OK) {
        *st = OMMA_FAIL(*st, "%s: frame %ld: decoding its JPEG on the GPU: %s", s->spec, s->index,
                        omma_last_error());
        return -1;
    }
    *st = q;
    return q == OMMA_OK ? 1 : -1;
}
#endif

static omma_status cam_read(rt_source *s, omma_frame *frame, double *ts_ms, uint64_t *capture_ns,
                            int *eof)
{
    (void)ts_ms;
    (void)eof;
    v4l2_src *c = s->impl;
    if (c->held >= 0) {
        unsigned held = (unsigned)c->held;
        c->held = -1;
        OMMA_TRY(queue(s, c, held));
    }
    for (;;) {
        if (src_interrupted(s))
            return OMMA_FAIL(OMMA_ERR_CLOSED, "%s: frame %ld: the source was interrupted", s->spec,
                             s->index);
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int r = poll(&p, 1, WAIT_SLICE_MS);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return stream_error(s, "poll", errno);
        if (r == 0)
            continue;
        if (p.revents & POLLNVAL)
            return stream_error(s, "poll", EBADF);
        struct v4l2_buffer buf;
        memset(&buf, 0, sizeof buf);
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buf.memory = V4L2_MEMORY_MMAP;
        if (xioctl(c->fd, VIDIOC_DQBUF, &buf) != 0) {
            int err = errno;
            if (err == EAGAIN && !(p.revents & (POLLERR | POLLHUP)))
                continue;
            /* An error state with nothing to dequeue would spin: report it. */
            return stream_error(s, "VIDIOC_DQBUF", err == EAGAIN ? EIO : err);
        }
        if (buf.index >= c->nbufs)
            return OMMA_FAIL(OMMA_ERR_IO, "%s: frame %ld: the driver gave buffer %u of %u", s->spec,
                             s->index, buf.index, c->nbufs);
        if (buf.flags & V4L2_BUF_FLAG_ERROR) { /* a damaged capture: the next one */
            OMMA_TRY(queue(s, c, buf.index));
            continue;
        }
        size_t used = buf.bytesused ? buf.bytesused : buf.length;
#ifdef OMMA_HAVE_NVJPEG
        if (c->jg) {
            omma_status st = OMMA_OK;
            int got = decode_jpeg(
                s, c, &buf, used < c->bufs[buf.index].length ? used : c->bufs[buf.index].length,
                frame, &st);
            if (got < 0)
                return st;
            if (got == 0)
                continue;
            *capture_ns = capture_time(&buf);
            return OMMA_OK;
        }
#endif
        if (used < c->frame_bytes) {
            omma_status st = OMMA_FAIL(
                OMMA_ERR_FORMAT, "%s: frame %ld: %zu bytes; an I420 frame of %dx%d needs %zu",
                s->spec, s->index, used, s->info.width, s->info.height, c->frame_bytes);
            queue(s, c, buf.index);
            return st;
        }
        c->held = (int)buf.index;
        const uint8_t *base = c->bufs[buf.index].start;
        memset(frame, 0, sizeof *frame);
        frame->width = s->info.width;
        frame->height = s->info.height;
        frame->format = OMMA_PIXEL_I420;
        frame->memory = OMMA_MEMORY_HOST;
        frame->planes[0] = base;
        frame->planes[1] = base + c->u_offset;
        frame->planes[2] = base + c->v_offset;
        frame->pitch[0] = c->y_pitch;
        frame->pitch[1] = c->c_pitch;
        frame->pitch[2] = c->c_pitch;
        *capture_ns = capture_time(&buf);
        return OMMA_OK;
    }
}

static void cam_close(rt_source *s)
{
    v4l2_src *c = s->impl;
    if (!c)
        return;
    if (c->streaming) {
        enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(c->fd, VIDIOC_STREAMOFF, &type);
    }
    for (unsigned i = 0; i < c->nbufs; i++)
        v4l2_munmap(c->bufs[i].start, c->bufs[i].length);
    free(c->bufs);
#ifdef OMMA_HAVE_NVJPEG
    io_jpeg_gpu_close(c->jg); /* waits for the stream: the last frame's reads are done */
#endif
    if (c->wrapped)
        v4l2_close(c->fd);
    else if (c->fd >= 0)
        close(c->fd);
    free(c);
    s->impl = NULL;
}

static const src_ops cam_ops = {cam_read, cam_close, NULL, NULL};

#ifdef OMMA_HAVE_NVJPEG
static void *cam_stream(const rt_source *s)
{
    const v4l2_src *c = s->impl;
    return c ? io_jpeg_gpu_stream(c->jg) : NULL;
}

static const src_ops cam_jpeg_ops = {cam_read, cam_close, cam_stream, NULL};

/* 1 when the camera offers MJPEG itself (not one libv4l2 emulates). */
static int offers_mjpeg(v4l2_src *c)
{
    for (unsigned i = 0; i < 64; i++) {
        struct v4l2_fmtdesc d;
        memset(&d, 0, sizeof d);
        d.index = i;
        d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        if (xioctl(c->fd, VIDIOC_ENUM_FMT, &d) != 0)
            return 0;
        if ((d.pixelformat == V4L2_PIX_FMT_MJPEG || d.pixelformat == V4L2_PIX_FMT_JPEG) &&
            !(d.flags & V4L2_FMT_FLAG_EMULATED))
            return 1;
    }
    return 0;
}

/* Asks for MJPEG at the requested size (or the current one) when the
 * options want GPU decoding and the camera offers it, and opens the
 * decoder: OMMA_OK with c->jg set, or OMMA_OK with c->jg NULL to go on
 * with I420 (the camera has no MJPEG, or auto without nvJPEG: the source's
 * decoder text says why), or an error (gpu without nvJPEG, a refused
 * format). */
static omma_status set_mjpeg(rt_source *s, v4l2_src *c)
{
    const char *dev = s->spec;
    if (s->opt.decode == IO_DECODE_CPU || !s->opt.device || !offers_mjpeg(c))
        return OMMA_OK;
    omma_status st = io_jpeg_gpu_open(s->opt.device, &c->jg);
    if (st != OMMA_OK) {
        if (s->opt.decode == IO_DECODE_GPU)
            return OMMA_FAIL(st, "%s: cannot decode the camera's MJPEG on the GPU: %s", dev,
                             omma_last_error());
        snprintf(s->info.decoder, sizeof s->info.decoder,
                 "cpu (libv4lconvert mjpeg; not on the GPU: %s)", omma_last_error());
        return OMMA_OK;
    }
    struct v4l2_format fmt;
    uint32_t want_w = 0, want_h = 0;
    OMMA_TRY(ask_format(s, c, V4L2_PIX_FMT_MJPEG, "MJPEG", &fmt, &want_w, &want_h));
    char name[5];
    uint32_t w = fmt.fmt.pix.width, h = fmt.fmt.pix.height;
    if (fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_MJPEG &&
        fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_JPEG)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: asked for MJPEG, the camera gives %s", dev,
                         fourcc(fmt.fmt.pix.pixelformat, name));
    OMMA_TRY(check_size(s, w, h, want_w, want_h));
    s->info.width = (int)w;
    s->info.height = (int)h;
    s->info.format = OMMA_PIXEL_NV12;
    s->info.memory = OMMA_MEMORY_DEVICE;
    snprintf(s->info.decoder, sizeof s->info.decoder, "gpu (nvjpeg %s mjpeg)",
             io_jpeg_gpu_backend(c->jg));
    c->frame_bytes = 0; /* a JPEG's size varies */
    s->ops = &cam_jpeg_ops;

    struct v4l2_streamparm parm;
    memset(&parm, 0, sizeof parm);
    parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    const struct v4l2_fract *tpf = &parm.parm.capture.timeperframe;
    if (xioctl(c->fd, VIDIOC_G_PARM, &parm) == 0 &&
        (parm.parm.capture.capability & V4L2_CAP_TIMEPERFRAME) && tpf->numerator > 0 &&
        tpf->denominator > 0)
        s->info.fps = (double)tpf->denominator / tpf->numerator;
    return OMMA_OK;
}
#endif

/* Opens the device and checks it is a V4L2 camera that streams. */
static omma_status open_device(rt_source *s, v4l2_src *c)
{
    const char *dev = s->spec;
    struct stat sb;
    if (stat(dev, &sb) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: no such camera: %s", dev, strerror(errno));
    if (!S_ISCHR(sb.st_mode))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not a V4L2 capture device (%s, not a character device)", dev,
                         S_ISREG(sb.st_mode)   ? "a regular file"
                         : S_ISDIR(sb.st_mode) ? "a directory"
                                               : "a special file");
    /* Checked with plain calls before libv4l2 takes the descriptor: libv4l2
     * prints its own complaints about devices that are not V4L2. */
    c->fd = open(dev, O_RDWR | O_NONBLOCK);
    if (c->fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open the camera: %s", dev, strerror(errno));
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    if (xioctl(c->fd, VIDIOC_QUERYCAP, &cap) != 0) {
        int err = errno;
        if (err == ENOTTY || err == EINVAL)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "%s: not a V4L2 capture device (VIDIOC_QUERYCAP: %s)", dev,
                             strerror(err));
        return OMMA_FAIL(OMMA_ERR_IO, "%s: VIDIOC_QUERYCAP: %s", dev, strerror(err));
    }
    uint32_t caps = cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not a V4L2 capture device (%.32s, driver %.16s: capabilities 0x%x)",
                         dev, (const char *)cap.card, (const char *)cap.driver, caps);
    if (!(caps & V4L2_CAP_STREAMING))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: %.32s (driver %.16s) cannot stream (no V4L2_CAP_STREAMING)", dev,
                         (const char *)cap.card, (const char *)cap.driver);
    if (v4l2_fd_open(c->fd, 0) < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: libv4l2 cannot take the camera: %s", dev,
                         strerror(errno));
    c->wrapped = 1;
    return OMMA_OK;
}

/* Asks for I420 at the requested size (or the current one) and lays out
 * the planes the driver's answer describes. */
static omma_status set_format(rt_source *s, v4l2_src *c)
{
    const char *dev = s->spec;
    struct v4l2_format fmt;
    uint32_t want_w = 0, want_h = 0;
    OMMA_TRY(ask_format(s, c, V4L2_PIX_FMT_YUV420, "I420", &fmt, &want_w, &want_h));
    char name[5];
    if (fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_YUV420)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: the camera gives %s, not I420, and libv4lconvert does not convert "
                         "it",
                         dev, fourcc(fmt.fmt.pix.pixelformat, name));
    uint32_t w = fmt.fmt.pix.width, h = fmt.fmt.pix.height;
    OMMA_TRY(check_size(s, w, h, want_w, want_h));
    uint32_t pitch = fmt.fmt.pix.bytesperline >= w ? fmt.fmt.pix.bytesperline : w;
    if (pitch > 4 * (uint32_t)IO_IMAGE_MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: rows of %u bytes for %u pixels", dev, pitch, w);
    s->info.width = (int)w;
    s->info.height = (int)h;
    c->y_pitch = (int)pitch;
    c->c_pitch = (int)((pitch + 1) / 2);
    size_t ch = (h + 1) / 2;
    c->u_offset = (size_t)pitch * h;
    c->v_offset = c->u_offset + (size_t)c->c_pitch * ch;
    c->frame_bytes = c->v_offset + (size_t)c->c_pitch * ch;

    struct v4l2_streamparm parm;
    memset(&parm, 0, sizeof parm);
    parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    const struct v4l2_fract *tpf = &parm.parm.capture.timeperframe;
    if (xioctl(c->fd, VIDIOC_G_PARM, &parm) == 0 &&
        (parm.parm.capture.capability & V4L2_CAP_TIMEPERFRAME) && tpf->numerator > 0 &&
        tpf->denominator > 0)
        s->info.fps = (double)tpf->denominator / tpf->numerator;
    return OMMA_OK;
}

/* Maps and queues the buffers and starts streaming. */
static omma_status start_streaming(rt_source *s, v4l2_src *c)
{
    const char *dev = s->spec;
    struct v4l2_requestbuffers req;
    memset(&req, 0, sizeof req);
    req.count = CAM_BUFFERS;
    req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    req.memory = V4L2_MEMORY_MMAP;
    if (xioctl(c->fd, VIDIOC_REQBUFS, &req) != 0) {
        int err = errno;
        if (err == EBUSY)
            return OMMA_FAIL(OMMA_ERR_IO,
                             "%s: the camera is busy (in use by another program?): "
                             "VIDIOC_REQBUFS: %s",
                             dev, strerror(err));
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: no mmap streaming (VIDIOC_REQBUFS: %s)", dev,
                         strerror(err));
    }
    if (req.count < 2)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: the camera gives %u capture buffers (2 needed)",
                         dev, req.count);
    c->bufs = calloc(req.count, sizeof *c->bufs);
    if (!c->bufs)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %u buffers", dev, req.count);
    for (unsigned i = 0; i < req.count; i++) {
        struct v4l2_buffer buf;
        memset(&buf, 0, sizeof buf);
        buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        buf.memory = V4L2_MEMORY_MMAP;
        buf.index = i;
        if (xioctl(c->fd, VIDIOC_QUERYBUF, &buf) != 0)
            return OMMA_FAIL(OMMA_ERR_IO, "%s: VIDIOC_QUERYBUF %u: %s", dev, i, strerror(errno));
        void *p = v4l2_mmap(NULL, buf.length, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd,
                            (int64_t)buf.m.offset);
        if (p == MAP_FAILED)
            return OMMA_FAIL(OMMA_ERR_IO, "%s: mapping buffer %u (%u bytes): %s", dev, i,
                             buf.length, strerror(errno));
        c->bufs[i].start = p;
        c->bufs[i].length = buf.length;
        c->nbufs = i + 1;
        if (buf.length < c->frame_bytes)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "%s: buffer %u has %u bytes; an I420 frame of %dx%d needs %zu", dev, i,
                             buf.length, s->info.width, s->info.height, c->frame_bytes);
        if (xioctl(c->fd, VIDIOC_QBUF, &buf) != 0)
            return OMMA_FAIL(OMMA_ERR_IO, "%s: VIDIOC_QBUF %u: %s", dev, i, strerror(errno));
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(c->fd, VIDIOC_STREAMON, &type) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: VIDIOC_STREAMON: %s", dev, strerror(errno));
    c->streaming = 1;
    return OMMA_OK;
}

omma_status src_v4l2_open(rt_source *s)
{
    s->ops = &cam_ops;
    v4l2_src *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: camera", s->spec);
    c->fd = -1;
    c->held = -1;
    s->impl = c;
    s->info.format = OMMA_PIXEL_I420;
    OMMA_TRY(open_device(s, c));
#ifdef OMMA_HAVE_NVJPEG
    OMMA_TRY(set_mjpeg(s, c));
    if (!c->jg)
#endif
        OMMA_TRY(set_format(s, c));
    return start_streaming(s, c);
}

#else /* no libv4l2 */

omma_status src_v4l2_open(rt_source *s)
{
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s: omma was built without libv4l2 (libv4l-dev): V4L2 cameras are not "
                     "supported",
                     s->spec);
}

#endif
