#!/usr/bin/env bash
# Fetches MediaPipe's face and pose models from the pinned npm packages into
# models/, verified by sha256. Re-running does nothing when the files are already good.
# A checksum mismatch is an error and leaves no bad file in place.
#
# usage: scripts/fetch-models.sh [DEST]   (default: models/ at the repo root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/models}
mkdir -p "$dest"

detect_pkg=@mediapipe/face_detection@0.4.1657300184
mesh_pkg=@mediapipe/face_mesh@0.4.1657299874
pose_pkg=@mediapipe/pose@0.5.1675469404

declare -A sha=(
    [face_detection_short_range.tflite]=3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633
    [face_detection_full_range.tflite]=99bf9494d84f50acc6617d89873f71bf6635a841ea699c17cb3377f9507cfec3
    [face_landmark.tflite]=c603fa6149219a3e9487dc9abd7a0c24474c77263273d24868378cdf40aa26d1
    [face_landmark_with_attention.tflite]=883b7411747bac657c30c462d305d312e9dec6adbf8b85e2f5d8d722fca9455d
    [geometry_pipeline_metadata_landmarks.binarypb]=bdbcda96dfcb7da883da124aaa2c55dee49770d934f0fcc71747f8c21bdc75b4
    [pose_detection.tflite]=a63c614bef30d35947f13be361820b1e4e3bec9cfeebf4d11216a18373108e85
    [pose_landmark_lite.tflite]=f17bfbecadb61c3be1baa8b8d851cc6619c870a87167b32848ad20db306b9d61
    [pose_landmark_full.tflite]=e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f
    [pose_landmark_heavy.tflite]=59e42d71bcd44cbdbabc419f0ff76686595fd265419566bd4009ef703ea8e1fe
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

# Copies one file out of a package's packed assets (*.data): its loader JS
# lists each packed file as {"filename": ".../NAME", "start": N, "end": M}.
unpack() { # name data loader
    local range start end
    range=$(grep -o '"filename": *"[^"]*/'"$1"'", *"start": *[0-9]*, *"end": *[0-9]*' "$3" |
        grep -o '[0-9]*, *"end": *[0-9]*' | tr -dc '0-9 ' | awk '{print $1, $2}')
    read -r start end <<<"$range"
    if [ -z "${start:-}" ] || [ -z "${end:-}" ] || [ "$end" -le "$start" ]; then
        echo "fetch-models: error: $1 not found in $(basename "$3")" >&2
        exit 1
    fi
    dd if="$2" of="$work/$1" iflag=skip_bytes,count_bytes skip="$start" count="$((end - start))" \
        bs=64K status=none
    install_checked "$1" "$work/$1"
}

# face_mesh packs face_landmark.tflite, face_landmark_with_attention.tflite
# (478 points) and the face geometry's canonical model into one file.
mesh_files=(face_landmark.tflite face_landmark_with_attention.tflite
    geometry_pipeline_metadata_landmarks.binarypb)
mesh_need=0
for f in "${mesh_files[@]}"; do good "$f" || mesh_need=1; done
if [ "$mesh_need" -eq 1 ]; then
    (cd "$work" && npm pack --silent "$mesh_pkg" >/dev/null)
    mkdir "$work/mesh" && tar xzf "$work"/mediapipe-face_mesh-*.tgz -C "$work/mesh"
    for f in "${mesh_files[@]}"; do
        good "$f" || unpack "$f" "$work/mesh/package/face_mesh_solution_packed_assets.data" \
            "$work/mesh/package/face_mesh_solution_packed_assets_loader.js"
    done
fi

# pose ships its three landmark models as files and packs pose_detection.tflite.
pose_files=(pose_landmark_lite.tflite pose_landmark_full.tflite pose_landmark_heavy.tflite)
pose_need=0
for f in pose_detection.tflite "${pose_files[@]}"; do good "$f" || pose_need=1; done
if [ "$pose_need" -eq 1 ]; then
    (cd "$work" && npm pack --silent "$pose_pkg" >/dev/null)
    mkdir "$work/pose" && tar xzf "$work"/mediapipe-pose-*.tgz -C "$work/pose"
    for f in "${pose_files[@]}"; do
        good "$f" || install_checked "$f" "$work/pose/package/$f"
    done
    good pose_detection.tflite || unpack pose_detection.tflite \
        "$work/pose/package/pose_solution_packed_assets.data" \
        "$work/pose/package/pose_solution_packed_assets_loader.js"
fi
