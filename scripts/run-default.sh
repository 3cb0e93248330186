#!/usr/bin/env bash
# make run: the main job on its built-in default. `omma info` first (the
# GPUs); then `omma run` with no input: the face pipeline on the sample
# (testdata/astronaut.png and, when scripts/fetch-testdata.sh made it,
# testdata/astronaut_pan.mp4 as a second camera), annotated pictures and
# video in $TMPDIR/omma-run-sample (/tmp when TMPDIR is unset), JSON Lines
# in faces.jsonl there. On a machine without an NVIDIA GPU or driver (omma
# info exit code 3) it says so first, as information, and passes --backend
# cpu.
omma=${1:-build/omma}
info_err=$(mktemp "${TMPDIR:-/tmp}/omma-info-XXXXXX") || exit 1
"$omma" info 2>"$info_err"
rc=$?
backend=gpu
if [ "$rc" -eq 3 ]; then
    echo "make run: no NVIDIA GPU or driver found; using the CPU backend (slower; 'omma info' says why)"
    backend=cpu
else
    cat "$info_err" >&2
fi
rm -f "$info_err"
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || exit "$rc"
dir=${TMPDIR:-/tmp}/omma-run-sample
mkdir -p "$dir" || exit 1
out=$dir/faces.jsonl
echo "make run: omma run --backend $backend --out $out (no input: the sample)"
"$omma" run --backend "$backend" --out "$out"
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
# A line holds 468 landmarks (~20 kB): show the start of the first one.
head -n 1 "$out" | cut -c 1-300 | sed 's/$/ .../'
faces=$(grep -o '"landmarks":\[' "$out" | wc -l)
frames=$(wc -l <"$out")
echo "make run: $faces face(s) with 468 landmarks each in $frames frame(s) ($backend backend);" \
    "annotated output in $dir; JSON Lines in $out"
