#!/bin/sh
# omma run --backend cpu --threads: the photo and 8 frames of the test video
# give byte-identical JSON Lines on 1 thread, 3 threads and all cores (the
# default), each frame with its face; the summary names the thread count;
# a thread count out of range exits 2 naming the option.
# usage: test_cli_run_threads.sh OMMA TESTDATA_DIR
omma=$1 data=$2
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inputs=$data/astronaut.png
[ -f "$data/astronaut_pan.mp4" ] && inputs="$inputs $data/astronaut_pan.mp4"
for t in 1 3 default; do
    opt="--threads $t"
    [ "$t" = default ] && opt=
    # shellcheck disable=SC2086 # the inputs and the option split on purpose
    "$omma" run --backend cpu $opt --max-frames 8 --out "$tmp/$t.jsonl" $inputs 2>"$tmp/$t.err"
    rc=$?
    if [ "$rc" != 0 ] && grep -qi "without FFmpeg" "$tmp/$t.err"; then
        inputs=$data/astronaut.png # a build without video: the photo alone
        "$omma" run --backend cpu $opt --out "$tmp/$t.jsonl" $inputs 2>"$tmp/$t.err"
        rc=$?
    fi
    [ "$rc" = 0 ] || fail "--threads $t: exit $rc: $(cat "$tmp/$t.err")"
done
grep -q "(cpu backend, 3 threads)" "$tmp/3.err" || fail "summary: $(cat "$tmp/3.err")"
grep -q "(cpu backend, 1 thread)" "$tmp/1.err" || fail "summary: $(cat "$tmp/1.err")"
lines=$(wc -l <"$tmp/1.jsonl")
faces=$(grep -c '"faces":\[{"id":1,' "$tmp/1.jsonl")
[ "$lines" -ge 1 ] && [ "$faces" = "$lines" ] || fail "$lines frames, $faces with a face"
cmp -s "$tmp/1.jsonl" "$tmp/3.jsonl" || fail "3 threads differ from 1"
cmp -s "$tmp/1.jsonl" "$tmp/default.jsonl" || fail "all cores differ from 1 thread"
out=$("$omma" run --backend cpu --threads 257 "$data/astronaut.png" 2>&1 >/dev/null)
rc=$?
[ "$rc" = 2 ] && printf '%s' "$out" | grep -q -- "--threads" ||
    fail "--threads 257: exit $rc, $out"
[ "$fails" = 0 ] && echo "test_cli_run_threads: all passed"
exit "$fails"
