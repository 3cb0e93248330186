/* The LSL layer's parsers and writers without the network: the <info>
 * document round trip and liblsl's layout, bad documents, the query
 * subset, the streamfeed request/response headers, test patterns, and the
 * NAME_pose stream's layout (lsl/lsl_layout.h). */
#include <math.h>
#include <stdint.h>

#include "lsl/lsl_feed.h"
#include "lsl/lsl_info.h"
#include "lsl/lsl_layout.h"
#include "lsl/lsl_query.h"
#include "lsl/lsl_xml.h"
#include "testing.h"

static void make_info(lsl_info *in)
{
    memset(in, 0, sizeof *in);
    snprintf(in->name, sizeof in->name, "cam0_landmarks");
    snprintf(in->type, sizeof in->type, "Landmark");
    snprintf(in->source_id, sizeof in->source_id, "omma:cam0:landmarks");
    snprintf(in->uid, sizeof in->uid, "2c1f3a8e-0000-4000-8000-000000000001");
    snprintf(in->session_id, sizeof in->session_id, "default");
    snprintf(in->hostname, sizeof in->hostname, "lab<1>&co");
    in->channel_count = 1411;
    in->format = LSL_FORMAT_FLOAT32;
    in->nominal_srate = 29.97;
    in->version = 110;
    in->created_at = 12345.678901234567;
    in->v4data_port = 40001;
    in->v4service_port = 16572;
}

static void test_info_round_trip(void)
{
    lsl_info in;
    make_info(&in);
    lsl_buf desc = {0};
    lsl_buf_puts(&desc, "<channels>");
    lsl_desc_channel(&desc, "x0", "normalized", "PositionX");
    lsl_desc_channel(&desc, "a<b>&'\"", NULL, NULL);
    lsl_buf_puts(&desc, "</channels><acquisition><manufacturer>omma</manufacturer></acquisition>");
    in.desc = desc.data;
    lsl_buf out = {0};
    lsl_info_write(&in, 1, &out);
    REQUIRE(!out.failed);
    /* liblsl's layout: the declaration, then <info> with its fields. */
    CHECK(strncmp(out.data, "<?xml version=\"1.0\"?>\n<info>\n\t<name>cam0_landmarks</name>", 52) ==
          0);
    CHECK(strstr(out.data, "<hostname>lab&lt;1&gt;&amp;co</hostname>"));
    CHECK(strstr(out.data, "<channel_format>float32</channel_format>"));
    CHECK(strstr(out.data, "<version>1.10</version>"));
    lsl_info back;
    REQUIRE_OK(lsl_info_parse(out.data, out.len, &back));
    CHECK(strcmp(back.name, in.name) == 0);
    CHECK(strcmp(back.type, in.type) == 0);
    CHECK(strcmp(back.source_id, in.source_id) == 0);
    CHECK(strcmp(back.uid, in.uid) == 0);
    CHECK(strcmp(back.hostname, "lab<1>&co") == 0);
    CHECK(back.channel_count == 1411);
    CHECK(back.format == LSL_FORMAT_FLOAT32);
    CHECK(back.nominal_srate == 29.97);
    CHECK(back.created_at == in.created_at);
    CHECK(back.version == 110);
    CHECK(back.v4data_port == 40001 && back.v4service_port == 16572);
    char *labels = NULL;
    int n = 0;
    REQUIRE_OK(lsl_info_channel_labels(&back, &labels, &n));
    CHECK(n == 2);
    if (n == 2) {
        CHECK(strcmp(labels, "x0") == 0);
        CHECK(strcmp(labels + 3, "a<b>&'\"") == 0);
    }
    free(labels);
    /* The short form has an empty desc. */
    lsl_buf shortinfo = {0};
    lsl_info_write(&in, 0, &shortinfo);
    CHECK(strstr(shortinfo.data, "<desc />") && !strstr(shortinfo.data, "<channels>"));
    lsl_buf_free(&shortinfo);
    lsl_info_clear(&back);
    lsl_buf_free(&out);
    lsl_buf_free(&desc);
}

