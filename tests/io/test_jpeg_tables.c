/* The standard Huffman tables Motion JPEG may leave out (io/jpeg_tables.h):
 * the DHT segment is JPEG's Annex K.3 (its length, the luma DC and AC
 * counts and values); io_jpeg_missing_dht_at finds the scan of a JPEG
 * without tables and nothing in one with them or in junk; and a real
 * frame (the first of testdata/astronaut_pan.mp4, made from the photo)
 * encoded by libavcodec's MJPEG encoder with the standard tables, its DHT
 * segments removed and the standard segment inserted where
 * io_jpeg_missing_dht_at says, decodes to exactly the original's pixels.
 * Skipped (77) without libjpeg or FFmpeg. */
#include <stdlib.h>
#include <string.h>

#include "io/jpeg_tables.h"
#include "testing.h"

#if defined(OMMA_HAVE_JPEG) && defined(OMMA_HAVE_LIBAV)
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>

static void annex_k(void)
{
    size_t n = 0;
    const uint8_t *d = io_jpeg_std_dht(&n);
    REQUIRE(d != NULL);
    /* 4 bytes of marker and length, 4 x (class/id + 16 counts), 12 + 162
     * + 12 + 162 values. */
    CHECK(n == 420);
    CHECK(d[0] == 0xff && d[1] == 0xc4 && (d[2] << 8 | d[3]) == 418);
    static const uint8_t dc_luma[17] = {0x00, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(d + 4, dc_luma, 17) == 0);
    for (int i = 0; i < 12; i++)
        CHECK(d[4 + 17 + i] == i);
    static const uint8_t ac_luma[17] = {0x10, 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d};
    CHECK(memcmp(d + 4 + 29, ac_luma, 17) == 0);
    static const uint8_t ac_luma_first[6] = {0x01, 0x02, 0x03, 0x00, 0x04, 0x11};
    CHECK(memcmp(d + 4 + 29 + 17, ac_luma_first, 6) == 0);
    CHECK(d[4 + 29 + 179] == 0x01); /* DC chroma: class 0, id 1 */
    CHECK(d[4 + 29 + 179 + 29] == 0x11); /* AC chroma: class 1, id 1 */
    size_t again = 0;
    CHECK(io_jpeg_std_dht(&again) == d && again == n);
}

static void finds_the_scan(void)
{
    static const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(io_jpeg_missing_dht_at(junk, sizeof junk) == 0);
    CHECK(io_jpeg_missing_dht_at(NULL, 10) == 0);
    /* SOI, a 4-byte APP0, SOS: the scan at 8. */
    static const uint8_t bare[] = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0xaa,
                                   0xbb, 0xff, 0xda, 0x00, 0x02, 0x12, 0x34};
    CHECK(io_jpeg_missing_dht_at(bare, sizeof bare) == 8);
    CHECK(io_jpeg_missing_dht_at(bare, 8) == 0); /* cut before its scan */
    static const uint8_t with[] = {0xff, 0xd8, 0xff, 0xc4, 0x00, 0x02, 0xff, 0xda, 0x00, 0x02};
    CHECK(io_jpeg_missing_dht_at(with, sizeof with) == 0);
    static const uint8_t broken[] = {0xff, 0xd8, 0x00, 0xe0, 0x00, 0x04, 0xff, 0xda, 0, 2};
    CHECK(io_jpeg_missing_dht_at(broken, sizeof broken) == 0);
}

/* The first frame of the clip, decoded. */
static AVFrame *first_frame(const char *path)
{
    AVFormatContext *fmt = NULL;
    AVFrame *fr = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    AVCodecContext *dec = NULL;
    int got = 0;
    if (fr && pkt && avformat_open_input(&fmt, path, NULL, NULL) == 0 &&
        avformat_find_stream_info(fmt, NULL) >= 0) {
        const AVCodec *codec = NULL;
        int s = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
        dec = s >= 0 && codec ? avcodec_alloc_context3(codec) : NULL;
        if (dec && avcodec_parameters_to_context(dec, fmt->streams[s]->codecpar) >= 0 &&
            avcodec_open2(dec, codec, NULL) == 0)
            while (!got && av_read_frame(fmt, pkt) >= 0) {
                if (pkt->stream_index == s && avcodec_send_packet(dec, pkt) == 0)
                    got = avcodec_receive_frame(dec, fr) == 0;
                av_packet_unref(pkt);
            }
    }
    avcodec_free_context(&dec);
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
    if (!got)
        av_frame_free(&fr);
    return fr;
}

