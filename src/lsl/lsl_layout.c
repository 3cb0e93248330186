/* The channel layouts of omma's LSL streams (lsl_layout.h). */
#include "lsl/lsl_layout.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

static const char *const keypoint_names[OMMA_FACE_KEYPOINTS] = {
    "right_eye", "left_eye", "nose_tip", "mouth", "right_ear", "left_ear"};

static const char *const pose_names[OMMA_POSE_LANDMARKS] = {
    "nose",        "left_eye_inner",  "left_eye",        "left_eye_outer", "right_eye_inner",
    "right_eye",   "right_eye_outer", "left_ear",        "right_ear",      "mouth_left",
    "mouth_right", "left_shoulder",   "right_shoulder",  "left_elbow",     "right_elbow",
    "left_wrist",  "right_wrist",     "left_pinky",      "right_pinky",    "left_index",
    "right_index", "left_thumb",      "right_thumb",     "left_hip",       "right_hip",
    "left_knee",   "right_knee",      "left_ankle",      "right_ankle",    "left_heel",
    "right_heel",  "left_foot_index", "right_foot_index"};

static omma_status finish(lsl_info *spec, lsl_buf *desc)
{
    if (desc->failed) {
        lsl_buf_free(desc);
        lsl_info_clear(spec);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl layout: out of memory");
    }
    spec->desc = desc->data;
    return OMMA_OK;
}

static omma_status names(lsl_info *spec, const char *base, const char *suffix,
                         const char *source_id)
{
    memset(spec, 0, sizeof *spec);
    int n = snprintf(spec->name, sizeof spec->name, "%s_%s", base, suffix);
    int m = snprintf(spec->source_id, sizeof spec->source_id, "%s:%s", source_id, suffix);
    if (n < 0 || (size_t)n >= sizeof spec->name || m < 0 || (size_t)m >= sizeof spec->source_id)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl stream name '%s_%s' is too long", base, suffix);
    return OMMA_OK;
}

static void acquisition(lsl_buf *d)
{
    lsl_buf_puts(d, "<acquisition><manufacturer>omma</manufacturer>"
                    "<model>MediaPipe FaceMesh</model></acquisition>");
}

omma_status lsl_layout_landmarks_info(const char *base, const char *source_id, double rate,
                                      lsl_info *spec)
{
    OMMA_TRY(names(spec, base, "landmarks", source_id));
    snprintf(spec->type, sizeof spec->type, "Landmark");
    spec->channel_count = LSL_LANDMARKS_CHANNELS;
    spec->format = LSL_FORMAT_FLOAT32;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    static const char *const types[3] = {"PositionX", "PositionY", "PositionZ"};
    char label[48];
    for (int ch = 0; ch < LSL_LANDMARKS_CHANNELS - 1; ch++) {
        lsl_layout_landmarks_label(ch, label, sizeof label);
        int axis = ch < OMMA_FACE_LANDMARKS * 3 ? ch % 3 : (ch - OMMA_FACE_LANDMARKS * 3) % 2;
        lsl_desc_channel(&d, label, "normalized", types[axis]);
    }
    lsl_desc_channel(&d, "presence", "probability", "Presence");
    lsl_buf_puts(&d, "</channels>");
    acquisition(&d);
    return finish(spec, &d);
}

void lsl_layout_landmarks_label(int ch, char *out, size_t cap)
{
    static const char axis[3] = {'x', 'y', 'z'};
    if (ch < 0 || ch >= LSL_LANDMARKS_CHANNELS)
        snprintf(out, cap, "?");
    else if (ch < OMMA_FACE_LANDMARKS * 3)
        snprintf(out, cap, "lm%d_%c", ch / 3, axis[ch % 3]);
    else if (ch < LSL_LANDMARKS_CHANNELS - 1)
        snprintf(out, cap, "kp_%s_%c", keypoint_names[(ch - OMMA_FACE_LANDMARKS * 3) / 2],
                 axis[(ch - OMMA_FACE_LANDMARKS * 3) % 2]);
    else
        snprintf(out, cap, "presence");
}

omma_status lsl_layout_frames_info(const char *base, const char *source_id, double rate,
                                   lsl_info *spec)
{
    OMMA_TRY(names(spec, base, "frames", source_id));
    snprintf(spec->type, sizeof spec->type, "VideoSync");
    spec->channel_count = LSL_FRAMES_CHANNELS;
    spec->format = LSL_FORMAT_DOUBLE64;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    lsl_desc_channel(&d, "frame", "count", "FrameNumber");
    lsl_desc_channel(&d, "capture_time", "seconds", "Timestamp");
    lsl_desc_channel(&d, "faces", "count", "Faces");
    lsl_desc_channel(&d, "dropped", "count", "Dropped");
    lsl_buf_puts(&d, "</channels>");
    acquisition(&d);
    return finish(spec, &d);
}

