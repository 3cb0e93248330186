#!/usr/bin/env bash
# Fetches real test photos into testdata/, verified by sha256:
# astronaut.png (one face, 512x512) from Debian's python3-skimage package;
# then makes test videos from it with Debian's ffmpeg CLI (see below).
# Re-running does nothing when the files are already good.
#
# usage: scripts/fetch-testdata.sh [DEST]   (default: testdata/ at the repo root)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/testdata}
mkdir -p "$dest"

astronaut_sha=88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5

good() { [ -f "$dest/$1" ] && [ "$(sha256sum "$dest/$1" | cut -d' ' -f1)" = "$2" ]; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! good astronaut.png "$astronaut_sha"; then
    if ! (cd "$work" && apt-get download -qq python3-skimage 2>/dev/null); then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        (cd "$work" && apt-get download -qq python3-skimage)
    fi
    dpkg-deb -x "$work"/python3-skimage_*.deb "$work/x"
    src=$(find "$work/x" -path '*/skimage/data/astronaut.png' | head -n 1)
    if [ -z "$src" ]; then
        echo "fetch-testdata: error: astronaut.png not found in python3-skimage" >&2
        exit 1
    fi
    got=$(sha256sum "$src" | cut -d' ' -f1)
    if [ "$got" != "$astronaut_sha" ]; then
        echo "fetch-testdata: error: astronaut.png has sha256 $got, expected $astronaut_sha; not installed" >&2
        exit 1
    fi
    mv -f "$src" "$dest/astronaut.png"
    echo "fetch-testdata: astronaut.png ok"
fi

# Test videos made from astronaut.png (tests/io/test_video_file.c and
# tests/pipeline/test_video_tracking.c rely on these exact parameters; change
# both together). Both: 640x480, 24 frames
# at 15 fps, H.264 (libx264, yuv420p, crf 18, one thread, so the same
# ffmpeg makes the same bytes; MPEG-4 part 2 where this ffmpeg lacks
# libx264), moov atom first (+faststart: a truncated copy still opens).
# The photo is first scaled 512 -> 768 (x1.5, bicubic): its face, at
# x 181..270, y 84..176 in the photo, is at x 271..406, y 126..264 there.
#   astronaut_pan.mp4     frame n is the 640x480 window of the scaled photo
#                         at x = 16 + 4n, y = 60: the face moves 4 px per
#                         frame LEFT (dx = -4, dy = 0); frame 0 has it at
#                         x 255..390, y 66..204.
#   astronaut_rotate.mp4  frame n is the window at x = 19, y = 0 rotated
#                         about the frame centre (320, 240) by n * 0.625
#                         degrees clockwise on screen (0 .. 14.375; corners
#                         black): the eye line's angle atan2(dy, dx), y
#                         down, grows by 0.625 degrees per frame.
video_frames=24
if ! command -v ffmpeg >/dev/null || ! command -v ffprobe >/dev/null; then
    echo "fetch-testdata: error: ffmpeg/ffprobe not found (scripts/install-deps.sh installs" \
        "Debian's ffmpeg); the test videos were not made" >&2
    exit 1
fi
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null || true)
if grep -q ' libx264 ' <<<"$encoders"; then
    codec=(-c:v libx264 -preset medium -crf 18)
else
    codec=(-c:v mpeg4 -q:v 2)
fi
video_ok() {
    [ -s "$dest/$1" ] && [ "$(ffprobe -v error -count_frames -select_streams v:0 \
        -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$dest/$1" 2>/dev/null)" \
        = "640,480,$video_frames" ]
}
make_video() { # name filter
    video_ok "$1" && return 0
    ffmpeg -nostdin -hide_banner -loglevel error -y -loop 1 -framerate 15 \
        -i "$dest/astronaut.png" -vf "$2,format=yuv420p" -frames:v "$video_frames" \
        "${codec[@]}" -threads 1 -movflags +faststart -map_metadata -1 \
        -fflags +bitexact -flags:v +bitexact "$work/$1"
    mv -f "$work/$1" "$dest/$1"
    if ! video_ok "$1"; then
        echo "fetch-testdata: error: $1 made by ffmpeg does not decode to $video_frames" \
            "640x480 frames" >&2
        exit 1
    fi
    echo "fetch-testdata: $1 ok (${codec[1]})"
}
make_video astronaut_pan.mp4 "scale=768:768:flags=bicubic,crop=640:480:x='16+4*n':y=60"
make_video astronaut_rotate.mp4 \
    "scale=768:768:flags=bicubic,crop=640:480:x=19:y=0,rotate=a='n*0.625*PI/180':c=black"
