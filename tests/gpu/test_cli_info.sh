#!/bin/sh
# `omma info`: without a driver or GPU it exits 3 with a clear message and
# never crashes; with a GPU it exits 0 and lists it (text and JSON).
# usage: test_cli_info.sh PATH/TO/omma
omma=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$omma" ] || fail "no omma binary at '$omma'"

out=$("$omma" info 2>&1)
rc=$?
echo "$out"
case $rc in
3)
    echo "$out" | grep -q "omma: error: no NVIDIA GPU available" || fail "exit 3 without the message"
    if echo "$out" | grep -q "omma was built without CUDA (OMMA_CUDA=OFF)"; then
        echo "(a build without CUDA)"
    elif ! ldconfig -p 2>/dev/null | grep -q "libcuda.so.1"; then
        echo "$out" | grep -q "libcuda.so.1" || fail "the message does not name libcuda.so.1"
    fi
    json_out=$("$omma" info --json 2>/dev/null)
    json_rc=$?
    [ $json_rc -eq 3 ] || fail "info --json exited $json_rc without a GPU, expected 3"
    [ -z "$json_out" ] || fail "info --json printed to stdout without a GPU: $json_out"
    "$omma" bench context >/dev/null 2>&1
    bench_rc=$?
    [ $bench_rc -eq 3 ] || fail "bench context exited $bench_rc without a GPU, expected 3"
    ;;
0)
    echo "$out" | grep -q "compute capability" || fail "no compute capability in the listing"
    echo "$out" | grep -q "^GPU 0 " || fail "GPU 0 not listed"
    json_out=$("$omma" info --json) || fail "info --json failed with a GPU"
    echo "$json_out" | grep -q '^{"devices":\[{"ordinal":0,' || fail "bad JSON: $json_out"
    ;;
*)
    fail "omma info exited $rc (expected 0 with a GPU, 3 without)"
    ;;
esac
"$omma" info --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown argument must exit 2"
echo "ok"
