/* Status names and the thread-local error detail. */
#include <pthread.h>

#include "core/error.h"
#include "testing.h"

static void status_names(void)
{
    CHECK(strcmp(omma_status_str(OMMA_OK), "OMMA_OK") == 0);
    CHECK(strcmp(omma_status_str(OMMA_ERR_CUDA), "OMMA_ERR_CUDA") == 0);
    CHECK(strcmp(omma_status_str(OMMA_ERR_DEVICE_LOST), "OMMA_ERR_DEVICE_LOST") == 0);
    CHECK(strcmp(omma_status_str((omma_status)999), "OMMA_ERR_UNKNOWN") == 0);
    CHECK(strcmp(omma_status_str((omma_status)-1), "OMMA_ERR_UNKNOWN") == 0);
    for (int s = 0; s < OMMA_STATUS_COUNT; s++)
        CHECK(strncmp(omma_status_str((omma_status)s), "OMMA_", 5) == 0);
}

static void fail_formats_message_with_location(void)
{
    omma_clear_error();
    CHECK(strcmp(omma_last_error(), "") == 0);
    int line = __LINE__ + 1;
    omma_status st = OMMA_FAIL(OMMA_ERR_IO, "cannot open %s: %s", "x.png", "No such file");
    CHECK(st == OMMA_ERR_IO);
    char want[256];
    snprintf(want, sizeof want, "cannot open x.png: No such file at tests/core/test_status.c:%d",
             line);
    CHECK(strcmp(omma_last_error(), want) == 0);
}

static void long_messages_are_truncated_not_overflowed(void)
{
    char big[4000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    OMMA_FAIL(OMMA_ERR_FORMAT, "%s", big);
    CHECK(strlen(omma_last_error()) < 1024);
    CHECK(strncmp(omma_last_error(), "aaaa", 4) == 0);
}

static void *other_thread(void *arg)
{
    (void)arg;
    /* A new thread starts with no detail and its failure stays its own. */
    int clean = strcmp(omma_last_error(), "") == 0;
    OMMA_FAIL(OMMA_ERR_BUSY, "thread detail");
    return (void *)(long)clean;
}

static void detail_is_thread_local(void)
{
    OMMA_FAIL(OMMA_ERR_IO, "main detail");
    pthread_t t;
    void *clean = NULL;
    REQUIRE(pthread_create(&t, NULL, other_thread, NULL) == 0);
    pthread_join(t, &clean);
    CHECK(clean == (void *)1);
    CHECK(strncmp(omma_last_error(), "main detail", 11) == 0);
}

static void short_path_strips_prefix(void)
{
    CHECK(strcmp(core_short_path("/home/x/omma/src/gpu/memory.c"), "src/gpu/memory.c") == 0);
    CHECK(strcmp(core_short_path("/a/src/b/tests/core/t.c"), "tests/core/t.c") == 0);
    CHECK(strcmp(core_short_path("plain.c"), "plain.c") == 0);
}

int main(void)
{
    RUN(status_names);
    RUN(fail_formats_message_with_location);
    RUN(long_messages_are_truncated_not_overflowed);
    RUN(detail_is_thread_local);
    RUN(short_path_strips_prefix);
    return testing_finish();
}
