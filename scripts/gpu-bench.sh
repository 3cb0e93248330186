#!/usr/bin/env bash
# The engine benchmarks on the GPU machine, with the PyTorch peer side by
# side in the same run: `omma bench engine` for the three models (fp16 graphs
# on and off, fp32), then, when a peers folder is given, the peer's
# torch.compile figures (../shared/peers, copied into the repo because
# ../shared does not travel). Results as JSON lines and logs in OUTDIR.
#
# usage: scripts/gpu-bench.sh OUTDIR [PEERS_DIR]
#   BUILD_DIR  build folder with the omma binary (default build-gpu; built
#              here for sm_90 when missing)
set -u
OUT=${1:?usage: scripts/gpu-bench.sh OUTDIR [PEERS_DIR]}
PEERS=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
failed=0

if [ ! -x "$BUILD/omma" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/bench-build.log" 2>&1 &&
        cmake --build "$BUILD" -j "$(nproc)" --target omma_cli >>"$OUT/bench-build.log" 2>&1 ||
        { echo "gpu-bench: build failed (see bench-build.log)"; exit 1; }
fi

models="face_detection_short_range face_detection_full_range face_landmark"
for cfg in "fp16 on" "fp16 off" "fp32 on"; do
    set -- $cfg
    for m in $models; do
        if ! timeout 120 "$BUILD/omma" bench engine --backend gpu --model "$ROOT/models/$m.tflite" \
            --precision "$1" --graphs "$2" --batch 1,8,32,128,512 --iters 100 --warmup 10 --json \
            >>"$OUT/engine.jsonl" 2>>"$OUT/engine.txt"; then
            echo "gpu-bench: omma bench engine $m $1 graphs $2 failed"
            failed=1
        fi
    done
done
cat "$OUT/engine.txt"

if [ -n "$PEERS" ]; then
    assets=$(mktemp -d)
    cp "$ROOT"/models/*.tflite "$ROOT/testdata/astronaut.png" "$assets/"
    PYTHONUNBUFFERED=1 PEER_ASSETS=$assets timeout 300 python3 "$PEERS/bench_peers.py" \
        --part compile --out "$OUT" >"$OUT/peers-compile.log" 2>&1 ||
        { echo "gpu-bench: peer compile benchmark failed (see peers-compile.log)"; failed=1; }
    tail -n 20 "$OUT/peers-compile.log"
    rm -rf "$assets"
fi
exit $failed
