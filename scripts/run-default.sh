#!/usr/bin/env bash
# make run: the main job on its built-in default. `omma info` first (the
# GPUs); then the face pipeline on the sample photo (testdata/astronaut.png)
# with `omma run`. The GPU face pipeline is not built yet, so the run uses
# the CPU backend, on a machine without a GPU too (saying so), and prints
# the JSON line of the photo's faces, shortened for the terminal.
omma=${1:-build/omma}
"$omma" info
rc=$?
if [ "$rc" -eq 3 ]; then
    echo "make run: no GPU on this machine (omma info exit code 3); running the face pipeline on the CPU backend"
elif [ "$rc" -ne 0 ]; then
    exit "$rc"
else
    echo "make run: the GPU face pipeline is not built yet; running it on the CPU backend"
fi
echo "make run: omma run --backend cpu (no input: the sample testdata/astronaut.png)"
out=$(mktemp "${TMPDIR:-/tmp}/omma-run-XXXXXX.jsonl") || exit 1
trap 'rm -f "$out"' EXIT
"$omma" run --backend cpu --out "$out" || exit $?
# The landmarks make a line of ~20 kB: show its start and the face count.
cut -c 1-400 "$out" | sed 's/$/ .../'
echo "make run: $(grep -o '"landmarks":\[' "$out" | wc -l) face(s) with 468 landmarks each (full JSON: omma run --backend cpu)"
