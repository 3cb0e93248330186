/* Private: which tracked face is which participant (docs/OUTPUT.md,
 * Participants). A participant is a person measured on one camera, named
 * by the user. Each frame of a camera, its participants are matched to the
 * frame's tracked faces:
 *
 * 1. A participant keeps its track while the tracker follows it (faces
 *    crossing each other, or leaving their region, keep their names).
 *    A track that ends makes the participant lost (an event).
 * 2. Enrollment (optional): the first `enroll_frames` frames of a
 *    participant's face give its template (vision/face_signature.h); once
 *    enrolled, a lost participant is given back only to a new track whose
 *    signature is within `enroll_distance` of its template and less than
 *    half its distance to any other enrolled participant's of the camera
 *    (the closest pairs first), never by region or position.
 * 3. Region: a free participant with a region takes the free track whose
 *    box centre lies in the region, the one nearest the region's centre.
 * 4. Position, when unambiguous: the free participants without a region
 *    take the free tracks only when there are as many of each, in order
 *    (participants as listed, tracks by their box centre, left to right).
 *
 * Every change is an event (assigned, with how; lost); tracks left without
 * a participant are reported per frame. Internally locked: any thread may
 * call update (each camera's frames in order). */
#ifndef OMMA_RUNTIME_PARTICIPANTS_H
#define OMMA_RUNTIME_PARTICIPANTS_H

#include "omma/face.h"
#include "omma/status.h"

#define RT_PARTICIPANTS_MAX 16
#define RT_PARTICIPANT_NAME_MAX 64
#define RT_UNASSIGNED_MAX 64

typedef struct rt_participant_spec {
    char name[RT_PARTICIPANT_NAME_MAX];
    int camera; /* camera index */
    int has_region;
    double region[4]; /* x, y, w, h: fractions of the frame, or pixels */
    int region_pixels;
} rt_participant_spec;

typedef struct rt_participants_config {
    int n; /* 1..RT_PARTICIPANTS_MAX */
    const rt_participant_spec *p;
    int enroll; /* signatures and re-identification */
    int enroll_frames; /* frames averaged into a template (15) */
    double enroll_distance; /* the largest signature distance that re-identifies (0.025) */
} rt_participants_config;

typedef enum rt_assign_how {
    RT_ASSIGN_LOST = 0, /* the participant's track ended */
    RT_ASSIGN_REGION,
    RT_ASSIGN_POSITION,
    RT_ASSIGN_ENROLLMENT,
} rt_assign_how;

/* "lost", "region", "position", "enrollment". */
const char *rt_assign_how_name(rt_assign_how how);

typedef struct rt_participant_event {
    int participant;
    int track, previous_track; /* -1: none */
    rt_assign_how how;
    double distance; /* enrollment: the signature distance; else 0 */
} rt_participant_event;

typedef struct rt_participants_frame {
    int face[RT_PARTICIPANTS_MAX]; /* per participant on the camera: the index
                                    * of its face in the frame, or -1 */
    int enrolled[RT_PARTICIPANTS_MAX]; /* its template is made */
    rt_participant_event events[2 * RT_PARTICIPANTS_MAX];
    int n_events;
    int unassigned[RT_UNASSIGNED_MAX]; /* indices of faces no one has */
    int n_unassigned;
} rt_participants_frame;

typedef struct rt_participants rt_participants;

/* Checks and copies the config (names distinct and non-empty, regions
 * inside (0, 1] when normalized, positive sizes). */
omma_status rt_participants_create(const rt_participants_config *c, rt_participants **out);
void rt_participants_destroy(rt_participants *ps);

/* One frame of `camera` (width x height pixels) with its tracked faces. */
void rt_participants_update(rt_participants *ps, int camera, int width, int height,
                            const omma_face *faces, int n, rt_participants_frame *out);

#endif
