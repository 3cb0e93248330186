/* MP4's length-prefixed H.264 / HEVC to Annex B (io/annexb.h), the form
 * NVIDIA's parser reads: the clips scripts/make-decode-clips.sh makes from
 * the real photo (H.264 with B-frames, HEVC in MP4, 10-bit HEVC in
 * Matroska) are demuxed, converted packet by packet, and decoded by
 * libavcodec from the Annex B stream alone (no extradata: the converter's
 * header first); every frame must equal the one decoded the ordinary way
 * from the container's record. Bad records and damaged packets are
 * refused with a message saying what is wrong, and never read past their
 * end (ASan). The converter itself needs nothing; the clips and the
 * decoding need FFmpeg (77 without them). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/annexb.h"
#include "testing.h"

#define CLIPS OMMA_TESTDATA_DIR "/decode"

/* A heap copy of bytes, so that ASan sees reads past their end. */
static uint8_t *copy(const uint8_t *b, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (c && n)
        memcpy(c, b, n);
    return c;
}

static void bad_records(void)
{
    io_annexb a;
    CHECK_FAILS(io_annexb_init(&a, 0, NULL, 0), OMMA_ERR_FORMAT, "avcC record is empty");
    static const uint8_t v0[] = {0, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 1, 0x67, 1, 0, 1, 0x68};
    CHECK_FAILS(io_annexb_init(&a, 0, v0, sizeof v0), OMMA_ERR_FORMAT, "not version 1");
    /* One SPS of 1 byte, one PPS of 1 byte, cut at every length. */
    static const uint8_t avcc[] = {1, 0x64, 0, 0x1f, 0xff, 0xe1, 0, 1, 0x67, 1, 0, 1, 0x68};
    for (size_t n = 1; n < sizeof avcc; n++) {
        uint8_t *c = copy(avcc, n);
        REQUIRE(c);
        CHECK_FAILS(io_annexb_init(&a, 0, c, n), OMMA_ERR_FORMAT, "cut short");
        CHECK(a.header == NULL);
        free(c);
    }
    uint8_t *c = copy(avcc, sizeof avcc);
    REQUIRE(c);
    REQUIRE_OK(io_annexb_init(&a, 0, c, sizeof avcc));
    static const uint8_t want[] = {0, 0, 0, 1, 0x67, 0, 0, 0, 1, 0x68};
    CHECK(a.length_size == 4 && a.header_size == sizeof want &&
          memcmp(a.header, want, sizeof want) == 0);
    io_annexb_free(&a);
    c[4] = 0xfe; /* a 3-byte length: not allowed */
    CHECK_FAILS(io_annexb_init(&a, 0, c, sizeof avcc), OMMA_ERR_FORMAT, "3-byte length");
    free(c);
    static const uint8_t hvcc_short[22] = {1};
    c = copy(hvcc_short, sizeof hvcc_short);
    REQUIRE(c);
    CHECK_FAILS(io_annexb_init(&a, 1, c, sizeof hvcc_short), OMMA_ERR_FORMAT,
                "hvcC record (22 bytes) is cut short");
    free(c);
    io_annexb_free(NULL);
}