/* Decodes one JPEG with libavcodec into a fresh frame. */
static AVFrame *decode_jpeg(const uint8_t *data, size_t size)
{
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG);
    AVCodecContext *dec = codec ? avcodec_alloc_context3(codec) : NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    int ok = dec && pkt && fr && avcodec_open2(dec, codec, NULL) == 0 &&
             av_new_packet(pkt, (int)size) == 0;
    if (ok) {
        memcpy(pkt->data, data, size);
        ok = avcodec_send_packet(dec, pkt) == 0 && avcodec_receive_frame(dec, fr) == 0;
    }
    avcodec_free_context(&dec);
    av_packet_free(&pkt);
    if (!ok)
        av_frame_free(&fr);
    return fr;
}

static int same_pixels(const AVFrame *a, const AVFrame *b)
{
    if (a->width != b->width || a->height != b->height || a->format != b->format)
        return 0;
    for (int p = 0; p < 3; p++) {
        int h = p ? (a->height + 1) / 2 : a->height, w = p ? (a->width + 1) / 2 : a->width;
        for (int y = 0; y < h; y++)
            if (memcmp(a->data[p] + (size_t)y * a->linesize[p],
                       b->data[p] + (size_t)y * b->linesize[p], (size_t)w) != 0)
                return 0;
    }
    return 1;
}

static void tables_put_back(void)
{
    AVFrame *src = first_frame(OMMA_TESTDATA_DIR "/astronaut_pan.mp4");
    if (!src) {
        fprintf(stderr, "no " OMMA_TESTDATA_DIR "/astronaut_pan.mp4 (scripts/fetch-testdata.sh): "
                        "the round trip is left out\n");
        return;
    }
    REQUIRE(src->format == AV_PIX_FMT_YUV420P);
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
    REQUIRE(codec != NULL);
    AVCodecContext *enc = avcodec_alloc_context3(codec);
    REQUIRE(enc != NULL);
    enc->width = src->width;
    enc->height = src->height;
    enc->pix_fmt = AV_PIX_FMT_YUVJ420P;
    enc->time_base = (AVRational){1, 15};
    enc->flags |= AV_CODEC_FLAG_QSCALE;
    enc->global_quality = FF_QP2LAMBDA * 3;
    REQUIRE(av_opt_set(enc->priv_data, "huffman", "default", 0) == 0);
    REQUIRE(avcodec_open2(enc, codec, NULL) == 0);
    src->pts = 0;
    AVPacket *pkt = av_packet_alloc();
    REQUIRE(pkt && avcodec_send_frame(enc, src) == 0 && avcodec_receive_packet(enc, pkt) == 0);
    fprintf(stderr, "a %dx%d frame as a JPEG of %d bytes\n", src->width, src->height, pkt->size);
    CHECK(io_jpeg_missing_dht_at(pkt->data, (size_t)pkt->size) == 0); /* it has tables */

    /* Without its DHT segments (as a webcam sends it). */
    size_t n = (size_t)pkt->size, m = 2, at = 2;
    uint8_t *bare = malloc(n);
    REQUIRE(bare != NULL);
    memcpy(bare, pkt->data, 2);
    int removed = 0;
    while (at + 4 <= n && pkt->data[at] == 0xff && pkt->data[at + 1] != 0xda) {
        size_t len = 2 + ((size_t)pkt->data[at + 2] << 8 | pkt->data[at + 3]);
        if (pkt->data[at + 1] == 0xc4)
            removed++;
        else
            memcpy(bare + m, pkt->data + at, len), m += len;
        at += len;
    }
    memcpy(bare + m, pkt->data + at, n - at);
    m += n - at;
    CHECK(removed >= 1);
    size_t scan = io_jpeg_missing_dht_at(bare, m);
    CHECK(scan > 2 && bare[scan] == 0xff && bare[scan + 1] == 0xda);

    /* The standard tables put back where it says: the same pixels. */
    size_t dn = 0;
    const uint8_t *dht = io_jpeg_std_dht(&dn);
    uint8_t *fixed = malloc(m + dn);
    REQUIRE(fixed && dht);
    memcpy(fixed, bare, scan);
    memcpy(fixed + scan, dht, dn);
    memcpy(fixed + scan + dn, bare + scan, m - scan);
    CHECK(io_jpeg_missing_dht_at(fixed, m + dn) == 0);
    AVFrame *a = decode_jpeg(pkt->data, n), *b = decode_jpeg(fixed, m + dn);
    CHECK(a && b && same_pixels(a, b));
    av_frame_free(&a);
    av_frame_free(&b);
    free(fixed);
    free(bare);
    av_packet_free(&pkt);
    avcodec_free_context(&enc);
    av_frame_free(&src);
}

int main(void)
{
    RUN(annex_k);
    RUN(finds_the_scan);
    RUN(tables_put_back);
    return testing_finish();
}
#else
int main(void)
{
    size_t n = 1;
    if (io_jpeg_std_dht(&n) != NULL || n != 0)
        return 1; /* without libjpeg there are no tables */
    SKIP_TEST("built without libjpeg or FFmpeg");
}
#endif
