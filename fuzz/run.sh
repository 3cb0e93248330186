#!/bin/sh
# Builds one of omma's libFuzzer targets with clang (ASan + UBSan) and runs it
# for a while from its seeds. Fails when a crash, leak, timeout or invariant
# violation is found (the input is kept under BUILD/fuzz-TARGET/). Exit 77
# (skipped) where clang's libFuzzer or a seed source is missing.
#   fuzz/run.sh SOURCE_DIR BUILD_DIR SECONDS [tflite|image|bus|video]
#     tflite: the TFLite reader, seeded from the three models and the small
#             forged models in fuzz/seeds/
#     image:  the PNG/JPEG decoders, seeded from small images written by
#             fuzz/make_image_seeds.c
#     bus:    the frame bus's control-message decoder, seeded from one
#             message of each type written by fuzz/make_bus_seeds.c
#     video:  the video reader (FFmpeg's demuxers and decoders, CPU), seeded
#             from tiny clips of testdata/astronaut.png made here with ffmpeg
#             (MPEG-4 AVI, H.264 MP4 and MPEG-TS, HEVC MKV, MJPEG AVI)
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
    for m in face_detection_short_range face_detection_full_range face_landmark; do
        if [ ! -f "$src/models/$m.tflite" ]; then
            echo "SKIP: $src/models/$m.tflite missing (scripts/fetch-models.sh)"
            exit 77
        fi
        cp "$src/models/$m.tflite" "$out/seeds/"
    done
    # small forged models (tests/model/test_tflite_forge.c), ~600 bytes each
    cp "$src"/fuzz/seeds/*.seed "$out/seeds/"
    sources="$src/fuzz/fuzz_tflite.c $src/src/model/tflite.c $src/src/model/flatbuffer.c"
    libs=""
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
    libs="-DOMMA_HAVE_JPEG=1 $libs"
    ;;
bus)
    if ! "$cc" -std=c11 -O1 -Wall -Wextra -Werror -I"$src/include" -I"$src/src" \
        "$src/fuzz/make_bus_seeds.c" "$src/src/ipc/bus_proto.c" "$src/src/core/status.c" \
        -o "$out/make_bus_seeds" || ! "$out/make_bus_seeds" "$out/seeds"; then
        echo "FAIL: could not make the bus message seeds"
        exit 1
    fi
    sources="$src/fuzz/fuzz_bus_proto.c $src/src/ipc/bus_proto.c"
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
    # CPU decoding only: the GPU part is video_gpu_none.c here; clock.c for
    # the decoder's time counters (io_video_stats).
    sources="$src/fuzz/fuzz_video.c $src/src/io/video_file.c $src/src/io/video_gpu_none.c
        $src/src/core/clock.c"
    libs="-DOMMA_HAVE_LIBAV=1 $(pkg-config --cflags --libs libavformat libavcodec libavutil libswscale)"
    ;;
*)
    echo "fuzz/run.sh: unknown target '$target' (tflite, image, bus or video)" >&2
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
# -rss_limit_mb bounds memory per input; -timeout catches hangs.
cd "$out"
status=0
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/" corpus seeds >"$out/fuzz.log" 2>&1 || status=$?
grep -v '^"\|^#\|^###' "$out/fuzz.log" | tail -n 60
if [ "$status" -ne 0 ]; then
    echo "FAIL: the fuzzer found a problem (exit $status); the input is in $out/ (crash-*, leak-*, timeout-*)"
    exit 1
fi
echo "ok: no problem found; $(grep 'stat::number_of_executed_units' "$out/fuzz.log")"
