#!/bin/sh
# Builds one of omma's libFuzzer targets with clang (ASan + UBSan) and runs it
# for a while from its seeds. Fails when a crash, leak, timeout or invariant
# violation is found (the input is kept under BUILD/fuzz-TARGET/). Exit 77
# (skipped) where clang's libFuzzer or a seed source is missing.
#   fuzz/run.sh SOURCE_DIR BUILD_DIR SECONDS [tflite|image|bus|video|lsl|config|ui|record|cluster|geometry|annexb]
#     tflite: the TFLite reader, seeded from the face models, pose_detection
#             (sparse constants), pose_landmark_lite, the attention mesh and
#             the small forged models in fuzz/seeds/
#     image:  the PNG/JPEG decoders, seeded from small images written by
#             fuzz/make_image_seeds.c
#     bus:    the frame bus's control-message decoder, seeded from one
#             message of each type written by fuzz/make_bus_seeds.c
#     video:  the video reader (FFmpeg's demuxers and decoders, CPU), seeded
#             from tiny clips of testdata/astronaut.png made here with ffmpeg
#             (MPEG-4 AVI, H.264 MP4 and MPEG-TS, HEVC MKV, MJPEG AVI)
#     lsl:    the parsers of LSL network input (discovery queries, <info>
#             documents, streamfeed headers), seeded with what liblsl sends
#     config: omma stream --config's JSON files (json-c and the key
#             locator), seeded with a full file and two bad ones
#     ui:     the live view's parsers of request input (paths, camera lists,
#             tokens, --ui's value), seeded with what its page sends
#     cluster: the cluster's bucket values (cameras, heartbeats, owners) and
#             its URL, seeded with what omma writes
#     geometry: the face geometry metadata reader (protobuf wire format),
#             seeded with MediaPipe's geometry_pipeline_metadata_landmarks.binarypb
#     annexb: MP4's H.264 / HEVC to Annex B for NVDEC (the avcC / hvcC
#             record and the packets), seeded with a small record and
#             packets of each
set -eu
src=${1:?source dir}
build=${2:?build dir}
seconds=${3:-60}
target=${4:-tflite}
out=$build/fuzz-$target
mkdir -p "$out/corpus" "$out/seeds"

cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "SKIP: $cc not found (apt-get install clang)"
    exit 77
fi

