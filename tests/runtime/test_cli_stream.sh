#!/bin/sh
# omma stream's arguments: usage errors exit 2 with a message naming the
# option; without a GPU the runtime exits 3 (with one, a short synthetic
# run exits 0, SIGINT ends a run with exit 130 and whole JSON lines, two
# SIGTERMs exit at once). usage: test_cli_stream.sh OMMA
omma=$1
fails=0
expect() { # WANT_RC WANT_TEXT ARGS...
    want=$1 text=$2
    shift 2
    out=$("$omma" stream "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" != "$want" ] || ! printf '%s' "$out" | grep -q -- "$text"; then
        echo "FAIL: omma stream $*: exit $rc (want $want), stderr: $out"
        fails=$((fails + 1))
    fi
}
expect 2 "no SOURCE given"
expect 2 "unknown option --bogus" --bogus synthetic
expect 2 "--max-batch 0" --max-batch 0 synthetic
expect 2 "--gpus x" --gpus x synthetic
expect 2 "GPU 1 twice" --gpus 1,1 synthetic
expect 2 "--resolution 7x7" --resolution 7x7 synthetic
expect 2 "--pool ram" --pool ram synthetic
expect 2 "--lanes needs a value" synthetic --lanes
expect 2 "synthetic:N 0" synthetic:0
"$omma" stream --help | grep -q "usage: omma stream" || { echo "FAIL: --help"; fails=$((fails + 1)); }
"$omma" stream synthetic --duration 0.5 --results off --status off 2>/dev/null
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 3 ]; then
    echo "FAIL: a short synthetic run exited $rc (want 0 with a GPU, 3 without)"
    fails=$((fails + 1))
fi
if [ "$rc" = 0 ]; then
    # A GPU: SIGINT stops the runtime cleanly (exit 130, every JSON line
    # whole); a second signal exits at once.
    out=$(mktemp)
    "$omma" stream synthetic:4 --status off --out "$out" 2>/dev/null &
    pid=$!
    sleep 2
    kill -INT "$pid"
    wait "$pid"
    rc=$?
    lines=$(wc -l <"$out")
    whole=$(grep -c '^{"camera":.*}$' "$out")
    if [ "$rc" != 130 ] || [ "$lines" -lt 4 ] || [ "$lines" != "$whole" ]; then
        echo "FAIL: SIGINT: exit $rc (want 130), $lines lines, $whole whole"
        fails=$((fails + 1))
    fi
    "$omma" stream synthetic:4 --status off --results off 2>/dev/null &
    pid=$!
    sleep 2
    kill -TERM "$pid"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    if [ "$rc" != 130 ]; then
        echo "FAIL: two SIGTERMs: exit $rc (want 130)"
        fails=$((fails + 1))
    fi
    rm -f "$out"
fi
[ "$fails" = 0 ] && echo "test_cli_stream: all passed"
exit "$fails"