static void packets(void)
{
    static const uint8_t hvcc[] = {1, [21] = 0x0f, 1, 0x20, 0, 1, 0, 2, 0x40, 0x01};
    io_annexb a;
    uint8_t *r = copy(hvcc, sizeof hvcc);
    REQUIRE(r);
    REQUIRE_OK(io_annexb_init(&a, 1, r, sizeof hvcc));
    free(r);
    static const uint8_t vps[] = {0, 0, 0, 1, 0x40, 0x01};
    CHECK(a.length_size == 4 && a.header_size == sizeof vps &&
          memcmp(a.header, vps, sizeof vps) == 0);
    /* Two units and an empty one, then the same cut at every length. */
    static const uint8_t pkt[] = {0, 0, 0, 3, 0x26, 0x01, 0xaf, 0, 0, 0, 0, 0, 0, 0, 2, 0x02, 0x01};
    static const uint8_t out[] = {0, 0, 0, 1, 0x26, 0x01, 0xaf, 0, 0, 0, 1, 0x02, 0x01};
    const uint8_t *o = NULL;
    size_t n = 0;
    for (int twice = 0; twice < 2; twice++) { /* the buffer is reused */
        uint8_t *p = copy(pkt, sizeof pkt);
        REQUIRE(p);
        REQUIRE_OK(io_annexb_convert(&a, p, sizeof pkt, &o, &n));
        CHECK(n == sizeof out && memcmp(o, out, n) == 0);
        free(p);
    }
    REQUIRE_OK(io_annexb_convert(&a, pkt, 0, &o, &n));
    CHECK(n == 0);
    for (size_t cut = 1; cut < sizeof pkt; cut++) {
        if (cut == 7 || cut == 11) /* whole units: fine */
            continue;
        uint8_t *p = copy(pkt, cut);
        REQUIRE(p);
        CHECK_FAILS(io_annexb_convert(&a, p, cut, &o, &n), OMMA_ERR_FORMAT, "a packet's unit");
        CHECK(o == NULL && n == 0);
        free(p);
    }
    io_annexb_free(&a);
    CHECK(a.buf == NULL && a.header == NULL);
}

#ifdef OMMA_HAVE_LIBAV
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

typedef struct decoder {
    AVCodecContext *c;
    AVFrame *f;
} decoder;

static int open_decoder(decoder *d, const AVCodecParameters *par, int with_record)
{
    const AVCodec *codec = avcodec_find_decoder(par->codec_id);
    d->c = codec ? avcodec_alloc_context3(codec) : NULL;
    d->f = av_frame_alloc();
    if (!d->c || !d->f || avcodec_parameters_to_context(d->c, par) < 0)
        return 0;
    if (!with_record) {
        av_freep(&d->c->extradata);
        d->c->extradata_size = 0;
    }
    d->c->thread_count = 1;
    return avcodec_open2(d->c, codec, NULL) == 0;
}

static void close_decoder(decoder *d)
{
    avcodec_free_context(&d->c);
    av_frame_free(&d->f);
}

/* Sends data (NULL: the end) and appends the frames that come out: each
 * as its planes' rows, packed. */
static int decode(decoder *d, const uint8_t *data, size_t size, uint8_t **frames, size_t *bytes,
                  int *count)
{
    AVPacket *p = av_packet_alloc();
    if (!p)
        return 0;
    int ok = 1;
    if (data && av_new_packet(p, (int)size) == 0)
        memcpy(p->data, data, size);
    else if (data)
        ok = 0;
    ok = ok && avcodec_send_packet(d->c, data ? p : NULL) == 0;
    av_packet_free(&p);
    while (ok && avcodec_receive_frame(d->c, d->f) == 0) {
        const AVFrame *f = d->f;
        int bpp = f->format == AV_PIX_FMT_YUV420P10LE ? 2 : 1;
        size_t row[3] = {(size_t)f->width * bpp, (size_t)(f->width + 1) / 2 * bpp,
                         (size_t)(f->width + 1) / 2 * bpp};
        size_t rows[3] = {(size_t)f->height, (size_t)(f->height + 1) / 2,
                          (size_t)(f->height + 1) / 2};
        size_t add = row[0] * rows[0] + row[1] * rows[1] + row[2] * rows[2];
        uint8_t *grown = realloc(*frames, *bytes + add);
        if (!grown) {
            ok = 0;
            break;
        }
        *frames = grown;
        for (int pl = 0; pl < 3; pl++)
            for (size_t y = 0; y < rows[pl]; y++) {
                memcpy(*frames + *bytes, f->data[pl] + y * (size_t)f->linesize[pl], row[pl]);
                *bytes += row[pl];
            }
        (*count)++;
        av_frame_unref(d->f);
    }
    return ok;
}