case $target in
tflite)
    for m in face_detection_short_range face_detection_full_range face_landmark pose_detection \
        pose_landmark_lite face_landmark_with_attention; do
        if [ ! -f "$src/models/$m.tflite" ]; then
            echo "SKIP: $src/models/$m.tflite missing (scripts/fetch-models.sh)"
            exit 77
        fi
        cp "$src/models/$m.tflite" "$out/seeds/"
    done
    # small forged models (tests/model/test_tflite_forge.c), ~600 bytes each
    cp "$src"/fuzz/seeds/*.seed "$out/seeds/"
    sources="$src/fuzz/fuzz_tflite.c $src/src/model/tflite.c $src/src/model/flatbuffer.c"
    sources="$sources $src/src/model/flexbuffer.c"
    libs="-lm"
    ;;
image)
    if ! pkg-config --exists libpng libjpeg; then
        echo "SKIP: libpng or libjpeg not found by pkg-config"
        exit 77
    fi
    libs="$(pkg-config --cflags --libs libpng libjpeg)"
    # shellcheck disable=SC2086
    if ! "$cc" -std=c11 -O1 -Wall -Wextra -Werror "$src/fuzz/make_image_seeds.c" $libs \
        -o "$out/make_image_seeds" || ! "$out/make_image_seeds" "$out/seeds"; then
        echo "FAIL: could not make the image seeds"
        exit 1
    fi
    sources="$src/fuzz/fuzz_image.c $src/src/io/image_file.c $src/src/io/image_png.c"
    sources="$sources $src/src/io/image_jpeg.c"
    sources="$sources $src/src/io/jpeg_tables.c"
    libs="-DOMMA_HAVE_JPEG=1 $libs"
    ;;
bus)
    if ! "$cc" -std=c11 -O1 -Wall -Wextra -Werror -I"$src/include" -I"$src/src" \
        "$src/fuzz/make_bus_seeds.c" "$src/src/ipc/bus_proto.c" "$src/src/ipc/bus_board.c" "$src/src/core/status.c" \
        -o "$out/make_bus_seeds" || ! "$out/make_bus_seeds" "$out/seeds"; then
        echo "FAIL: could not make the bus message seeds"
        exit 1
    fi
    sources="$src/fuzz/fuzz_bus_proto.c $src/src/ipc/bus_proto.c $src/src/ipc/bus_board.c"
    libs=""
    ;;
video)
    if ! pkg-config --exists libavformat libavcodec libavutil libswscale; then
        echo "SKIP: FFmpeg's libraries not found by pkg-config"
        exit 77
    fi
    if ! command -v ffmpeg >/dev/null 2>&1; then
        echo "SKIP: ffmpeg not found (scripts/install-deps.sh installs it)"
        exit 77
    fi
    photo=$src/testdata/astronaut.png
    if [ ! -f "$photo" ]; then
        echo "SKIP: $photo missing (scripts/fetch-testdata.sh)"
        exit 77
    fi
    # 64x48, 6 frames, a key frame every 3: small inputs, many runs a second.
    for clip in "mpeg4.avi:-c:v mpeg4 -g 3" \
        "h264.mp4:-c:v libx264 -preset veryfast -g 3 -pix_fmt yuv420p" \
        "h264.ts:-c:v libx264 -preset veryfast -g 3 -pix_fmt yuv420p -f mpegts" \
        "hevc.mkv:-c:v libx265 -x265-params log-level=error:keyint=3 -pix_fmt yuv420p" \
        "mjpeg.avi:-c:v mjpeg -pix_fmt yuvj420p"; do
        name=${clip%%:*}
        [ -s "$out/seeds/$name" ] && continue
        # shellcheck disable=SC2086
        if ! ffmpeg -nostdin -hide_banner -loglevel error -y -loop 1 -framerate 15 -i "$photo" \
            -vf "scale=96:72,crop=64:48:x='4*n':y=12" -frames:v 6 ${clip#*:} \
            "$out/seeds/$name"; then
            echo "FAIL: ffmpeg could not make the seed $name"
            exit 1
        fi
    done
    # CPU decoding only (no OMMA_HAVE_NVDEC: GPU decoding is refused).
    sources="$src/fuzz/fuzz_video.c $src/src/io/video_file.c $src/src/io/video_net.c"
    sources="$sources $src/src/io/recorder.c"
    sources="$sources $src/src/core/clock.c"
    libs="-DOMMA_HAVE_LIBAV=1 $(pkg-config --cflags --libs libavformat libavcodec libavutil libswscale)"
    ;;
lsl)
    # The first byte picks the parser (fuzz/fuzz_lsl.c).
    printf "\000session_id='default' and name='cam0_landmarks'" >"$out/seeds/query"
    printf "\000(type='EEG' or starts-with(name,'cam')) and not(channel_count!=1417)" \
        >"$out/seeds/query2"
    printf '\001<?xml version="1.0"?>\n<info>\n\t<name>BioSemi</name>\n\t<type>EEG</type>\n\t<channel_count>8</channel_count>\n\t<channel_format>float32</channel_format>\n\t<source_id>s&amp;1</source_id>\n\t<nominal_srate>100.000000000000000</nominal_srate>\n\t<version>1.1000000000000001</version>\n\t<created_at>2063.91</created_at>\n\t<uid>0b2ab4e4-7d1c-4e4c-8f0a-5d0f4b7c6a3e</uid>\n\t<session_id>default</session_id>\n\t<hostname>lab</hostname>\n\t<v4address />\n\t<v4data_port>16573</v4data_port>\n\t<v4service_port>16572</v4service_port>\n\t<desc><channels><channel><label>C3</label></channel></channels></desc>\n</info>\n' \
        >"$out/seeds/info"
    printf '\002LSL:streamfeed/110 0b2ab4e4-7d1c-4e4c-8f0a-5d0f4b7c6a3e\r\nNative-Byte-Order: 1234\r\nEndian-Performance: 2.5e+09\r\nHas-IEEE754-Floats: 1\r\nSupports-Subnormals: 0\r\nValue-Size: 4\r\nData-Protocol-Version: 110\r\nMax-Buffer-Length: 10800\r\nMax-Chunk-Length: 0\r\n\r\n' \
        >"$out/seeds/request"
    printf '\002LSL:streamfeed\r\n360 0\r\n' >"$out/seeds/request100"
    printf '\003LSL/110 200 OK\r\nUID: abc\r\nByte-Order: 1234\r\nSuppress-Subnormals: 0\r\nData-Protocol-Version: 110\r\n\r\n' \
        >"$out/seeds/response"
    sources="$src/fuzz/fuzz_lsl.c $src/src/lsl/lsl_xml.c $src/src/lsl/lsl_info.c"
    sources="$sources $src/src/lsl/lsl_query.c $src/src/lsl/lsl_feed.c"
    libs="-lm"
    ;;
config)
    # omma stream --config's JSON (fuzz/fuzz_config.c), with json-c.
    if ! pkg-config --exists json-c; then
        echo "SKIP: json-c not found by pkg-config (libjson-c-dev)"
        exit 77
    fi
    cat >"$out/seeds/full.json" <<'JSON'
{
  "backend": "cpu", "fps": 30, "loop": true, "graphs": false,
  "cameras": [{"source": "a.mp4", "name": "left", "fps": 30, "resolution": "1280x720"},
              "b.mp4"],
  "participants": [{"name": "ann", "camera": "left", "region": [0, 0, 0.5, 1]},
                   {"name": "bob", "camera": 1}, "cy=left:0,0,10,10px"],
  "regions": {"bob": {"pixels": [0, 0, 640, 720]}},
  "outputs": {"lsl": {"bind": "0.0.0.0"}, "data": "out", "sink": ["nats://h/x", "mqtt://h"]},
  "thresholds": {"min-score": 0.6}
}
JSON
    printf '{"fps": "x",
 "cameras": [{"name": "a"}]}' >"$out/seeds/bad.json"
    printf '{
  "regions": {"z": [1, 2]},
  "lsl": tru }' >"$out/seeds/syntax.json"
    sources="$src/fuzz/fuzz_config.c $src/src/cli/stream_config.c $src/src/cli/args.c"
    sources="$sources $src/src/core/log.c"
    libs="-DOMMA_HAVE_JSONC=1 -DOMMA_DEFAULT_DATA_DIR=\"$src\" $(pkg-config --cflags --libs json-c) -lm"
    ;;
ui)
    # The first byte picks the parser (fuzz/fuzz_ui.c).
    printf '\000/api/preview/3.jpg' >"$out/seeds/path"
    printf '\000/../etc/passwd' >"$out/seeds/traversal"
    printf '\000/api/events' >"$out/seeds/events"
    printf '\0010,1,2,3,17,23' >"$out/seeds/cams"
    printf '\002Bearer abcdefghijklmnop_-0123' >"$out/seeds/bearer"
    printf '\002a=b; omma_token=abcdefghijklmnop_-0123; c=d' >"$out/seeds/cookie"
    printf '\003[::1]:8080' >"$out/seeds/listen6"
    printf '\0030.0.0.0:9000' >"$out/seeds/listen4"
    sources="$src/fuzz/fuzz_ui.c $src/src/ui/ui_request.c"
    libs=""
    ;;
record)
    # The first byte picks the parser (fuzz/fuzz_record.c); the build
    # without FFmpeg: the parsers need none.
    printf "\00010m" >"$out/seeds/minutes"
    printf "\0001.5GiB" >"$out/seeds/size"
    printf "\001{participant}-{camera}_{start}_{{x}}{segment}.mkv" >"$out/seeds/name"
    sources="$src/fuzz/fuzz_record.c $src/src/io/recorder.c"
    libs="-lm"
    ;;
cluster)
    # The first byte picks the parser (fuzz/fuzz_cluster.c).
    printf '\000source=rtsp://cam.local/1\nmax_frames=30\n' >"$out/seeds/camera"
    printf '\000# a comment\n\nsource=synthetic' >"$out/seeds/camera2"
    printf '\001weight=4\ncameras=3\ndraining=0\n' >"$out/seeds/node"
    printf '\002node=edge-3\n' >"$out/seeds/owner"
    printf '\003nats://u:p@127.0.0.1:4222,h2,[::1]:4223/fleet?lease_ms=2000&replicas=3&storage=memory' \
        >"$out/seeds/url"
    sources="$src/fuzz/fuzz_cluster.c $src/src/cluster/cluster_value.c"
    sources="$sources $src/src/cluster/cluster_url.c"
    libs=""
    ;;
geometry)
    if [ ! -f "$src/models/geometry_pipeline_metadata_landmarks.binarypb" ]; then
        echo "SKIP: $src/models/geometry_pipeline_metadata_landmarks.binarypb missing (scripts/fetch-models.sh)"
        exit 77
    fi
    cp "$src/models/geometry_pipeline_metadata_landmarks.binarypb" "$out/seeds/landmarks"
    sources="$src/fuzz/fuzz_geometry.c $src/src/vision/geometry_metadata.c"
    libs="-lm"
    ;;
annexb)
    # fuzz/fuzz_annexb.c: a codec byte, the record after its 2-byte size,
    # then packets after theirs.
    printf '\000\000\015\001\144\000\037\377\341\000\001\147\001\000\001\150\000\021\000\000\000\003\145\210\200\000\000\000\000\000\000\000\002\006\005' \
        >"$out/seeds/avcc"
    printf '\001\000\036\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\015\001\040\000\001\000\002\100\001\000\007\000\003\046\001\257\000\000' \
        >"$out/seeds/hvcc"
    sources="$src/fuzz/fuzz_annexb.c $src/src/io/annexb.c"
    libs=""
    ;;
*)
    echo "fuzz/run.sh: unknown target '$target' (tflite, image, bus, video, lsl, config, ui, record, cluster, geometry or annexb)" >&2
    exit 2
    ;;
esac

bin=$out/fuzz_$target
# shellcheck disable=SC2086
if ! "$cc" -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -fno-omit-frame-pointer -Wall -Wextra -Werror \
        -I"$src/include" -I"$src/src" $sources "$src/src/core/status.c" $libs \
        -o "$bin" 2>"$out/build.log"; then
    if grep -q "fuzzer" "$out/build.log" && grep -qi "cannot find\|no such file\|unsupported" "$out/build.log"; then
        cat "$out/build.log"
        echo "SKIP: $cc cannot link libFuzzer"
        exit 77
    fi
    cat "$out/build.log"
    exit 1
fi

# New inputs go to corpus/ (kept between runs); seeds/ is read only.
# -rss_limit_mb bounds memory per input; -timeout catches hangs. The video
# target gets 4 GiB: FFmpeg's demuxers allocate what headers claim before
# reading (an 18 KB AVI whose stream format chunks claim 118 MB each made
# libavformat allocate 2.1 GB in avformat_open_input, then fail cleanly);
# that is FFmpeg's, and our reader's robustness is what is fuzzed here.
rss_mb=2048
[ "$target" = video ] && rss_mb=4096
cd "$out"
status=0
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=$rss_mb -print_final_stats=1 \
    -artifact_prefix="$out/" corpus seeds >"$out/fuzz.log" 2>&1 || status=$?
grep -v '^"\|^#\|^###' "$out/fuzz.log" | tail -n 60
if [ "$status" -ne 0 ]; then
    echo "FAIL: the fuzzer found a problem (exit $status); the input is in $out/ (crash-*, leak-*, timeout-*)"
    exit 1
fi
echo "ok: no problem found; $(grep 'stat::number_of_executed_units' "$out/fuzz.log")"