omma_status lsl_layout_face_info(const char *base, const char *source_id, double rate,
                                 lsl_info *spec)
{
    OMMA_TRY(names(spec, base, "face", source_id));
    snprintf(spec->type, sizeof spec->type, "FaceMeasures");
    spec->channel_count = LSL_FACE_CHANNELS;
    spec->format = LSL_FORMAT_FLOAT32;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    lsl_desc_channel(&d, "yaw", "degrees", "HeadYaw");
    lsl_desc_channel(&d, "pitch", "degrees", "HeadPitch");
    lsl_desc_channel(&d, "roll", "degrees", "HeadRoll");
    lsl_desc_channel(&d, "right_eye_open", "ratio", "EyeOpenness");
    lsl_desc_channel(&d, "left_eye_open", "ratio", "EyeOpenness");
    lsl_desc_channel(&d, "mouth_open", "ratio", "MouthOpenness");
    lsl_desc_channel(&d, "mouth_width", "ratio", "MouthWidth");
    lsl_desc_channel(&d, "presence", "probability", "Presence");
    lsl_buf_puts(&d, "</channels>");
    acquisition(&d);
    return finish(spec, &d);
}

omma_status lsl_layout_track_info(const char *base, const char *source_id, double rate,
                                  lsl_info *spec)
{
    OMMA_TRY(names(spec, base, "track", source_id));
    snprintf(spec->type, sizeof spec->type, "Assignment");
    spec->channel_count = LSL_TRACK_CHANNELS;
    spec->format = LSL_FORMAT_DOUBLE64;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    lsl_desc_channel(&d, "camera", "index", "Camera");
    lsl_desc_channel(&d, "track", "id", "Track");
    lsl_desc_channel(&d, "change", "code", "Event");
    lsl_buf_puts(&d, "</channels>");
    acquisition(&d);
    return finish(spec, &d);
}

omma_status lsl_layout_labelled_info(const char *name, const char *type, const char *source_id,
                                     double rate, int n, const char *const *labels,
                                     const char *unit, lsl_info *spec)
{
    memset(spec, 0, sizeof *spec);
    if (snprintf(spec->name, sizeof spec->name, "%s", name) >= (int)sizeof spec->name ||
        snprintf(spec->source_id, sizeof spec->source_id, "%s", source_id) >=
            (int)sizeof spec->source_id)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl stream name '%s' is too long", name);
    snprintf(spec->type, sizeof spec->type, "%s", type);
    spec->channel_count = n;
    spec->format = LSL_FORMAT_FLOAT32;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    for (int i = 0; i < n; i++)
        lsl_desc_channel(&d, labels[i], unit, type);
    lsl_buf_puts(&d, "</channels>");
    acquisition(&d);
    return finish(spec, &d);
}

void lsl_layout_landmarks_sample(const omma_face *face, int width, int height, float *out)
{
    if (!face || width <= 0 || height <= 0) {
        for (int i = 0; i < LSL_LANDMARKS_CHANNELS - 1; i++)
            out[i] = NAN;
        out[LSL_LANDMARKS_CHANNELS - 1] = 0.0f;
        return;
    }
    float sx = 1.0f / (float)width, sy = 1.0f / (float)height;
    float *o = out;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        *o++ = face->landmarks[i][0] * sx;
        *o++ = face->landmarks[i][1] * sy;
        *o++ = face->landmarks[i][2] * sx;
    }
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        *o++ = face->keypoints[k][0] * sx;
        *o++ = face->keypoints[k][1] * sy;
    }
    *o = face->presence;
}

void lsl_layout_frames_sample(uint64_t frame, double capture_time, int faces, uint64_t dropped,
                              double *out)
{
    out[0] = (double)frame;
    out[1] = capture_time;
    out[2] = faces;
    out[3] = (double)dropped;
}

static const char *const pose_axes[4] = {"x", "y", "z", "visibility"};

void lsl_layout_pose_label(int ch, char *out, size_t cap)
{
    if (ch < 0 || ch >= LSL_POSE_CHANNELS)
        snprintf(out, cap, "?");
    else
        snprintf(out, cap, "%s_%s", pose_names[ch / 4], pose_axes[ch % 4]);
}

omma_status lsl_layout_pose_info(const char *base, const char *source_id, double rate,
                                 lsl_info *spec)
{
    OMMA_TRY(names(spec, base, "pose", source_id));
    snprintf(spec->type, sizeof spec->type, "Pose");
    spec->channel_count = LSL_POSE_CHANNELS;
    spec->format = LSL_FORMAT_FLOAT32;
    spec->nominal_srate = rate;
    lsl_buf d = {0};
    lsl_buf_puts(&d, "<channels>");
    static const char *const types[4] = {"PositionX", "PositionY", "PositionZ", "Visibility"};
    char label[48];
    for (int ch = 0; ch < LSL_POSE_CHANNELS; ch++) {
        lsl_layout_pose_label(ch, label, sizeof label);
        lsl_desc_channel(&d, label, ch % 4 == 3 ? "probability" : "normalized", types[ch % 4]);
    }
    lsl_buf_puts(&d, "</channels>");
    lsl_buf_puts(&d, "<acquisition><manufacturer>omma</manufacturer>"
                     "<model>MediaPipe BlazePose</model></acquisition>");
    return finish(spec, &d);
}

void lsl_layout_pose_sample(const omma_pose *pose, int width, int height, float *out)
{
    float sx = width > 0 ? 1.0f / (float)width : NAN, sy = height > 0 ? 1.0f / (float)height : NAN;
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        float *o = out + 4 * k;
        if (!pose || !(width > 0 && height > 0)) {
            o[0] = o[1] = o[2] = NAN;
            o[3] = 0.0f;
            continue;
        }
        const omma_pose_landmark *l = &pose->landmarks[k];
        o[0] = l->x * sx;
        o[1] = l->y * sy;
        o[2] = l->z * sx;
        o[3] = l->visibility;
    }
}
