#!/usr/bin/env bash
# What runs on the GPU machine (needs no network): build for sm_90 with fault
# injection and without host sanitizers (-Werror is the CPU CI's job), run the
# gpu-labelled tests, run each again under compute-sanitizer (memcheck on all;
# racecheck and synccheck on those whose kernels use shared memory and
# barriers), then record `omma info` and `omma bench context`. Logs and a
# summary (one line per step: PASS, FAIL or SKIP) go to OUTDIR; the exit
# status is 1 if any step failed.
#
# usage: scripts/gpu-check.sh OUTDIR
# environment:
#   BUILD_DIR                 build folder (default build-gpu)
#   JOBS                      parallel build jobs (default: all cores)
#   GPU_CHECK_SANITIZE_REGEX  only tests whose name matches go under
#                             compute-sanitizer (default: every gpu test)
#   GPU_CHECK_RACE_TESTS      more test names for racecheck and synccheck
set -u

OUT=${1:?usage: scripts/gpu-check.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
SANITIZE_REGEX=${GPU_CHECK_SANITIZE_REGEX:-.}
# Tests with kernels that share memory between threads of a block.
RACE_TESTS="test_device_runtime test_cuda_ops test_face_pipeline_gpu test_face_pipeline_lanes test_face_mesh_478_gpu ${GPU_CHECK_RACE_TESTS:-}"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
failed=0

step() { # NAME PASS|FAIL|SKIP [DETAIL]
    printf '%-44s %-4s %s\n' "$1" "$2" "${3:-}" | tee -a "$SUMMARY"
    if [ "$2" = FAIL ]; then failed=1; fi
}

section() { printf '\n===== %s =====\n' "$*"; }

started=$(date +%s)
{
    echo "gpu-check of $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo "a source tree")"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
        echo "nvidia-smi: not available"
} | tee -a "$SUMMARY"

# ---- FFmpeg (the GPU machine has none) ------------------------------------------
# With the files of scripts/fetch-device-ffmpeg.sh carried in .cache/device-
# ffmpeg, a minimal FFmpeg with NVDEC is built first, so that omma is built
# with video support and the tests on videos run here too.
FFMPEG_FILES=${DEVICE_FFMPEG:-$ROOT/.cache/device-ffmpeg}
if ! pkg-config --exists libavcodec 2>/dev/null && [ -d "$FFMPEG_FILES" ]; then
    if env_line=$("$ROOT/scripts/device-ffmpeg.sh" "$FFMPEG_FILES" 2>"$OUT/ffmpeg.log"); then
        eval "$env_line"
        step "FFmpeg with NVDEC (device-ffmpeg.sh)" PASS "$(ffmpeg -version 2>/dev/null | head -n 1)"
    else
        step "FFmpeg with NVDEC (device-ffmpeg.sh)" FAIL "see ffmpeg.log"
    fi
fi

# ---- build ------------------------------------------------------------------
BUILD_LOG=$OUT/build.log
if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DOMMA_WERROR=OFF -DOMMA_SANITIZE=OFF \
    -DOMMA_FAULT_INJECTION=ON >"$BUILD_LOG" 2>&1; then
    step configure PASS
else
    step configure FAIL "see build.log"
    exit 1
fi
if cmake --build "$BUILD" -j "$JOBS" >>"$BUILD_LOG" 2>&1; then
    step build PASS
else
    step build FAIL "see build.log"
    tail -n 40 "$BUILD_LOG"
    exit 1
fi

# ---- tests --------------------------------------------------------------------
CTEST_LOG=$OUT/ctest.log
run_ctest() { # NAME CTEST-ARGS...
    local name=$1
    shift
    local log=$OUT/.ctest-run.log
    (cd "$BUILD" && ctest --output-on-failure "$@") >"$log" 2>&1
    local rc=$?
    { section "ctest $*"; cat "$log"; } >>"$CTEST_LOG"
    local line skipped
    line=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1)
    skipped=$(sed -n '/The following tests did not run/,$p' "$log" | grep -c 'Skipped')
    rm -f "$log"
    if [ $rc -eq 0 ]; then
        step "$name" PASS "$line; skipped: $skipped"
    else
        step "$name" FAIL "$line (see ctest.log)"
    fi
}
: >"$CTEST_LOG"
run_ctest "ctest -L gpu" -L gpu
# The cpu tests of the device API also have a with-a-driver path.
run_ctest "ctest device cpu tests" -R '^(test_device_cpu|test_cli_info|test_cli_stream)$'

# ---- compute-sanitizer --------------------------------------------------------
SAN_LOG=$OUT/sanitizer.log
: >"$SAN_LOG"
CS=$(command -v compute-sanitizer || true)
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -z "$CS" ] && [ -x "$c" ]; then CS=$c; fi
done

