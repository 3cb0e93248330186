#!/usr/bin/env bash
# The fetch scripts' checksum failure path: a corrupted cached model is
# replaced by a good one, and a download that does not match its pinned
# sha256 is refused with a clear error, leaving no bad file behind.
set -euo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The scripts fetch from the npm registry and Debian's archive: without them
# (the offline GPU machine) there is nothing to test; CTest shows a skip.
if ! timeout 60 npm view @mediapipe/face_detection@0.4.1657300184 version >/dev/null 2>&1; then
    echo "SKIP: the npm registry is not reachable"
    exit 77
fi

# 1. A corrupted cached file is detected and replaced (offline: copy the good
#    files from models/ when present, so only the bad one is re-fetched).
mkdir "$work/models"
cp "$root"/models/*.tflite "$work/models/" 2>/dev/null || true
printf 'corrupt' >"$work/models/face_detection_short_range.tflite"
"$root/scripts/fetch-models.sh" "$work/models" >"$work/log1" 2>&1 || fail "refetch failed: $(cat "$work/log1")"
grep -q "face_detection_short_range.tflite ok" "$work/log1" || fail "corrupt file not re-fetched"
sha256sum "$work/models/face_detection_short_range.tflite" |
    grep -q 3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633 || fail "bad checksum after refetch"

# 2. A pinned checksum that the download cannot match: a copy of the script
#    with one expected sha256 changed must fail, name the file, and leave no
#    file in place.
sed 's/3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633/0000000000000000000000000000000000000000000000000000000000000000/' \
    "$root/scripts/fetch-models.sh" >"$work/fetch-bad.sh"
chmod +x "$work/fetch-bad.sh"
mkdir "$work/bad"
if "$work/fetch-bad.sh" "$work/bad" >"$work/log2" 2>&1; then fail "mismatch accepted"; fi
grep -q "error: face_detection_short_range.tflite has sha256 3bc182eb" "$work/log2" ||
    fail "message does not name the file and checksum: $(cat "$work/log2")"
[ ! -e "$work/bad/face_detection_short_range.tflite" ] || fail "bad file left in place"

# 3. Re-running on good files does nothing and prints nothing.
out=$("$root/scripts/fetch-models.sh" "$work/models" 2>&1)
[ -z "$out" ] || fail "re-run on good files printed: $out"

# 4. Test data: a corrupt astronaut.png is replaced, re-run is silent.
mkdir "$work/data"
printf 'x' >"$work/data/astronaut.png"
"$root/scripts/fetch-testdata.sh" "$work/data" >"$work/log3" 2>&1 || fail "testdata refetch: $(cat "$work/log3")"
out=$("$root/scripts/fetch-testdata.sh" "$work/data" 2>&1)
[ -z "$out" ] || fail "testdata re-run printed: $out"
echo "fetch scripts: ok"
