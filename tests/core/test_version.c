/* omma/version.h: the version, the configure-time commit and the features
 * of this build, checked against what CMake configured (OMMA_HAVE_*). */
#include "omma/omma.h"
#include "testing.h"

/* 1 when word is one of the space-separated words of list. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
    return 0;
}

static void version_is_the_project_version(void)
{
    CHECK(strcmp(omma_version(), "0.1.0") == 0);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", OMMA_VERSION_MAJOR, OMMA_VERSION_MINOR,
             OMMA_VERSION_PATCH);
    CHECK(strcmp(omma_version(), want) == 0);
}

static void commit_is_a_short_hash_or_unknown(void)
{
    const char *c = omma_build_commit();
    REQUIRE(c != NULL);
    if (strcmp(c, "unknown") == 0)
        return;
    size_t n = strlen(c);
    CHECK(n >= 7 && n <= 40);
    CHECK(strspn(c, "0123456789abcdef") == n);
}

static void features_match_the_build(void)
{
    const char *f = omma_build_features();
    REQUIRE(f != NULL);
    CHECK(has_word(f, "libpng"));
    CHECK(has_word(f, "cuda") == (OMMA_HAVE_CUDA ? 1 : 0));
#ifdef OMMA_HAVE_LIBAV
    CHECK(has_word(f, "ffmpeg"));
#else
    CHECK(!has_word(f, "ffmpeg"));
#endif
#ifdef OMMA_HAVE_JPEG
    CHECK(has_word(f, "libjpeg"));
#else
    CHECK(!has_word(f, "libjpeg"));
#endif
#ifdef OMMA_HAVE_MICROHTTPD
    CHECK(has_word(f, "libmicrohttpd"));
#else
    CHECK(!has_word(f, "libmicrohttpd"));
#endif
#ifdef OMMA_HAVE_LIBV4L2
    CHECK(has_word(f, "libv4l2"));
#else
    CHECK(!has_word(f, "libv4l2"));
#endif
    CHECK(!has_word(f, "cudnn")); /* never linked (src/gpu/check.c) */
    CHECK(f[0] != ' ' && f[strlen(f) - 1] != ' ' && !strstr(f, "  "));
}

int main(void)
{
    RUN(version_is_the_project_version);
    RUN(commit_is_a_short_hash_or_unknown);
    RUN(features_match_the_build);
    return testing_finish();
}