test_exe() { # NAME -> path of the test binary
    find "$BUILD/tests" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1
}

sanitize() { # TOOL NAME EXTRA-ARGS...
    local tool=$1 name=$2
    shift 2
    local exe
    exe=$(test_exe "$name")
    if [ -z "$exe" ]; then
        step "$tool $name" SKIP "no binary"
        return
    fi
    section "$tool $name" >>"$SAN_LOG"
    # The deliberate out-of-bounds child of test_device_health is left out:
    # it exists to fault. API errors are provoked on purpose (out of memory,
    # bad handles) and checked by the tests themselves. OMMA_TEST_SANITIZER
    # tells tests that compare device memory use that the tool adds its own.
    # Tests that start processes of their own (the frame bus) have them
    # checked too, with fewer of them killed.
    OMMA_TEST_SANITIZER=1 OMMA_TEST_NO_FAULT_CHILD=1 OMMA_BUS_KILLS=10 timeout 900 "$CS" \
        --tool "$tool" --error-exitcode 99 --report-api-errors no --target-processes all "$@" \
        "$exe" >>"$SAN_LOG" 2>&1
    local rc=$?
    local errors
    errors=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$SAN_LOG" | tail -n 1)
    case $rc in
    0) step "$tool $name" PASS "$errors" ;;
    77) step "$tool $name" SKIP "test skipped itself" ;;
    *) step "$tool $name" FAIL "exit $rc; $errors" ;;
    esac
}

if [ -z "$CS" ]; then
    step compute-sanitizer FAIL "compute-sanitizer not found"
else
    gpu_tests=$(cd "$BUILD" && ctest -L gpu -N | sed -n 's/^ *Test *#[0-9]*: *//p' |
        grep -E "$SANITIZE_REGEX")
    for t in $gpu_tests; do
        sanitize memcheck "$t" --leak-check full
    done
    for t in $RACE_TESTS; do
        if echo "$gpu_tests" | grep -qx "$t"; then
            sanitize racecheck "$t"
            sanitize synccheck "$t"
        fi
    done
fi

# ---- omma info and bench context ------------------------------------------------
INFO=$OUT/info.txt
if "$BUILD/omma" info --json >"$INFO" 2>&1 && "$BUILD/omma" info >>"$INFO" 2>&1; then
    step "omma info" PASS
else
    step "omma info" FAIL "see info.txt"
fi
BENCH=$OUT/bench.txt
if "$BUILD/omma" bench context >"$BENCH" 2>&1 && "$BUILD/omma" bench context --json >>"$BENCH" 2>&1
then
    step "omma bench context" PASS
else
    step "omma bench context" FAIL "see bench.txt"
fi

# ---- omma run on the sample, the GPU pipeline end to end ------------------------
RUN_DIR=$OUT/run-sample
mkdir -p "$RUN_DIR"
if (cd "$RUN_DIR" && TMPDIR=$RUN_DIR "$ROOT/scripts/run-default.sh" "$BUILD/omma") >"$OUT/run.txt" 2>&1 &&
    grep -q '(gpu backend)' "$OUT/run.txt"; then
    step "omma run (sample, gpu)" PASS "$(grep -o '[0-9]* face(s) .* frame(s)' "$OUT/run.txt" | head -n 1)"
else
    step "omma run (sample, gpu)" FAIL "see run.txt"
fi

# ---- omma run with the attention mesh and head pose on the GPU ------------------
M478=$OUT/run-478.jsonl
if "$BUILD/omma" run --backend gpu --face-mesh 478 --head-pose --out "$M478" \
    "$ROOT/testdata/astronaut.png" >"$OUT/run-478.txt" 2>&1 &&
    python3 -c 'import json, sys
f = json.loads(open(sys.argv[1]).readline())["faces"][0]
assert len(f["landmarks"]) == 478 and "head_pose" in f, "no 478 landmarks and head pose"
print("478 landmarks, yaw %.1f pitch %.1f roll %.1f" % tuple(f["head_pose"][k] for k in
      ("yaw", "pitch", "roll")))' "$M478" >>"$OUT/run-478.txt" 2>&1; then
    step "omma run --face-mesh 478 --head-pose (gpu)" PASS "$(tail -n 1 "$OUT/run-478.txt")"
else
    step "omma run --face-mesh 478 --head-pose (gpu)" FAIL "see run-478.txt"
fi

ended=$(date +%s)
echo "took $((ended - started)) s; $([ $failed -eq 0 ] && echo "all steps passed" || echo "FAILED")" |
    tee -a "$SUMMARY"
exit $failed
