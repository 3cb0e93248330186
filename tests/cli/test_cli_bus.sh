#!/bin/sh
# omma bus and the bus options of omma stream, on a machine without a GPU
# (the frame bus itself is tested across processes on the GPU by
# tests/runtime/test_bus_gpu.c and test_bus_stream.sh): listing an empty
# bus directory, watching and reading a bus nobody publishes (a clear error
# naming it), a bus directory others may enter (refused), bad bus specs,
# and publishing from the CPU backend (refused: the bus shares GPU memory).
# usage: test_cli_bus.sh OMMA
omma=$1
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
if ! "$omma" --version | grep -q " cuda"; then
    # Built without CUDA: the bus shares GPU memory, so it says so.
    "$omma" bus ls >/dev/null 2>"${TMPDIR:-/tmp}/omma-cli-bus.$$"
    rc=$?
    grep -q "built without CUDA" "${TMPDIR:-/tmp}/omma-cli-bus.$$" || rc=99
    rm -f "${TMPDIR:-/tmp}/omma-cli-bus.$$"
    [ $rc -eq 3 ] || { echo "FAIL: bus ls without CUDA: exit $rc"; exit 1; }
    echo "SKIP: built without CUDA (bus ls says so, exit 3)"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-cli-bus-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
export OMMA_BUS_DIR="$dir/bus"

"$omma" bus ls >"$dir/out" 2>"$dir/err" || fail "bus ls: exit $?: $(cat "$dir/err")"
grep -q "no bus is published" "$dir/out" || fail "bus ls: $(cat "$dir/out")"
[ "$(stat -c %a "$dir/bus")" = 700 ] || fail "bus directory mode $(stat -c %a "$dir/bus")"
"$omma" bus ls --json >"$dir/out" 2>&1 || fail "bus ls --json: exit $?"
[ ! -s "$dir/out" ] || fail "bus ls --json printed $(cat "$dir/out")"

"$omma" bus watch nobody >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -eq 1 ] || fail "bus watch nobody: exit $rc"
grep -q "bus nobody: no publisher" "$dir/err" || fail "bus watch nobody: $(cat "$dir/err")"
grep -q "src/" "$dir/err" && fail "bus watch: a source location in $(cat "$dir/err")"

"$omma" stream bus:nobody --status off >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -ne 0 ] || fail "stream bus:nobody: exit 0"
grep -q "nobody" "$dir/err" || fail "stream bus:nobody: $(cat "$dir/err")"

for spec in "bus:" "bus:x/" "bus:x/a" "bus:x/1,,2" "bus:x/5000"; do
    "$omma" stream "$spec" --status off >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "stream $spec: exit $rc ($(cat "$dir/err"))"
done

"$omma" bus watch >"$dir/out" 2>"$dir/err"
[ $? -eq 2 ] || fail "bus watch without a name: not a usage error"
"$omma" bus lss >"$dir/out" 2>"$dir/err"
grep -q "did you mean ls" "$dir/err" || fail "bus lss: $(cat "$dir/err")"

"$omma" stream synthetic --backend cpu --publish x --duration 1 --status off >"$dir/out" \
    2>"$dir/err"
rc=$?
[ $rc -ne 0 ] || fail "publishing from the CPU backend: exit 0"
grep -q "GPU backend" "$dir/err" || fail "publishing on the CPU: $(cat "$dir/err")"
"$omma" stream synthetic --publish "../x" --backend cpu --status off >"$dir/out" 2>"$dir/err"
[ $? -ne 0 ] || fail "--publish ../x accepted"

chmod 755 "$dir/bus"
"$omma" bus ls >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -ne 0 ] || fail "bus ls in a directory of mode 755: exit 0"
grep -q "others may enter it" "$dir/err" || fail "mode 755: $(cat "$dir/err")"

[ $fails -eq 0 ] && echo "ok: omma bus and the stream bus options without a GPU"
exit $fails
