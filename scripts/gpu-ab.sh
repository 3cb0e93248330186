#!/usr/bin/env bash
# A kernel change measured against a base tree on the GPU machine, in one
# call: both trees built (Release, sm_90), every output of the models
# digested by tools/engine_digest.c in each and compared (a change that
# keeps the bits gives identical lines), the gpu tests named run in this
# tree (optionally under compute-sanitizer memcheck and racecheck), then
# `omma bench engine` (fp16, CUDA graphs) of each tree in turn, ROUNDS
# times, so that both see the same machine state; optionally ncu per
# kernel of one model in both trees. Logs and results in OUTDIR; a line
# per result on stdout.
#
# usage: scripts/gpu-ab.sh BASE OUTDIR
#   BASE     the base tree as a tar file (gzip or not) of a source tree,
#            e.g. `git archive main | gzip > .cache/base.tar.gz`, carried
#            to the machine with the models (`run`'s carry: models,
#            .cache); or a source folder
# environment:
#   MODELS         models to bench (default: BlazePose's detector and
#                  landmark models)
#   DIGEST_MODELS  models to digest (default: the 8 models, and BlazePose
#                  full as the pose pipeline loads it)
#   BATCHES        bench batch sizes (default 128); ITERS (default 100)
#   ROUNDS         bench rounds (default 2)
#   TESTS          tests to build and run in this tree, names joined by |
#                  (a ctest -R regex)
#   SANITIZE       test names to run under memcheck and racecheck
#   NCU_KERNEL     ncu -k regex: per-kernel metrics of NCU_MODEL (default
#                  pose_landmark_full) at batch 128, graphs off, both trees
set -u
BASE=${1:?usage: scripts/gpu-ab.sh BASE OUTDIR}
OUT=${2:?usage: scripts/gpu-ab.sh BASE OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$ROOT" || exit 2
MODELS=${MODELS:-pose_detection pose_landmark_lite pose_landmark_full pose_landmark_heavy}
PRUNED=pose_landmark_full:Identity,Identity_1,Identity_4,Identity_3
DIGEST_MODELS=${DIGEST_MODELS:-face_detection_short_range face_detection_full_range face_landmark \
face_landmark_with_attention pose_detection pose_landmark_lite pose_landmark_full \
pose_landmark_heavy $PRUNED}
failed=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

BASE_TREE=$BASE
if [ -f "$BASE" ]; then
    BASE_TREE=$(mktemp -d /tmp/gpu-ab-base.XXXXXX)
    tar xf "$BASE" -C "$BASE_TREE" || { echo "gpu-ab: cannot unpack $BASE"; exit 2; }
fi
[ -f "$BASE_TREE/CMakeLists.txt" ] || { echo "gpu-ab: $BASE is not a source tree"; exit 2; }
[ -e "$BASE_TREE/models" ] || ln -s "$ROOT/models" "$BASE_TREE/models"

build() { # SRC BUILD TARGETS...
    local src=$1 dir=$2
    shift 2
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DOMMA_WERROR=OFF -DOMMA_SANITIZE=OFF -DOMMA_FAULT_INJECTION=ON >>"$OUT/build.log" 2>&1 &&
        cmake --build "$dir" -j "$(nproc)" --target "$@" >>"$OUT/build.log" 2>&1 &&
        cc -O2 -std=gnu11 -I"$src/include" -I/usr/local/cuda/include \
            "$ROOT/tools/engine_digest.c" -L"$dir" -lomma -L/usr/local/cuda/lib64/stubs -lcuda \
            -Wl,-rpath,"$dir" -o "$dir/engine_digest" >>"$OUT/build.log" 2>&1
}
tree_name() { if [ "$1" = "$BASE_TREE" ]; then echo base; else echo this; fi; }
targets="omma_cli omma"
for t in $(echo "${TESTS:-}" | tr '|' ' '); do targets="$targets ${t%\$}"; done
build "$BASE_TREE" "$BASE_TREE/build-gpu" omma_cli omma || { echo "gpu-ab: base build failed (build.log)"; exit 1; }
# shellcheck disable=SC2086
build "$ROOT" "$ROOT/build-gpu" $targets || { echo "gpu-ab: build failed (build.log)"; exit 1; }

# shellcheck disable=SC2086
"$BASE_TREE/build-gpu/engine_digest" models $DIGEST_MODELS >"$OUT/digest_base.txt" 2>"$OUT/digest_base.err"
# shellcheck disable=SC2086
"$ROOT/build-gpu/engine_digest" models $DIGEST_MODELS >"$OUT/digest.txt" 2>"$OUT/digest.err"
if [ -s "$OUT/digest.txt" ] && cmp -s "$OUT/digest_base.txt" "$OUT/digest.txt"; then
    echo "digest: same bits ($(wc -l <"$OUT/digest.txt") outputs)"
else
    echo "digest: DIFFERENT (diff $OUT/digest_base.txt $OUT/digest.txt)"
    failed=1
fi

if [ -n "${TESTS:-}" ]; then
    if (cd build-gpu && ctest -R "$TESTS" --output-on-failure >"$OUT/ctest.log" 2>&1); then
        echo "tests: passed ($TESTS)"
    else
        echo "tests: FAILED (ctest.log)"
        failed=1
    fi
fi
for t in ${SANITIZE:-}; do
    bin=$(find build-gpu/tests -name "$t" -type f | head -n 1)
    for tool in memcheck racecheck; do
        if /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 9 "$bin" \
            >"$OUT/$tool-$t.log" 2>&1; then
            echo "$tool $t: clean"
        else
            echo "$tool $t: FAILED ($tool-$t.log)"
            failed=1
        fi
    done
done

for round in $(seq 1 "${ROUNDS:-2}"); do
    for m in $MODELS; do
        for tree in "$BASE_TREE" "$ROOT"; do
            name=$(tree_name "$tree")
            r=$("$tree/build-gpu/omma" bench engine --backend gpu --model "models/$m.tflite" \
                --batch "${BATCHES:-128}" --precision fp16 --iters "${ITERS:-100}" --warmup 10 \
                --json 2>/dev/null | tee -a "$OUT/bench_$name.jsonl" |
                python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(' '.join('b%d %.3f ms' % (r['batch'], r['median_ms']) for r in d['results']))")
            echo "round $round $m $name $r"
        done
    done
done | tee "$OUT/bench.txt"

if [ -n "${NCU_KERNEL:-}" ]; then
    for tree in "$BASE_TREE" "$ROOT"; do
        name=$(tree_name "$tree")
        /usr/local/cuda/bin/ncu --cache-control none -k "regex:$NCU_KERNEL" --csv --metrics \
gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,\
launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
            "$tree/build-gpu/omma" bench engine --backend gpu \
            --model "models/${NCU_MODEL:-pose_landmark_full}.tflite" --batch 128 --precision fp16 \
            --iters 1 --warmup 0 --graphs off >"$OUT/ncu_$name.csv" 2>&1 ||
            echo "ncu $name: failed (ncu_$name.csv)"
    done
fi
exit $failed
