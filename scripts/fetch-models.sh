#!/usr/bin/env bash
# Fetches MediaPipe's face models from the pinned npm packages into models/,
# verified by sha256. Re-running does nothing when the files are already good.
# A checksum mismatch is an error and leaves no bad file in place.
#
# usage: scripts/fetch-models.sh [DEST]   (default: models/ at the repo root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/models}
mkdir -p "$dest"

detect_pkg=@mediapipe/face_detection@0.4.1657300184
mesh_pkg=@mediapipe/face_mesh@0.4.1657299874

declare -A sha=(
    [face_detection_short_range.tflite]=3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633
    [face_detection_full_range.tflite]=99bf9494d84f50acc6617d89873f71bf6635a841ea699c17cb3377f9507cfec3
    [face_landmark.tflite]=c603fa6149219a3e9487dc9abd7a0c24474c77263273d24868378cdf40aa26d1
)

good() { [ -f "$dest/$1" ] && [ "$(sha256sum "$dest/$1" | cut -d' ' -f1)" = "${sha[$1]}" ]; }

# Moves a candidate file into place only when its checksum is right.
install_checked() { # name candidate
    local got
    got=$(sha256sum "$2" | cut -d' ' -f1)
    if [ "$got" != "${sha[$1]}" ]; then
        rm -f "$2"
        echo "fetch-models: error: $1 has sha256 $got, expected ${sha[$1]}; not installed" >&2
        return 1
    fi
    mv -f "$2" "$dest/$1"
    echo "fetch-models: $1 ok"
}

need=0
for f in "${!sha[@]}"; do good "$f" || need=1; done
[ "$need" -eq 0 ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! good face_detection_short_range.tflite || ! good face_detection_full_range.tflite; then
    (cd "$work" && npm pack --silent "$detect_pkg" >/dev/null)
    mkdir "$work/det" && tar xzf "$work"/mediapipe-face_detection-*.tgz -C "$work/det"
    for f in face_detection_short_range.tflite face_detection_full_range.tflite; do
        good "$f" || install_checked "$f" "$work/det/package/$f"
    done
fi

if ! good face_landmark.tflite; then
    (cd "$work" && npm pack --silent "$mesh_pkg" >/dev/null)
    mkdir "$work/mesh" && tar xzf "$work"/mediapipe-face_mesh-*.tgz -C "$work/mesh"
    loader="$work/mesh/package/face_mesh_solution_packed_assets_loader.js"
    # The loader lists each packed file as {"filename": ..., "start": N, "end": M}.
    range=$(grep -o '"filename": *"[^"]*/face_landmark.tflite", *"start": *[0-9]*, *"end": *[0-9]*' "$loader" |
        grep -o '[0-9]*, *"end": *[0-9]*' | tr -dc '0-9 ' | awk '{print $1, $2}')
    read -r start end <<<"$range"
    if [ -z "${start:-}" ] || [ -z "${end:-}" ] || [ "$end" -le "$start" ]; then
        echo "fetch-models: error: face_landmark.tflite not found in $(basename "$loader")" >&2
        exit 1
    fi
    dd if="$work/mesh/package/face_mesh_solution_packed_assets.data" of="$work/face_landmark.tflite" \
        iflag=skip_bytes,count_bytes skip="$start" count="$((end - start))" bs=64K status=none
    install_checked face_landmark.tflite "$work/face_landmark.tflite"
fi