/* A document as pugixml writes it for liblsl 1.16 (the shape of its
 * shortinfo): attributes-free, self-closed empty fields. */
static void test_info_liblsl_document(void)
{
    const char *doc =
        "<?xml version=\"1.0\"?>\n<info>\n\t<name>BioSemi</name>\n\t<type>EEG</type>\n"
        "\t<channel_count>8</channel_count>\n\t<channel_format>float32</channel_format>\n"
        "\t<source_id>myuid34234</source_id>\n\t<nominal_srate>100.000000000000000</"
        "nominal_srate>\n"
        "\t<version>1.1000000000000001</version>\n\t<created_at>2063.9134540000001</created_at>\n"
        "\t<uid>0b2ab4e4-7d1c-4e4c-8f0a-5d0f4b7c6a3e</uid>\n\t<session_id>default</session_id>\n"
        "\t<hostname>lab-pc</hostname>\n\t<v4address />\n\t<v4data_port>16573</v4data_port>\n"
        "\t<v4service_port>16572</v4service_port>\n\t<v6address "
        "/>\n\t<v6data_port>0</v6data_port>\n"
        "\t<v6service_port>0</v6service_port>\n\t<desc />\n</info>\n";
    lsl_info in;
    REQUIRE_OK(lsl_info_parse(doc, strlen(doc), &in));
    CHECK(strcmp(in.name, "BioSemi") == 0 && strcmp(in.type, "EEG") == 0);
    CHECK(in.channel_count == 8 && in.nominal_srate == 100 && in.version == 110);
    CHECK(in.v4data_port == 16573 && in.v4address[0] == '\0' && in.desc == NULL);
    lsl_info_clear(&in);
}

static void test_info_bad(void)
{
    lsl_info in;
    const char *cases[][2] = {
        {"", "expected an element"},
        {"<info><name>x</name>", "not closed"},
        {"<info><name>x</nam></info>", "closed by another tag"},
        {"<other/>", "not <info>"},
        {"<info><name></name></info>", "<name> is missing"},
        {"<info><name>x</name><uid>u</uid><channel_count>-1</channel_count></info>",
         "channel_count"},
        {"<info><name>x</name><uid>u</uid><channel_count>2</channel_count>"
         "<channel_format>float128</channel_format></info>",
         "unknown channel format"},
        {"<info><name>&bogus;</name></info>", "unknown entity"},
        {"<info><name>x</name></info>trailing", "data after"},
        /* Found by fuzz_lsl: a version that rounds to 0.00 parsed, and its
         * write-back did not. */
        {"<info><name>x</name><uid>u</uid><channel_count>1</channel_count>"
         "<channel_format>float32</channel_format><nominal_srate>1</nominal_srate>"
         "<version>0.0011</version></info>",
         "version 0.0011 out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_FAILS(lsl_info_parse(cases[i][0], strlen(cases[i][0]), &in), OMMA_ERR_FORMAT,
                    cases[i][1]);
    /* Nesting past the bound. */
    char deep[1024] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "<a>");
    lsl_xml_node *root;
    CHECK_FAILS(lsl_xml_parse(deep, strlen(deep), &root), OMMA_ERR_FORMAT, "nested deeper");
}

