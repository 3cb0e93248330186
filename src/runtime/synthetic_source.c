/* The synthetic camera: background and face patch are rendered to NV12
 * once; a frame is the background with the patch copied in at the path's
 * position for its time. Path: a Lissajous figure (x at 1x, y at 2x the
 * turn rate) over the room the patch leaves, phase by seed. */
#include "runtime/synthetic_source.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct rt_synthetic {
    rt_synthetic_options opt;
    int side; /* patch side, even */
    float crop_x, crop_y; /* the photo's square the patch shows ... */
    float crop_side; /* ... and its side in photo pixels */
    uint8_t *background; /* NV12 frame: Y then interleaved UV */
    uint8_t *patch; /* NV12 side x side */
    uint8_t *frame; /* the frame handed out */
    long last; /* index of the frame in `frame`, -1 none */
    int last_x, last_y; /* where its patch is */
};

void rt_synthetic_options_init(rt_synthetic_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->width = 1920;
    opt->height = 1080;
    opt->fps = 30.0;
    opt->face_box[0] = 181.0f, opt->face_box[1] = 84.0f;
    opt->face_box[2] = 270.0f, opt->face_box[3] = 176.0f;
    opt->patch_fraction = 0.8f;
    opt->period_s = 8.0;
}

/* BT.601 limited range, the inverse of the pipeline's YUV conversion. */
static void rgb_to_yuv(const float p[3], float *y, float *u, float *v)
{
    *y = 16.0f + 0.257f * p[0] + 0.504f * p[1] + 0.098f * p[2];
    *u = 128.0f - 0.148f * p[0] - 0.291f * p[1] + 0.439f * p[2];
    *v = 128.0f + 0.439f * p[0] - 0.368f * p[1] - 0.071f * p[2];
}

static uint8_t byte(float v)
{
    return (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v + 0.5f);
}

/* Bilinear RGB of the photo at continuous (x, y), edge clamped. */
static void photo_rgb(const io_image *im, float x, float y, float out[3])
{
    float fx = fminf(fmaxf(x - 0.5f, 0.0f), (float)(im->width - 1));
    float fy = fminf(fmaxf(y - 0.5f, 0.0f), (float)(im->height - 1));
    int x0 = (int)fx, y0 = (int)fy;
    int x1 = x0 + 1 < im->width ? x0 + 1 : x0, y1 = y0 + 1 < im->height ? y0 + 1 : y0;
    float wx = fx - (float)x0, wy = fy - (float)y0;
    for (int c = 0; c < 3; c++) {
#define AT(X, Y) (float)im->rgb[((size_t)(Y) * (size_t)im->width + (size_t)(X)) * 3 + (size_t)c]
        out[c] = (AT(x0, y0) * (1 - wx) + AT(x1, y0) * wx) * (1 - wy) +
                 (AT(x0, y1) * (1 - wx) + AT(x1, y1) * wx) * wy;
#undef AT
    }
}

/* The patch: the crop square scaled to side x side, NV12 (chroma from the
 * mean of each 2x2 block). */
static void render_patch(rt_synthetic *s, const io_image *photo)
{
    int n = s->side;
    uint8_t *y = s->patch, *uv = s->patch + (size_t)n * (size_t)n;
    float scale = s->crop_side / (float)n;
    for (int j = 0; j < n; j += 2)
        for (int i = 0; i < n; i += 2) {
            float su = 0, sv = 0;
            for (int k = 0; k < 4; k++) {
                int px = i + k % 2, py = j + k / 2;
                float rgb[3], Y, U, V;
                photo_rgb(photo, s->crop_x + ((float)px + 0.5f) * scale,
                          s->crop_y + ((float)py + 0.5f) * scale, rgb);
                rgb_to_yuv(rgb, &Y, &U, &V);
                y[(size_t)py * (size_t)n + (size_t)px] = byte(Y);
                su += U / 4.0f, sv += V / 4.0f;
            }
            uv[(size_t)(j / 2) * (size_t)n + (size_t)i] = byte(su);
            uv[(size_t)(j / 2) * (size_t)n + (size_t)i + 1] = byte(sv);
        }
}

/* A mid-grey background with a soft horizontal gradient. */
static void render_background(rt_synthetic *s)
{
    int w = s->opt.width, h = s->opt.height;
    for (int j = 0; j < h; j++)
        memset(s->background + (size_t)j * (size_t)w, 60 + 80 * j / h, (size_t)w);
    memset(s->background + (size_t)w * (size_t)h, 128, (size_t)w * (size_t)h / 2);
}

