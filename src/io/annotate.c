/* Annotated pictures: the frame converted to RGB through the vision
 * layer's texel reader (so every pixel format looks as the pipeline saw
 * it), then landmarks, box, keypoints and id drawn over it. Every shape is
 * clipped rectangle by rectangle in integer pixels; a coordinate that is
 * NaN is skipped and a huge one clamped, so no result can write outside
 * the picture. */
#include "io/annotate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "vision/frame.h"

typedef struct canvas {
    uint8_t *rgb;
    int w, h, pitch;
} canvas;

typedef struct colour {
    uint8_t r, g, b;
} colour;

/* Bright colours that stay apart from each other and from skin tones. */
static const colour palette[] = {
    {0, 255, 0},   {255, 64, 255},  {0, 200, 255}, {255, 200, 0},
    {255, 64, 64}, {128, 128, 255}, {0, 255, 170}, {255, 128, 0},
};
static const colour white = {255, 255, 255};
static const colour black = {0, 0, 0};

static colour colour_of(int id)
{
    return palette[(unsigned)id % (sizeof palette / sizeof palette[0])];
}

/* Frame-pixel coordinate -> integer pixel index; 0 for NaN (skip the
 * shape). Values far outside any picture are clamped so later integer
 * arithmetic cannot overflow. */
static int to_px(float v, int *out)
{
    if (isnan(v))
        return 0;
    float c = v < -1e7f ? -1e7f : v > 1e7f ? 1e7f : v;
    *out = (int)floorf(c);
    return 1;
}

/* Fills [x0, x1) x [y0, y1), clipped. */
static void fill(const canvas *c, int x0, int y0, int x1, int y1, colour col)
{
    if (x0 < 0)
        x0 = 0;
    if (y0 < 0)
        y0 = 0;
    if (x1 > c->w)
        x1 = c->w;
    if (y1 > c->h)
        y1 = c->h;
    if (x0 >= x1 || y0 >= y1)
        return;
    for (int y = y0; y < y1; y++) {
        uint8_t *p = c->rgb + (size_t)y * (size_t)c->pitch + (size_t)x0 * 3;
        for (int x = x0; x < x1; x++, p += 3)
            p[0] = col.r, p[1] = col.g, p[2] = col.b;
    }
}

/* 3x5 digit glyphs, one row of 3 bits (MSB left) per entry. */
static const uint8_t digits[10][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
    {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
};
#define GLYPH_SCALE 2
#define GLYPH_W (3 * GLYPH_SCALE)
#define GLYPH_H (5 * GLYPH_SCALE)
#define GLYPH_GAP GLYPH_SCALE
#define LABEL_PAD 2

/* The id as digits on a black label whose top-left corner is (x, y). */
static void draw_label(const canvas *c, int x, int y, int id, colour col)
{
    char text[16];
    int n = snprintf(text, sizeof text, "%d", id);
    int w = n * (GLYPH_W + GLYPH_GAP) - GLYPH_GAP + 2 * LABEL_PAD;
    fill(c, x, y, x + w, y + GLYPH_H + 2 * LABEL_PAD, black);
    for (int i = 0; i < n; i++) {
        if (text[i] < '0' || text[i] > '9')
            continue; /* the minus of a negative id: left blank */
        const uint8_t *g = digits[text[i] - '0'];
        int gx = x + LABEL_PAD + i * (GLYPH_W + GLYPH_GAP), gy = y + LABEL_PAD;
        for (int row = 0; row < 5; row++)
            for (int bit = 0; bit < 3; bit++)
                if (g[row] & (4 >> bit))
                    fill(c, gx + bit * GLYPH_SCALE, gy + row * GLYPH_SCALE,
                         gx + (bit + 1) * GLYPH_SCALE, gy + (row + 1) * GLYPH_SCALE, col);
    }
}

/* A square of side `side` centred on the continuous point (x, y). */
static void draw_dot(const canvas *c, float x, float y, int side, colour col)
{
    int ix, iy;
    if (!to_px(x - 0.5f * (float)(side - 1), &ix) || !to_px(y - 0.5f * (float)(side - 1), &iy))
        return;
    fill(c, ix, iy, ix + side, iy + side, col);
}

static void draw_face(const canvas *c, const omma_face *f)
{
    colour col = colour_of(f->id);
    for (int k = 0; k < OMMA_FACE_LANDMARKS; k++)
        draw_dot(c, f->landmarks[k][0], f->landmarks[k][1], 2, col);

    int x0, y0, x1, y1;
    if (to_px(f->box.xmin, &x0) && to_px(f->box.ymin, &y0) && to_px(f->box.xmax, &x1) &&
        to_px(f->box.ymax, &y1)) {
        if (x1 < x0) {
            int t = x0;
            x0 = x1, x1 = t;
        }
        if (y1 < y0) {
            int t = y0;
            y0 = y1, y1 = t;
        }
        /* A 2-pixel outline just inside [x0, x1] x [y0, y1]. */
        fill(c, x0, y0, x1 + 1, y0 + 2, col);
        fill(c, x0, y1 - 1, x1 + 1, y1 + 1, col);
        fill(c, x0, y0, x0 + 2, y1 + 1, col);
        fill(c, x1 - 1, y0, x1 + 1, y1 + 1, col);
        /* The id above the box, or inside its top when there is no room. */
        int label_h = GLYPH_H + 2 * LABEL_PAD;
        int ly = y0 - label_h - 1 >= 0 ? y0 - label_h - 1 : y0 + 3;
        draw_label(c, x0, ly, f->id, col);
    }

    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        draw_dot(c, f->keypoints[k][0], f->keypoints[k][1], 5, black);
        draw_dot(c, f->keypoints[k][0], f->keypoints[k][1], 3, white);
    }
}

static uint8_t to_u8(float v)
{
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
}

omma_status io_annotate(const omma_frame *frame, const omma_face *faces, int n, uint8_t *rgb,
                        int pitch)
{
    OMMA_TRY(vis_frame_check(frame)); /* NULL frames too */
    if (frame->memory != OMMA_MEMORY_HOST)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_annotate: the frame is not in host memory");
    if (!rgb)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_annotate: NULL rgb");
    if (pitch / 3 < frame->width)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "io_annotate: pitch %d smaller than a row of %d RGB pixels", pitch,
                         frame->width);
    if (n < 0 || (!faces && n > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_annotate: %d faces at %p", n,
                         (const void *)faces);
    canvas c = {rgb, frame->width, frame->height, pitch};
    for (int y = 0; y < c.h; y++) {
        uint8_t *row = rgb + (size_t)y * (size_t)pitch;
        if (frame->format == OMMA_PIXEL_RGB) {
            memcpy(row, frame->planes[0] + (size_t)y * (size_t)frame->pitch[0], (size_t)c.w * 3);
            continue;
        }
        for (int x = 0; x < c.w; x++) {
            float t[3];
            vis_frame_texel(frame, x, y, t);
            row[3 * x] = to_u8(t[0]), row[3 * x + 1] = to_u8(t[1]), row[3 * x + 2] = to_u8(t[2]);
        }
    }
    for (int i = 0; i < n; i++)
        draw_face(&c, &faces[i]);
    return OMMA_OK;
}
