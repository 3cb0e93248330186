/* Private: checking frame descriptors and sampling them (the CPU
 * reference every vision stage reads frames through). Functions here only
 * read the frame and write their outputs: any thread. */
#ifndef OMMA_VISION_FRAME_H
#define OMMA_VISION_FRAME_H

#include "omma/face.h"
#include "omma/status.h"

/* OMMA_ERR_INVALID_ARG with a message naming the problem for a NULL frame,
 * a zero or negative size (or one above 32768), an unknown format, a NULL
 * plane the format needs, or a pitch smaller than the plane's row. */
omma_status vis_frame_check(const omma_frame *f);

/* Bytes of one row of plane p (0 for planes the format does not use). */
int vis_frame_row_bytes(const omma_frame *f, int p);

/* Pixel (x, y) as R, G, B in 0..255 (floats; YUV converted with BT.601
 * limited-range coefficients, see frame.c), black (0, 0, 0) outside the
 * frame. The frame must have passed vis_frame_check. */
void vis_frame_texel(const omma_frame *f, int x, int y, float rgb[3]);

/* What samples outside the frame read. */
typedef enum vis_border {
    VIS_BORDER_ZERO,      /* black (pixel value 0) */
    VIS_BORDER_REPLICATE, /* the nearest edge pixel */
} vis_border;

/* Bilinear resampling through an affine map: output pixel (ox, oy) of an
 * out_w x out_h image reads the frame at the continuous point
 *   x = m[0] * u + m[1] * v + m[2],  y = m[3] * u + m[4] * v + m[5]
 * with (u, v) = (ox + 0.5, oy + 0.5), interpolating between pixel centres.
 * Points within half a pixel inside the frame's edge clamp to the edge
 * pixel centres; further out texels read per `border` (like OpenCV's
 * warpAffine with BORDER_CONSTANT 0 or BORDER_REPLICATE). Writes
 * value * scale + bias per channel, R G B, NHWC (out_h * out_w * 3). */
void vis_frame_sample_affine(const omma_frame *f, const float m[6], int out_w, int out_h,
                             vis_border border, float scale, float bias, float *out);

#endif
