#!/bin/sh
# omma stream --backend cpu on the test files (no GPU needed): the video
# (6 frames of astronaut_pan.mp4, skipped in a build without FFmpeg) and a
# directory of three copies of the photo come out as JSON Lines, every
# frame once and in order, gpu -1, nothing dropped, one face with id 1 each;
# the JSON status lines show the cameras on no GPU; the metrics endpoint
# serves their counters (when curl or wget is there); SIGINT ends a looping
# run with exit 130. Bad --backend/--threads values exit 2; without a GPU
# and without --backend cpu, exit 3 with a message naming --backend cpu.
# usage: test_cli_stream_cpu.sh OMMA TESTDATA_DIR
omma=$1 data=$2
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/seq"
for k in 0 1 2; do cp "$data/astronaut.png" "$tmp/seq/a$k.png"; done

expect() { # WANT_RC WANT_TEXT ARGS...
    want=$1 text=$2
    shift 2
    out=$("$omma" stream "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" != "$want" ] || ! printf '%s' "$out" | grep -q -- "$text"; then
        fail "omma stream $*: exit $rc (want $want), stderr: $out"
    fi
}
expect 2 "--backend tpu" --backend tpu "$tmp/seq"
expect 2 "--threads" --backend cpu --threads many "$tmp/seq"
expect 2 "--threads" --backend cpu --threads 257 "$tmp/seq"

# Frames of camera CAM in FILE, in file order, on one line.
frames_of() {
    sed -n "s/^{\"camera\":$1,.*\"frame\":\([0-9]*\),.*/\1/p" "$2" | tr '\n' ' '
}

video=$data/astronaut_pan.mp4
"$omma" stream --backend cpu --max-frames 1 --realtime off --status off --results off "$video" \
    2>"$tmp/probe"
if [ $? != 0 ] && grep -qi "without FFmpeg" "$tmp/probe"; then
    echo "no FFmpeg in this build: the video camera is left out"
    video=
fi

"$omma" stream --backend cpu --threads 2 --max-frames 6 --realtime off --status json \
    --status-every 0.2 --out "$tmp/out.jsonl" "$tmp/seq" $video 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || fail "a CPU run on the files exited $rc: $(cat "$tmp/err")"
[ "$(frames_of 0 "$tmp/out.jsonl")" = "0 1 2 " ] ||
    fail "camera 0 (the directory): frames '$(frames_of 0 "$tmp/out.jsonl")', want '0 1 2 '"
want_lines=3
if [ -n "$video" ]; then
    want_lines=9
    [ "$(frames_of 1 "$tmp/out.jsonl")" = "0 1 2 3 4 5 " ] ||
        fail "camera 1 (the video): frames '$(frames_of 1 "$tmp/out.jsonl")', want '0 1 2 3 4 5 '"
fi
lines=$(wc -l <"$tmp/out.jsonl")
good=$(grep -c '^{"camera":[01],"source":".*","frame":[0-9]*,"timestamp_ms":[0-9.]*,"gpu":-1,"latency_ms":[0-9.]*,"dropped":0,"faces":\[{"id":1,"score":0\.[5-9][0-9]*,"box":\[' "$tmp/out.jsonl")
[ "$lines" = "$want_lines" ] && [ "$good" = "$lines" ] ||
    fail "$lines lines (want $want_lines), $good of the expected form: $(head -c 300 "$tmp/out.jsonl")"
grep -q '"faces":\[{.*},{' "$tmp/out.jsonl" && fail "a frame with two faces (the photo has one)"
grep -q '^{"time_unix_ms":.*"cameras":\[{"index":0,"name":"0:[^"]*seq","gpu":null,"state":"[a-z]*","frames_in":' "$tmp/err" ||
    fail "no JSON status line with camera 0 on no GPU: $(head -c 400 "$tmp/err")"
grep -q "omma stream: $want_lines frames in, $want_lines processed (.* 0 dropped, $want_lines faces;.*CPU backend, 2 threads" "$tmp/err" ||
    fail "summary: $(grep 'omma stream:' "$tmp/err")"

# The metrics endpoint of a looping run, then SIGINT.
fetch=
if command -v curl >/dev/null 2>&1; then
    fetch="curl -sf"
elif command -v wget >/dev/null 2>&1; then
    fetch="wget -qO-"
fi
if [ -n "$fetch" ]; then
    "$omma" stream --backend cpu --loop --fps 10 --status off --results off --metrics-port 0 \
        --metrics-bind 127.0.0.1 "$tmp/seq" 2>"$tmp/err2" &
    pid=$!
    port= processed=0 t=0
    while [ $t -lt 600 ] && [ "$processed" -lt 2 ]; do
        sleep 0.1
        t=$((t + 1))
        [ -n "$port" ] ||
            port=$(sed -n 's|.*OpenMetrics at http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/err2")
        [ -n "$port" ] || continue
        $fetch "http://127.0.0.1:$port/metrics" >"$tmp/metrics" 2>/dev/null || continue
        processed=$(sed -n 's/^omma_camera_frames_processed_total{[^}]*} \([0-9]*\)$/\1/p' \
            "$tmp/metrics" | head -n 1)
        processed=${processed:-0}
    done
    [ "$processed" -ge 2 ] || fail "metrics: $processed frames processed after $t tenths of a second"
    grep -q '^omma_camera_info{camera="0:[^"]*seq",index="0",gpu="none"} 1$' "$tmp/metrics" ||
        fail "metrics: no camera on no GPU: $(grep omma_camera_info "$tmp/metrics")"
    kill -INT "$pid"
    wait "$pid"
    rc=$?
    [ "$rc" = 130 ] || fail "SIGINT: exit $rc (want 130): $(cat "$tmp/err2")"
else
    echo "neither curl nor wget: the metrics endpoint is not fetched"
fi

# No GPU and no --backend cpu: exit 3, naming the option (with a GPU, the
# run simply works).
"$omma" stream --max-frames 1 --status off --results off "$tmp/seq" 2>"$tmp/err3"
rc=$?
if [ "$rc" = 3 ]; then
    grep -q "no NVIDIA GPU found.*use --backend cpu to run on the CPU" "$tmp/err3" ||
        fail "no GPU: message $(cat "$tmp/err3")"
elif [ "$rc" != 0 ]; then
    fail "without --backend: exit $rc (want 3 without a GPU, 0 with one): $(cat "$tmp/err3")"
fi

[ "$fails" = 0 ] && echo "test_cli_stream_cpu: all passed"
exit "$fails"
