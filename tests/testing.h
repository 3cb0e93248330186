/* A minimal test harness: each test file is a program whose main() calls
 * RUN(test_fn) for each case and returns testing_finish().
 * CHECK(...) records a failure with file:line and goes on; REQUIRE(...)
 * also returns from the current test function. SKIP_TEST(why) exits 77,
 * which CTest reports as skipped. */
#ifndef OMMA_TESTING_H
#define OMMA_TESTING_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omma/status.h"

static int testing_failures;
static int testing_case_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            testing_case_failed = 1;                                           \
        }                                                                      \
    } while (0)

#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); \
            testing_case_failed = 1;                                           \
            return;                                                            \
        }                                                                      \
    } while (0)

/* An omma call that must succeed; prints the error detail when it does not. */
#define REQUIRE_OK(expr)                                                       \
    do {                                                                       \
        omma_status testing_st_ = (expr);                                      \
        if (testing_st_ != OMMA_OK) {                                          \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    omma_status_str(testing_st_), omma_last_error());          \
            testing_case_failed = 1;                                           \
            return;                                                            \
        }                                                                      \
    } while (0)

/* An omma call that must fail with a given status and a message containing
 * the given text. */
#define CHECK_FAILS(expr, want_status, want_text)                              \
    do {                                                                       \
        omma_status testing_st_ = (expr);                                      \
        if (testing_st_ != (want_status)) {                                    \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #expr, omma_status_str(testing_st_), omma_status_str(want_status),   \
                    omma_last_error());                                        \
            testing_case_failed = 1;                                           \
        } else if (!strstr(omma_last_error(), (want_text))) {                  \
            fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                    #expr, omma_last_error(), (want_text));                    \
            testing_case_failed = 1;                                           \
        }                                                                      \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double testing_a_ = (a), testing_b_ = (b);                             \
        if (!(fabs(testing_a_ - testing_b_) <= (tol))) {                       \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %g, %s = %g, tol %g\n", __FILE__, \
                    __LINE__, #a, testing_a_, #b, testing_b_, (double)(tol));  \
            testing_case_failed = 1;                                           \
        }                                                                      \
    } while (0)

#define RUN(fn)                                                                \
    do {                                                                       \
        testing_case_failed = 0;                                               \
        fn();                                                                  \
        fprintf(stderr, "%s %s\n", testing_case_failed ? "FAIL" : "ok  ", #fn); \
        testing_failures += testing_case_failed;                               \
    } while (0)

#define SKIP_TEST(why)                                                         \
    do {                                                                       \
        fprintf(stderr, "SKIP: %s\n", (why));                                  \
        exit(77);                                                              \
    } while (0)

static inline int testing_finish(void)
{
    if (testing_failures)
        fprintf(stderr, "%d test case(s) failed\n", testing_failures);
    return testing_failures ? 1 : 0;
}

#endif
