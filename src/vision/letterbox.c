/* MediaPipe's ImageToTensorCalculator with keep_aspect_ratio: the frame's
 * rectangle grows to a square on its long side, centred, and the square is
 * resized to the input; DetectionLetterboxRemovalCalculator undoes it. */
#include "vision/letterbox.h"

vis_letterbox vis_letterbox_make(int width, int height, int size)
{
    vis_letterbox lb;
    int side = width > height ? width : height;
    lb.size = size;
    lb.scale = (float)size / (float)side;
    lb.offset_x = ((float)side - (float)width) * 0.5f * lb.scale;
    lb.offset_y = ((float)side - (float)height) * 0.5f * lb.scale;
    return lb;
}