omma_status rt_synthetic_create(const io_image *photo, const rt_synthetic_options *opt,
                                rt_synthetic **out)
{
    if (out)
        *out = NULL;
    if (!photo || !photo->rgb || !opt || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synthetic source: NULL argument");
    const float *b = opt->face_box;
    if (opt->width < 64 || opt->height < 64 || opt->width > 8192 || opt->height > 8192 ||
        opt->width % 2 || opt->height % 2 || !(opt->fps > 0.0 && opt->fps <= 1000.0) ||
        !(opt->patch_fraction > 0.0f && opt->patch_fraction <= 1.0f) || !(opt->period_s > 0.0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "synthetic source: %dx%d (even, 64..8192), %g fps (0..1000], patch "
                         "fraction %g (0..1], period %g s (> 0)",
                         opt->width, opt->height, opt->fps, (double)opt->patch_fraction,
                         opt->period_s);
    if (!(b[0] >= 0.0f && b[1] >= 0.0f && b[2] > b[0] && b[3] > b[1] &&
          b[2] <= (float)photo->width && b[3] <= (float)photo->height))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "synthetic source: face box %g,%g..%g,%g is not inside the %dx%d photo",
                         (double)b[0], (double)b[1], (double)b[2], (double)b[3], photo->width,
                         photo->height);
    rt_synthetic *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synthetic source");
    s->opt = *opt;
    s->side = ((int)(opt->patch_fraction * (float)opt->height) / 2) * 2;
    if (s->side < 2)
        s->side = 2;
    /* The photo's square around the face: 1.6 times its long side (a face of
     * ~540 px in a 1080p frame: ~36 px at the short-range detector's input). */
    float cx = (b[0] + b[2]) * 0.5f, cy = (b[1] + b[3]) * 0.5f;
    s->crop_side = 1.6f * fmaxf(b[2] - b[0], b[3] - b[1]);
    s->crop_x = cx - s->crop_side * 0.5f;
    s->crop_y = cy - s->crop_side * 0.5f;
    size_t frame_bytes = (size_t)opt->width * (size_t)opt->height * 3 / 2;
    s->background = malloc(frame_bytes);
    s->frame = malloc(frame_bytes);
    s->patch = malloc((size_t)s->side * (size_t)s->side * 3 / 2);
    if (!s->background || !s->frame || !s->patch) {
        rt_synthetic_destroy(s);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synthetic source: %dx%d frames", opt->width,
                         opt->height);
    }
    render_background(s);
    render_patch(s, photo);
    memcpy(s->frame, s->background, frame_bytes);
    s->last = -1;
    *out = s;
    return OMMA_OK;
}

void rt_synthetic_destroy(rt_synthetic *s)
{
    if (!s)
        return;
    free(s->background);
    free(s->frame);
    free(s->patch);
    free(s);
}

/* Copies a side x side NV12 block between two NV12 images at (x, y) (even)
 * of a frame w wide: from the patch (to_frame) or from the background. */
static void blit(const rt_synthetic *s, const uint8_t *src, int src_pitch, uint8_t *dst, int x,
                 int y)
{
    int w = s->opt.width, h = s->opt.height, n = s->side;
    int src_rows = src_pitch == n ? n : h; /* the patch or a whole frame */
    const uint8_t *src_uv = src + (size_t)src_pitch * (size_t)src_rows;
    uint8_t *dst_uv = dst + (size_t)w * (size_t)h;
    int sx = src_pitch == n ? 0 : x, sy = src_pitch == n ? 0 : y;
    for (int j = 0; j < n; j++)
        memcpy(dst + (size_t)(y + j) * (size_t)w + (size_t)x,
               src + (size_t)(sy + j) * (size_t)src_pitch + (size_t)sx, (size_t)n);
    for (int j = 0; j < n / 2; j++)
        memcpy(dst_uv + (size_t)(y / 2 + j) * (size_t)w + (size_t)x,
               src_uv + (size_t)(sy / 2 + j) * (size_t)src_pitch + (size_t)sx, (size_t)n);
}

omma_status rt_synthetic_frame(rt_synthetic *s, long index, omma_frame *frame, double *timestamp_ms,
                               omma_box *truth)
{
    if (!s || !frame || !timestamp_ms || index < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synthetic source: NULL argument or index %ld",
                         index);
    int w = s->opt.width, h = s->opt.height, n = s->side;
    double t = (double)index / s->opt.fps;
    double phase = 6.283185307179586 * (t / s->opt.period_s + 0.137 * s->opt.seed);
    int room_x = w - n, room_y = h - n;
    int x = (int)(0.5 * room_x * (1.0 + sin(phase))) & ~1;
    int y = (int)(0.5 * room_y * (1.0 + sin(2.0 * phase + 0.5))) & ~1;
    if (s->last >= 0)
        blit(s, s->background, w, s->frame, s->last_x, s->last_y);
    blit(s, s->patch, n, s->frame, x, y);
    s->last = index, s->last_x = x, s->last_y = y;
    omma_frame f = {w,
                    h,
                    OMMA_PIXEL_NV12,
                    {s->frame, s->frame + (size_t)w * (size_t)h, NULL},
                    {w, w, 0},
                    OMMA_MEMORY_HOST};
    *frame = f;
    *timestamp_ms = t * 1000.0;
    if (truth) {
        float k = (float)n / s->crop_side;
        truth->xmin = (float)x + (s->opt.face_box[0] - s->crop_x) * k;
        truth->ymin = (float)y + (s->opt.face_box[1] - s->crop_y) * k;
        truth->xmax = (float)x + (s->opt.face_box[2] - s->crop_x) * k;
        truth->ymax = (float)y + (s->opt.face_box[3] - s->crop_y) * k;
    }
    return OMMA_OK;
}
