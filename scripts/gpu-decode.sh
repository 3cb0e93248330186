#!/usr/bin/env bash
# GPU decoding on the GPU machine (no FFmpeg, no encoders, no network):
# builds FFmpeg with NVDEC (scripts/device-ffmpeg.sh, from the files of
# scripts/fetch-device-ffmpeg.sh carried in .cache/device-ffmpeg), omma
# against it (sm_90, Release), then runs the parts asked for:
#   tests     ctest on the decoding tests (test_video_gpu, test_decode_gpu,
#             test_cli_decode_gpu; MJPEG with nvJPEG: test_jpeg_gpu,
#             test_cli_decode_jpeg)
#             and TESTS (a ctest regex) when set
#   sanitize  the decoding tests under compute-sanitizer memcheck
#   bench     omma bench decode (H.264 and HEVC 1080p30) with its peers:
#             FFmpeg's NVDEC decode-only limit and omma --decode cpu
#   mjpeg     omma bench decode on 1080p30 4:2:2 MJPEG (nvJPEG) with
#             --decode gpu and --decode cpu, STREAMS cameras (default 8)
# The clips come from scripts/make-decode-clips.sh, made beforehand on a
# machine with Debian's ffmpeg and carried in testdata/decode. Logs and a
# summary go to OUTDIR.
#   usage: PARTS="tests sanitize bench" scripts/gpu-decode.sh OUTDIR
set -u
OUT=${1:?usage: scripts/gpu-decode.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
PARTS=${PARTS:-tests}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
failed=0
step() { printf '%-44s %-4s %s\n' "$1" "$2" "${3:-}" | tee -a "$SUMMARY"; [ "$2" != FAIL ] || failed=1; }
has() { [[ " $PARTS " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$SUMMARY"
if env_line=$("$ROOT/scripts/device-ffmpeg.sh" "$ROOT/.cache/device-ffmpeg" 2>"$OUT/ffmpeg.log"); then
    eval "$env_line"
    step "FFmpeg with NVDEC" PASS "$(ffmpeg -version | head -n 1)"
else
    step "FFmpeg with NVDEC" FAIL "see ffmpeg.log"
    exit 1
fi
if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DOMMA_FAULT_INJECTION=ON >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j "$(nproc)" >>"$OUT/build.log" 2>&1; then
    step "build (Release, sm_90)" PASS
else
    step "build (Release, sm_90)" FAIL "see build.log"
    tail -n 30 "$OUT/build.log"
    exit 1
fi
regex="test_video_gpu|test_decode_gpu|test_cli_decode_gpu|test_jpeg_gpu|test_cli_decode_jpeg${TESTS:+|$TESTS}"
if has tests; then
    if (cd "$BUILD" && ctest -R "$regex" --output-on-failure --timeout 400) >"$OUT/tests.log" 2>&1; then
        step "ctest -R '$regex'" PASS "$(grep -E 'tests passed' "$OUT/tests.log")"
    else
        step "ctest -R '$regex'" FAIL "$(grep -E 'tests passed|Failed|\*\*\*' "$OUT/tests.log" | tr '\n' ' ')"
    fi
fi
if has sanitize; then
    for t in io/test_video_gpu runtime/test_decode_gpu io/test_jpeg_gpu; do
        if compute-sanitizer --tool memcheck --error-exitcode 1 "$BUILD/tests/$t" \
            >"$OUT/memcheck-${t#*/}.log" 2>&1; then
            step "memcheck ${t#*/}" PASS "$(tail -n 1 "$OUT/memcheck-${t#*/}.log")"
        else
            step "memcheck ${t#*/}" FAIL "$(tail -n 1 "$OUT/memcheck-${t#*/}.log")"
        fi
    done
fi
if has bench; then
    "$ROOT/scripts/bench-decode-peers.sh" "$BUILD/omma" "$ROOT/testdata/decode" "$OUT" ||
        step "bench decode" FAIL "see bench-decode.log"
fi
if has mjpeg; then
    for mode in gpu cpu; do
        if "$BUILD/omma" bench decode --input "$ROOT/testdata/decode/pan1080_mjpeg422.avi" \
            --decode $mode --streams "${STREAMS:-8}" >"$OUT/bench-mjpeg-$mode.log" 2>&1; then
            step "bench decode mjpeg --decode $mode" PASS "$(grep -E '^\{' "$OUT/bench-mjpeg-$mode.log" | tail -n 1)"
        else
            step "bench decode mjpeg --decode $mode" FAIL "see bench-mjpeg-$mode.log"
        fi
    done
fi
exit $failed
