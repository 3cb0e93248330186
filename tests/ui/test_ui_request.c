/* The live view's parsing of request input (ui_request.h): paths (routes,
 * traversal and encodings refused), camera lists, sizes, tokens from the
 * query, header and cookie, constant-time comparison, --ui's value. */
#include <string.h>

#include "testing.h"
#include "ui/ui_request.h"

static int asset(const char *name)
{
    for (int i = 0; i < ui_n_assets; i++)
        if (strcmp(ui_assets[i].name, name) == 0)
            return i;
    return -1;
}

static void test_routes(void)
{
    int arg = 0;
    REQUIRE(asset("index.html") >= 0 && asset("ui.js") >= 0 && asset("ui.css") >= 0);
    CHECK(ui_route_parse("/", 4, &arg) == UI_ROUTE_ASSET && arg == asset("index.html"));
    CHECK(ui_route_parse("/index.html", 4, &arg) == UI_ROUTE_ASSET && arg == asset("index.html"));
    CHECK(ui_route_parse("/ui.js", 4, &arg) == UI_ROUTE_ASSET && arg == asset("ui.js"));
    CHECK(ui_route_parse("/ui.css", 4, &arg) == UI_ROUTE_ASSET && arg == asset("ui.css"));
    CHECK(ui_route_parse("/api/events", 4, &arg) == UI_ROUTE_EVENTS && arg == -1);
    CHECK(ui_route_parse("/metrics", 4, &arg) == UI_ROUTE_METRICS);
    CHECK(ui_route_parse("/api/preview/0.jpg", 4, &arg) == UI_ROUTE_PREVIEW && arg == 0);
    CHECK(ui_route_parse("/api/preview/3.jpg", 4, &arg) == UI_ROUTE_PREVIEW && arg == 3);
    /* Cameras out of range or not spelled plainly. */
    CHECK(ui_route_parse("/api/preview/4.jpg", 4, &arg) == UI_ROUTE_NOT_FOUND && arg == -1);
    CHECK(ui_route_parse("/api/preview/01.jpg", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/api/preview/.jpg", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/api/preview/1.png", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/api/preview/99999999999.jpg", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/api/preview/-1.jpg", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/nothing.html", 4, &arg) == UI_ROUTE_NOT_FOUND);
    CHECK(ui_route_parse("/web/ui.js", 4, &arg) == UI_ROUTE_NOT_FOUND);
    /* Traversal, encodings, odd characters, empty segments: 400. */
    const char *bad[] = {"",
                         "ui.js",
                         "/../etc/passwd",
                         "/api/../../etc/passwd",
                         "/./ui.js",
                         "/api/./events",
                         "/..",
                         "//ui.js",
                         "/api//events",
                         "/ui.js/",
                         "/%2e%2e/etc/passwd",
                         "/ui.js?x",
                         "/ui js",
                         "/ui\\.js",
                         "/ui.js\r\n",
                         "/\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ui_route_parse(bad[i], 4, &arg) != UI_ROUTE_BAD || arg != -1) {
            fprintf(stderr, "  \"%s\" was not refused\n", bad[i]);
            CHECK(0);
        }
    CHECK(ui_route_parse(NULL, 4, &arg) == UI_ROUTE_BAD);
    char longpath[UI_URL_MAX + 2];
    memset(longpath, 'a', sizeof longpath);
    longpath[0] = '/';
    longpath[UI_URL_MAX + 1] = 0;
    CHECK(ui_route_parse(longpath, 4, &arg) == UI_ROUTE_BAD);
    longpath[UI_URL_MAX] = 0; /* exactly the limit: clean, not ours */
    CHECK(ui_route_parse(longpath, 4, &arg) == UI_ROUTE_NOT_FOUND);
}

static void test_cameras(void)
{
    int out[UI_MAX_WATCH];
    CHECK(ui_parse_cameras(NULL, 10, out, 8) == 0);
    CHECK(ui_parse_cameras("", 10, out, 8) == 0);
    CHECK(ui_parse_cameras("3", 10, out, 8) == 1 && out[0] == 3);
    REQUIRE(ui_parse_cameras("0,9,4", 10, out, 8) == 3);
    CHECK(out[0] == 0 && out[1] == 9 && out[2] == 4);
    CHECK(ui_parse_cameras("2,2,2", 10, out, 1) == 1 && out[0] == 2); /* duplicates dropped */
    const char *bad[] = {"10", "1,", ",1", "1,,2", " 1",         "1 ", "+1",
                         "-1", "01", "a",  "1;2",  "4294967297", "0x1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ui_parse_cameras(bad[i], 10, out, 8) != -1) {
            fprintf(stderr, "  cams \"%s\" was not refused\n", bad[i]);
            CHECK(0);
        }
    CHECK(ui_parse_cameras("0,1,2", 10, out, 2) == -1); /* too many */
    char big[1100];
    memset(big, '1', sizeof big);
    big[sizeof big - 1] = 0;
    CHECK(ui_parse_cameras(big, 10, out, 8) == -1);
}

static void test_size(void)
{
    CHECK(ui_parse_size(NULL) == 0);
    CHECK(ui_parse_size("thumb") == 0);
    CHECK(ui_parse_size("large") == 1);
    CHECK(ui_parse_size("Large") == -1);
    CHECK(ui_parse_size("") == -1);
}

static void test_tokens(void)
{
    const char *t = "abcdefghijklmnop_-0123";
    CHECK(ui_token_valid(t));
    CHECK(!ui_token_valid("short"));
    CHECK(!ui_token_valid("abcdefghijklmnop qr"));
    CHECK(!ui_token_valid("abcdefghijklmnop%20"));
    CHECK(!ui_token_valid(NULL));
    char big[UI_TOKEN_MAX + 2];
    memset(big, 'a', sizeof big);
    big[UI_TOKEN_MAX + 1] = 0;
    CHECK(!ui_token_valid(big));
    big[UI_TOKEN_MAX] = 0;
    CHECK(ui_token_valid(big));

    CHECK(ui_token_equal(t, t));
    CHECK(!ui_token_equal("abcdefghijklmnop_-012", t)); /* a prefix */
    CHECK(!ui_token_equal("abcdefghijklmnop_-01234", t)); /* longer */
    CHECK(!ui_token_equal("Abcdefghijklmnop_-0123", t));
    CHECK(!ui_token_equal("", t));
    CHECK(!ui_token_equal(NULL, t));

    char out[UI_TOKEN_MAX + 1];
    CHECK(ui_token_from_header("Bearer abcdefghijklmnop_-0123", out) && strcmp(out, t) == 0);
    CHECK(!ui_token_from_header("Basic abcdefghijklmnop_-0123", out));
    CHECK(!ui_token_from_header("Bearer abc", out));
    CHECK(!ui_token_from_header("Bearer abcdefghijklmnop_-0123 x", out));
    CHECK(!ui_token_from_header(NULL, out));
    CHECK(ui_token_from_cookie("omma_token=abcdefghijklmnop_-0123", out) && strcmp(out, t) == 0);
    CHECK(ui_token_from_cookie("a=b; omma_token=abcdefghijklmnop_-0123; c=d", out) &&
          strcmp(out, t) == 0);
    CHECK(!ui_token_from_cookie("xomma_token=abcdefghijklmnop_-0123", out));
    CHECK(!ui_token_from_cookie("omma_token=bad token here!!", out));
    CHECK(!ui_token_from_cookie("omma_token=", out));
    CHECK(!ui_token_from_cookie(NULL, out));
}

static void test_listen(void)
{
    char addr[64], err[128];
    int port = -1;
    CHECK(ui_parse_listen("8080", addr, sizeof addr, &port, err, sizeof err) && port == 8080 &&
          strcmp(addr, "127.0.0.1") == 0);
    CHECK(ui_parse_listen("0", addr, sizeof addr, &port, err, sizeof err) && port == 0);
    CHECK(ui_parse_listen("0.0.0.0:9000", addr, sizeof addr, &port, err, sizeof err) &&
          port == 9000 && strcmp(addr, "0.0.0.0") == 0);
    CHECK(ui_parse_listen("[::1]:9001", addr, sizeof addr, &port, err, sizeof err) &&
          port == 9001 && strcmp(addr, "::1") == 0);
    const char *bad[] = {"",       "x",       "65536", "-1",         ":80",   "1.2.3.4:",
                         "::1:80", "[::1]80", "[::1",  "1.2.3.4:8o", "123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ui_parse_listen(bad[i], addr, sizeof addr, &port, err, sizeof err)) {
            fprintf(stderr, "  --ui \"%s\" was not refused\n", bad[i]);
            CHECK(0);
        } else {
            CHECK(err[0] != 0);
        }
    char small[4];
    CHECK(!ui_parse_listen("10.0.0.1:80", small, sizeof small, &port, err, sizeof err));
    CHECK(ui_addr_is_loopback("127.0.0.1") && ui_addr_is_loopback("127.1.2.3") &&
          ui_addr_is_loopback("::1"));
    CHECK(!ui_addr_is_loopback("0.0.0.0") && !ui_addr_is_loopback("10.0.0.1") &&
          !ui_addr_is_loopback("::") && !ui_addr_is_loopback("127.0.0.1x") &&
          !ui_addr_is_loopback(NULL));
}

int main(void)
{
    RUN(test_routes);
    RUN(test_cameras);
    RUN(test_size);
    RUN(test_tokens);
    RUN(test_listen);
    return testing_finish();
}
