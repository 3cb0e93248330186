#!/bin/sh
# test_cuda_ops' table in 3 processes at once on one GPU (several omma
# processes share a GPU in production). Each copy must pass as it does
# alone; this is what caught weights read before their upload had landed
# (cuda_weights.c, upload()). --shared-gpu leaves out the check of free
# device memory, which the other processes change.
# Usage: test_cuda_ops_shared.sh TEST_CUDA_OPS [COPIES]
bin=${1:?usage: test_cuda_ops_shared.sh TEST_CUDA_OPS [COPIES]}
n=${2:-3}
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-ops-shared.XXXXXX") || exit 1
seed=$(date +%s)
i=1
while [ $i -le "$n" ]; do
    "$bin" --quick --shared-gpu --seed $((seed + i)) >"$dir/$i.log" 2>&1 &
    echo $! >"$dir/$i.pid"
    i=$((i + 1))
done
fail=0 skipped=0
i=1
while [ $i -le "$n" ]; do
    wait "$(cat "$dir/$i.pid")"
    rc=$?
    if [ $rc -eq 77 ]; then
        skipped=$((skipped + 1))
    elif [ $rc -ne 0 ]; then
        echo "FAIL: copy $i of $n (seed $((seed + i))) exited $rc:"
        grep FAIL "$dir/$i.log" | head -40
        tail -n 5 "$dir/$i.log"
        fail=1
    fi
    i=$((i + 1))
done
if [ $skipped -eq "$n" ]; then
    cat "$dir/1.log"
    rm -rf "$dir"
    exit 77
fi
rm -rf "$dir"
[ $fail -eq 0 ] && echo "ok: $n copies of test_cuda_ops --quick passed at once on one GPU"
exit $fail
