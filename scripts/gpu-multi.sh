#!/usr/bin/env bash
# The multi-GPU checks, on a machine with two GPUs or more (kind
# nvidia-h200-x2): build, the runtime's GPU test (its two-GPU part runs
# there: the same frames give bitwise the same results whichever GPU ran
# them), then throughput on GPU 0 alone and on GPUs 0 and 1 with more
# synthetic cameras than one GPU keeps up with (frames processed per second;
# the ratio is printed), then the most GPU-decoded cameras on GPU 0 and on
# both (omma bench decode). NVLink multicast is not used. Logs in OUTDIR.
# Not yet scripted: the frame bus with cameras on both GPUs.
#
# usage: scripts/gpu-multi.sh OUTDIR
#   BUILD_DIR  build folder (default build-gpu)
#   MULTI_ARGS the overload (default: 1500 cameras at 120 fps, 1080p)
set -u
OUT=${1:?usage: scripts/gpu-multi.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
failed=0
nvidia-smi -L >"$OUT/gpus.txt" 2>&1
if ! { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 -DOMMA_FAULT_INJECTION=ON &&
    cmake --build "$BUILD" -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
    echo "gpu-multi: build failed (see build.log)"
    exit 1
fi
if (cd "$BUILD" && ctest -R '^test_runtime_gpu$' --output-on-failure) >"$OUT/test.log" 2>&1; then
    echo "test_runtime_gpu (two GPUs)       PASS $(grep -o '2 GPU(s):.*' "$OUT/test.log" | head -n 1)"
else
    echo "test_runtime_gpu (two GPUs)       FAIL (see test.log)"
    failed=1
fi
args=${MULTI_ARGS:---cameras 1500 --fps 120 --cameras-per-thread 32}
for gpus in 0 0,1; do
    echo "== omma bench runtime $args --gpus $gpus" >>"$OUT/bench.txt"
    timeout 300 "$BUILD/omma" bench runtime $args --gpus "$gpus" --warmup 3 --duration 10 --json \
        >>"$OUT/bench.jsonl" 2>>"$OUT/bench.txt" || failed=1
done
cat "$OUT/bench.txt"
awk -F'"frames_per_s":' 'NF > 1 { split($2, v, ","); f[n++] = v[1] }
    END { if (n == 2 && f[0] > 0) printf "two GPUs / one: %.2fx (%.0f vs %.0f frames/s)\n",
          f[1] / f[0], f[1], f[0] }' "$OUT/bench.jsonl" | tee "$OUT/ratio.txt"
# GPU decoding on both GPUs' decoders (issue 27): the most 1080p30 H.264
# cameras decoded on the GPU and run through the pipeline, one GPU vs two
# (needs FFmpeg: on the GPU machine, build it first with
# scripts/device-ffmpeg.sh and the clips of scripts/make-decode-clips.sh).
clip=$ROOT/testdata/decode/pan1080_h264.mp4
if [ -f "$clip" ] && "$BUILD/omma" bench decode --help >/dev/null 2>&1; then
    for gpus in 0 0,1; do
        echo "== omma bench decode --decode gpu --gpus $gpus" >>"$OUT/decode.txt"
        timeout 500 "$BUILD/omma" bench decode --decode gpu --input "$clip" --gpus "$gpus" \
            --streams max --warmup 2 --duration 5 --json >>"$OUT/decode.jsonl" \
            2>>"$OUT/decode.txt" || failed=1
    done
    cat "$OUT/decode.txt"
    awk -F'"max_streams":' 'NF > 1 { split($2, v, "}"); m[n++] = v[1] }
        END { if (n == 2 && m[0] > 0) printf "decode: two GPUs / one: %.2fx (%d vs %d cameras)\n",
              m[1] / m[0], m[1], m[0] }' "$OUT/decode.jsonl" | tee -a "$OUT/ratio.txt"
else
    echo "decode: skipped (no $clip, or omma without FFmpeg)" | tee -a "$OUT/ratio.txt"
fi
exit $failed
