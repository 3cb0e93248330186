/* Private: the aspect-preserving letterbox that fits a frame into the
 * detector's square input, and its inverse. */
#ifndef OMMA_VISION_LETTERBOX_H
#define OMMA_VISION_LETTERBOX_H

/* Input pixel = frame pixel * scale + offset (continuous coordinates, both
 * axes the same scale); the frame is centred, the rest is border. */
typedef struct vis_letterbox {
    int size;       /* the input is size x size */
    float scale;    /* size / max(width, height) */
    float offset_x; /* (size - width * scale) / 2 */
    float offset_y; /* (size - height * scale) / 2 */
} vis_letterbox;

/* The letterbox of a width x height frame in a size x size input (all > 0). */
vis_letterbox vis_letterbox_make(int width, int height, int size);

/* Input pixel -> frame pixel, one coordinate. */
static inline float vis_letterbox_to_frame_x(const vis_letterbox *lb, float x)
{
    return (x - lb->offset_x) / lb->scale;
}
static inline float vis_letterbox_to_frame_y(const vis_letterbox *lb, float y)
{
    return (y - lb->offset_y) / lb->scale;
}

#endif