static void test_query(void)
{
    lsl_info in;
    make_info(&in);
    struct {
        const char *q;
        int want;
    } cases[] = {
        {"", 1},
        {"name='cam0_landmarks'", 1},
        {"session_id='default' and name='cam0_landmarks'", 1},
        {"session_id='default' and name='cam1_landmarks'", 0},
        {"name=\"cam0_landmarks\" and type='Landmark'", 1},
        {"type='EEG' or source_id='omma:cam0:landmarks'", 1},
        {"not(type='EEG')", 1},
        {"name!='cam0_landmarks'", 0},
        {"starts-with(name,'cam0_')", 1},
        {"contains(source_id, ':landmarks')", 1},
        {"channel_count=1411", 1},
        {"channel_count='1411'", 1},
        {"nominal_srate=29.97", 1},
        {"(type='EEG' or type='Landmark') and channel_format='float32'", 1},
        {"desc/manufacturer='omma'", 0},
        {"nosuchfield!='x'", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int m = -1;
        omma_status st = lsl_query_match(cases[i].q, strlen(cases[i].q), &in, &m);
        if (st != OMMA_OK || m != cases[i].want)
            fprintf(stderr, "query %s: st %d match %d\n", cases[i].q, st, m);
        CHECK(st == OMMA_OK && m == cases[i].want);
    }
    int m;
    const char *bad[] = {"name=", "name='x", "name='x' and", "foo(name)", "name='x')", "((((", "@"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_FAILS(lsl_query_match(bad[i], strlen(bad[i]), &in, &m), OMMA_ERR_FORMAT, "LSL query");
    char deep[400];
    memset(deep, '(', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    CHECK_FAILS(lsl_query_match(deep, strlen(deep), &in, &m), OMMA_ERR_FORMAT, "nested");
}

static void test_feed_headers(void)
{
    /* As liblsl's data_receiver sends it. */
    const char *req = "LSL:streamfeed/110 2c1f3a8e-0000-4000-8000-000000000001\r\n"
                      "Native-Byte-Order: 1234\r\nEndian-Performance: 2.5e+09\r\n"
                      "Has-IEEE754-Floats: 1\r\nSupports-Subnormals: 0\r\nValue-Size: 4\r\n"
                      "Data-Protocol-Version: 110\r\nMax-Buffer-Length: 10800\r\n"
                      "Max-Chunk-Length: 0\r\nHostname: lab\r\nSource-Id: s ; comment\r\n"
                      "Session-Id: default\r\n\r\n";
    lsl_feed_request rq;
    REQUIRE_OK(lsl_feed_request_parse(req, strlen(req), &rq));
    CHECK(rq.version == 110 && rq.protocol_version == 110);
    CHECK(strcmp(rq.uid, "2c1f3a8e-0000-4000-8000-000000000001") == 0);
    CHECK(rq.byte_order == 1234 && rq.value_size == 4 && rq.has_ieee754 == 1);
    CHECK(rq.supports_subnormals == 0 && rq.max_buffer_length == 10800);
    const char *r100 = "LSL:streamfeed\r\n360 0\r\n";
    REQUIRE_OK(lsl_feed_request_parse(r100, strlen(r100), &rq));
    CHECK(rq.version == 100 && rq.max_buffer_length == 360);
    const char *bad[][2] = {
        {"LSL:streamfeed/abc\r\n\r\n", "bad protocol version"},
        {"LSL:fullinfo\r\n", "unknown method"},
        {"LSL:streamfeed/110 u\r\nValue-Size: four\r\n\r\n", "not a number"},
        {"LSL:streamfeed/110 u\r\nNative-Byte-Order: 1111\r\n\r\n", "byte order"},
        {"LSL:streamfeed/110 u\r\nValue-Size: 4\r\n", "not ended"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_FAILS(lsl_feed_request_parse(bad[i][0], strlen(bad[i][0]), &rq), OMMA_ERR_FORMAT,
                    bad[i][1]);
    const char *resp = "LSL/110 200 OK\r\nUID: abc\r\nByte-Order: 4321\r\n"
                       "Suppress-Subnormals: 1\r\nData-Protocol-Version: 110\r\n\r\n";
    lsl_feed_response rs;
    REQUIRE_OK(lsl_feed_response_parse(resp, strlen(resp), &rs));
    CHECK(rs.status == 200 && rs.version == 110 && strcmp(rs.uid, "abc") == 0);
    CHECK(rs.byte_order == 4321 && rs.suppress_subnormals == 1 && rs.data_protocol_version == 110);
    const char *r404 = "LSL/110 404 Not found\r\n";
    REQUIRE_OK(lsl_feed_response_parse(r404, strlen(r404), &rs));
    CHECK(rs.status == 404);
    CHECK_FAILS(lsl_feed_response_parse("HTTP/1.1 200 OK\r\n\r\n", 19, &rs), OMMA_ERR_FORMAT,
                "bad status line");
}

static void test_patterns(void)
{
    /* liblsl's test_pattern: k even +(k+offset'), k odd -(k+offset'). */
    float f[4];
    lsl_test_pattern(LSL_FORMAT_FLOAT32, 4, 4, f);
    CHECK(f[0] == 4 && f[1] == -5 && f[2] == 6 && f[3] == -7);
    double d[2];
    lsl_test_pattern(LSL_FORMAT_DOUBLE64, 2, 2, d);
    CHECK(d[0] == 16777219.0 && d[1] == -16777220.0);
    int32_t i32[2];
    lsl_test_pattern(LSL_FORMAT_INT32, 2, 4, i32);
    CHECK(i32[0] == 65541 && i32[1] == -65542);
    int16_t i16[2];
    lsl_test_pattern(LSL_FORMAT_INT16, 2, 2, i16);
    CHECK(i16[0] == 259 && i16[1] == -260);
    int64_t i64[2];
    lsl_test_pattern(LSL_FORMAT_INT64, 2, 4, i64);
    CHECK(i64[0] == 2147483653LL && i64[1] == -2147483654LL);
    uint8_t s[9 + 8];
    float v[2] = {1.5f, -2.0f};
    lsl_sample_encode(s, 7.25, v, sizeof v);
    double ts;
    memcpy(&ts, s + 1, 8);
    CHECK(s[0] == LSL_TAG_TRANSMITTED && ts == 7.25 && memcmp(s + 9, v, 8) == 0);
}

/* {name}_pose: 132 labelled float32 channels, x, y, z, visibility per
 * landmark normalized by the frame's size; NaN and visibility 0 without a
 * pose. */
static void test_pose_layout(void)
{
    lsl_info spec;
    REQUIRE_OK(lsl_layout_pose_info("alice", "omma:participant:alice", 30.0, &spec));
    CHECK(strcmp(spec.name, "alice_pose") == 0 && strcmp(spec.type, "Pose") == 0);
    CHECK(strcmp(spec.source_id, "omma:participant:alice:pose") == 0);
    CHECK(spec.channel_count == 132 && spec.format == LSL_FORMAT_FLOAT32);
    CHECK(spec.nominal_srate == 30.0);
    REQUIRE(spec.desc);
    CHECK(strstr(spec.desc, "<channels><channel><label>nose_x</label><unit>normalized</unit>"
                            "<type>PositionX</type></channel>") == spec.desc);
    CHECK(strstr(spec.desc, "<label>nose_visibility</label><unit>probability</unit>"
                            "<type>Visibility</type>"));
    CHECK(strstr(spec.desc, "<label>right_foot_index_visibility</label>"));
    CHECK(strstr(spec.desc, "<model>MediaPipe BlazePose</model>"));
    lsl_info_clear(&spec);
    char label[48];
    lsl_layout_pose_label(4 * 15 + 1, label, sizeof label);
    CHECK(strcmp(label, "left_wrist_y") == 0);
    lsl_layout_pose_label(132, label, sizeof label);
    CHECK(strcmp(label, "?") == 0);

    omma_pose p;
    memset(&p, 0, sizeof p);
    p.landmarks[15] = (omma_pose_landmark){320.0f, 120.0f, -64.0f, 0.75f, 0.9f};
    float v[LSL_POSE_CHANNELS];
    lsl_layout_pose_sample(&p, 640, 480, v);
    CHECK_NEAR(v[60], 0.5, 1e-6);
    CHECK_NEAR(v[61], 0.25, 1e-6);
    CHECK_NEAR(v[62], -0.1, 1e-6);
    CHECK_NEAR(v[63], 0.75, 1e-6);
    lsl_layout_pose_sample(NULL, 640, 480, v);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++)
        CHECK(isnan(v[4 * k]) && isnan(v[4 * k + 1]) && isnan(v[4 * k + 2]) && v[4 * k + 3] == 0);
}

int main(void)
{
    RUN(test_info_round_trip);
    RUN(test_info_liblsl_document);
    RUN(test_info_bad);
    RUN(test_query);
    RUN(test_feed_headers);
    RUN(test_patterns);
    RUN(test_pose_layout);
    return testing_finish();
}
