/* Synchrony (src/vision/synchrony.c) on signals of known correlation, the
 * co-modulation detector against values worked out by hand from its
 * formulas (docs/OUTPUT.md), and face signatures (face_signature.c):
 * a shape moved, scaled and turned stays at distance ~0, another shape
 * does not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"
#include "vision/face_signature.h"
#include "vision/synchrony.h"

#define PI 3.14159265358979323846

/* b = rho a + sqrt(1 - rho^2) c, with a = sin, c = cos over whole periods
 * of the window: orthogonal, zero mean, equal variance, so r = rho. */
static void known_correlation(void)
{
    const int w = 60;
    const double rhos[] = {1.0, 0.6, 0.0, -0.3, -1.0};
    for (size_t k = 0; k < sizeof rhos / sizeof rhos[0]; k++) {
        vis_sync *s = NULL;
        REQUIRE_OK(vis_sync_create(2, w, NULL, &s));
        float r[2] = {0, 0};
        double rho = rhos[k];
        for (int i = 0; i < 3 * w; i++) {
            double ph = 2 * PI * i / w;
            float a[2] = {(float)sin(ph), (float)(5 + 2 * sin(ph))};
            float b[2] = {(float)(rho * sin(ph) + sqrt(1 - rho * rho) * cos(ph)),
                          (float)(-3 * sin(ph))};
            vis_sync_push(s, a, b, r, NULL);
            if (i == w / 2 - 2)
                CHECK(isnan(r[0])); /* fewer than w/2 pairs so far */
        }
        CHECK_NEAR(r[0], rho, 1e-5);
        CHECK_NEAR(r[1], -1.0, 1e-5); /* scale and offset do not count */
        vis_sync_destroy(s);
    }
}

static void missing_and_constant(void)
{
    vis_sync *s = NULL;
    REQUIRE_OK(vis_sync_create(1, 10, NULL, &s));
    float r = 0;
    for (int i = 0; i < 10; i++) {
        float a = (float)i, b = i % 2 ? NAN : (float)(2 * i); /* half the pairs missing */
        vis_sync_push(s, &a, &b, &r, NULL);
    }
    CHECK_NEAR(r, 1.0, 1e-6); /* 5 pairs, all on b = 2a */
    for (int i = 0; i < 10; i++) {
        float a = 1.0f, b = (float)i; /* a constant: no correlation defined */
        vis_sync_push(s, &a, &b, &r, NULL);
    }
    CHECK(isnan(r));
    vis_sync_destroy(s);
    CHECK_FAILS(vis_sync_create(0, 10, NULL, &s), OMMA_ERR_INVALID_ARG, "signals");
    CHECK_FAILS(vis_sync_create(1, 1, NULL, &s), OMMA_ERR_INVALID_ARG, "window");
    CHECK(s == NULL);
}

/* Both people still for 300 pushes, then both step up by 0.1 together:
 * the brief component is the mean slow deviation, 0.1 - 0.1/300; the
 * smoothed derivative 0.3 x 0.1 = 0.03 is not above Td, so no transient. */
static void comodulation(void)
{
    vis_comod_params p;
    vis_comod_params_init(&p);
    CHECK(p.fast == 60 && p.slow == 300);
    vis_sync *s = NULL;
    REQUIRE_OK(vis_sync_create(2, 60, &p, &s));
    float r[2], cm[2];
    for (int i = 0; i < 300; i++) {
        float a[2] = {0, 0}, b[2] = {0, 0};
        vis_sync_push(s, a, b, r, cm);
        if (i < 299)
            CHECK(isnan(cm[0]));
    }
    CHECK_NEAR(cm[0], 0.0, 1e-9); /* full window, nothing moves */
    float a[2] = {0.1f, 0.1f}, b[2] = {0.1f, 0.0f}; /* signal 1: only a moves */
    vis_sync_push(s, a, b, r, cm);
    double e = 0.1f - 0.1f / 300.0;
    CHECK_NEAR(cm[0], e, 1e-6);
    CHECK_NEAR(cm[1], 0.0, 1e-9);
    vis_sync_push(s, a, b, r, cm); /* held: B = max(0.9 B, new m) */
    double e2 = 0.1f - 2 * 0.1f / 300.0;
    CHECK_NEAR(cm[0], e > e2 / 0.9 ? 0.9 * e : e2, 1e-6);
    /* A joint rise by 0.5: smoothed derivatives 0.3 x 0.5 + 0.7 x 0.021 =
     * 0.1647 each (a transient of 0.1647), but the slow deviation,
     * 0.6 - 0.8/300, is larger: brief wins the max. */
    float a2[2] = {0.6f, 0.1f}, b2[2] = {0.6f, 0.0f};
    vis_sync_push(s, a2, b2, r, cm);
    CHECK_NEAR(cm[0], 0.6f - (0.1f + 0.1f + 0.6f) / 300.0, 1e-5);
    /* A value missing: NaN for that signal, state kept. */
    float an[2] = {NAN, 0.1f};
    vis_sync_push(s, an, b2, r, cm);
    CHECK(isnan(cm[0]));
    vis_sync_destroy(s);
}

static void make_shape(unsigned seed, float l[OMMA_FACE_LANDMARKS][3])
{
    srand(seed);
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++)
        for (int k = 0; k < 3; k++)
            l[i][k] = (float)(rand() % 1000) / 10.0f;
}

static void signatures(void)
{
    static float a[OMMA_FACE_LANDMARKS][3], b[OMMA_FACE_LANDMARKS][3], c[OMMA_FACE_LANDMARKS][3];
    make_shape(1, a);
    make_shape(2, c);
    /* b: a turned 30 degrees about y and 10 about z, scaled 1.7, moved. */
    double t = 30 * PI / 180, u = 10 * PI / 180;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        double x = a[i][0], y = a[i][1], z = a[i][2];
        double x1 = cos(t) * x + sin(t) * z, z1 = -sin(t) * x + cos(t) * z;
        double x2 = cos(u) * x1 - sin(u) * y, y2 = sin(u) * x1 + cos(u) * y;
        b[i][0] = (float)(1.7 * x2 + 300);
        b[i][1] = (float)(1.7 * y2 - 40);
        b[i][2] = (float)(1.7 * z1 + 5);
    }
    vis_signature sa, sb, sc, mean;
    REQUIRE(vis_signature_make(a, &sa));
    REQUIRE(vis_signature_make(b, &sb));
    REQUIRE(vis_signature_make(c, &sc));
    CHECK_NEAR(vis_signature_distance(&sa, &sa), 0.0, 1e-3);
    CHECK_NEAR(vis_signature_distance(&sa, &sb), 0.0, 1e-3);
    double other = vis_signature_distance(&sa, &sc);
    CHECK(other > 0.3);
    CHECK_NEAR(vis_signature_distance(&sc, &sa), other, 1e-3);
    vis_signature two[2] = {sa, sb};
    vis_signature_mean(two, 2, &mean);
    CHECK_NEAR(vis_signature_distance(&mean, &sa), 0.0, 1e-3);
    static float flat[OMMA_FACE_LANDMARKS][3];
    CHECK(!vis_signature_make(flat, &sa)); /* every point the same */
}

int main(void)
{
    RUN(known_correlation);
    RUN(missing_and_constant);
    RUN(comodulation);
    RUN(signatures);
    return testing_finish();
}