/* Decodes name both ways; 1 when every frame is the same. */
static int same_frames(const char *name, int *frames)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CLIPS, name);
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) != 0 ||
        avformat_find_stream_info(fmt, NULL) < 0) {
        fprintf(stderr, "%s: cannot open\n", path);
        avformat_close_input(&fmt);
        return 0;
    }
    int s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    const AVCodecParameters *par = s >= 0 ? fmt->streams[s]->codecpar : NULL;
    decoder plain = {0}, annexb = {0};
    io_annexb a;
    memset(&a, 0, sizeof a);
    uint8_t *want = NULL, *got = NULL;
    size_t want_n = 0, got_n = 0;
    int want_count = 0, got_count = 0,
        ok = par && par->extradata_size > 0 && par->extradata[0] == 1 &&
             open_decoder(&plain, par, 1) && open_decoder(&annexb, par, 0);
    ok = ok && io_annexb_init(&a, par->codec_id == AV_CODEC_ID_HEVC, par->extradata,
                              (size_t)par->extradata_size) == OMMA_OK;
    if (ok)
        fprintf(stderr, "%s: %s, %d-byte lengths, a %zu-byte header\n", name,
                avcodec_get_name(par->codec_id), a.length_size, a.header_size);
    AVPacket *pkt = av_packet_alloc();
    long packets = 0;
    while (ok && pkt && av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index == s) {
            const uint8_t *o = NULL;
            size_t n = 0;
            ok = decode(&plain, pkt->data, (size_t)pkt->size, &want, &want_n, &want_count) &&
                 io_annexb_convert(&a, pkt->data, (size_t)pkt->size, &o, &n) == OMMA_OK;
            if (ok && packets == 0) { /* the header first, as NVDEC's parser gets it */
                uint8_t *first = malloc(a.header_size + n);
                ok = first != NULL;
                if (ok) {
                    memcpy(first, a.header, a.header_size);
                    memcpy(first + a.header_size, o, n);
                    ok = decode(&annexb, first, a.header_size + n, &got, &got_n, &got_count);
                }
                free(first);
            } else if (ok) {
                ok = decode(&annexb, o, n, &got, &got_n, &got_count);
            }
            packets++;
        }
        av_packet_unref(pkt);
    }
    ok = ok && decode(&plain, NULL, 0, &want, &want_n, &want_count) &&
         decode(&annexb, NULL, 0, &got, &got_n, &got_count);
    fprintf(stderr,
            "%s: %ld packets; %d frames from the record, %d from Annex B (%zu, %zu bytes)\n", name,
            packets, want_count, got_count, want_n, got_n);
    ok = ok && want_count > 0 && want_count == got_count && want_n == got_n &&
         memcmp(want, got, want_n) == 0;
    *frames = want_count;
    av_packet_free(&pkt);
    io_annexb_free(&a);
    free(want);
    free(got);
    close_decoder(&plain);
    close_decoder(&annexb);
    avformat_close_input(&fmt);
    return ok;
}

static void decodes_the_same(void)
{
    static const char *const clips[] = {"pan_h264.mp4", "pan_hevc.mp4", "pan_hevc10.mkv"};
    for (size_t i = 0; i < sizeof clips / sizeof *clips; i++) {
        int frames = 0;
        CHECK(same_frames(clips[i], &frames));
        CHECK(frames == 24);
    }
}
#endif

int main(void)
{
    RUN(bad_records);
    RUN(packets);
#ifdef OMMA_HAVE_LIBAV
    struct stat sb;
    if (stat(CLIPS "/pan_h264.mp4", &sb) != 0) {
        int failed = testing_finish();
        if (failed)
            return failed;
        SKIP_TEST("no " CLIPS " (scripts/make-decode-clips.sh makes it)");
    }
    RUN(decodes_the_same);
    return testing_finish();
#else
    int failed = testing_finish();
    if (failed)
        return failed;
    SKIP_TEST("built without FFmpeg: the clips are not decoded");
#endif
}
