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

# grace_hopper.jpg (512x600 JPEG, one frontal face of ~110x150 px at about
# x 200..310, y 150..300) from Debian's python-matplotlib-data, pinned:
# the second person of the scene-cut video below.
hopper_sha=a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130
hopper_pkg=python-matplotlib-data=3.6.3-1
if ! good grace_hopper.jpg "$hopper_sha"; then
    if ! (cd "$work" && apt-get download -qq "$hopper_pkg" 2>/dev/null); then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        (cd "$work" && apt-get download -qq "$hopper_pkg")
    fi
    dpkg-deb -x "$work"/python-matplotlib-data_*.deb "$work/m"
    src=$(find "$work/m" -path '*/mpl-data/sample_data/grace_hopper.jpg' | head -n 1)
    if [ -z "$src" ]; then
        echo "fetch-testdata: error: grace_hopper.jpg not found in $hopper_pkg" >&2
        exit 1
    fi
    got=$(sha256sum "$src" | cut -d' ' -f1)
    if [ "$got" != "$hopper_sha" ]; then
        echo "fetch-testdata: error: grace_hopper.jpg has sha256 $got, expected $hopper_sha;" \
            "not installed" >&2
        exit 1
    fi
    mv -f "$src" "$dest/grace_hopper.jpg"
    echo "fetch-testdata: grace_hopper.jpg ok"
fi

# messi5.jpg (548x342 JPEG, one footballer shot full length while kicking:
# head near x 205..265, y 65..130, arms out to both sides, feet near x 280,
# y 325 and x 440, y 275) from Debian's opencv-doc examples, pinned: the
# pose pipeline's photo.
messi_sha=1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9
messi_pkg=opencv-doc=4.6.0+dfsg-12
if ! good messi5.jpg "$messi_sha"; then
    if ! (cd "$work" && apt-get download -qq "$messi_pkg" 2>/dev/null); then
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        (cd "$work" && apt-get download -qq "$messi_pkg")
    fi
    # Only the one file: the package holds ~100 MB of examples.
    dpkg-deb --fsys-tarfile "$work"/opencv-doc_*.deb |
        tar -x -C "$work" ./usr/share/doc/opencv-doc/examples/data/messi5.jpg 2>/dev/null || true
    src="$work/usr/share/doc/opencv-doc/examples/data/messi5.jpg"
    if [ ! -f "$src" ]; then
        echo "fetch-testdata: error: messi5.jpg not found in $messi_pkg" >&2
        exit 1
    fi
    got=$(sha256sum "$src" | cut -d' ' -f1)
    if [ "$got" != "$messi_sha" ]; then
        echo "fetch-testdata: error: messi5.jpg has sha256 $got, expected $messi_sha; not installed" >&2
        exit 1
    fi
    mv -f "$src" "$dest/messi5.jpg"
    echo "fetch-testdata: messi5.jpg ok"
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

# faces_cut.mp4: a scene cut between two people (tests/pipeline/
# scene_cut.c relies on these exact parameters; change both together).
# 640x480, 24 frames at 15 fps, encoded as above. Frames 0..11 are the
# window at x = 128, y = 60 of astronaut.png scaled 512 -> 768; frames
# 12..23 are grace_hopper.jpg scaled 512x600 -> 358x420 (bicubic) on a grey
# (128) canvas at x = 107, y = 9: the second face lies down and right of
# the first, partly inside the region the tracker watched for the first.
if ! video_ok faces_cut.mp4; then
    ffmpeg -nostdin -hide_banner -loglevel error -y \
        -loop 1 -framerate 15 -i "$dest/astronaut.png" \
        -loop 1 -framerate 15 -i "$dest/grace_hopper.jpg" \
        -filter_complex "[0:v]scale=768:768:flags=bicubic,crop=640:480:x=128:y=60,setsar=1,trim=end_frame=12,setpts=PTS-STARTPTS[a];[1:v]scale=358:420:flags=bicubic,pad=640:480:107:9:color=0x808080,setsar=1,trim=end_frame=12,setpts=PTS-STARTPTS[b];[a][b]concat=n=2:v=1,format=yuv420p" \
        -frames:v "$video_frames" "${codec[@]}" -threads 1 -movflags +faststart -map_metadata -1 \
        -fflags +bitexact -flags:v +bitexact "$work/faces_cut.mp4"
    mv -f "$work/faces_cut.mp4" "$dest/faces_cut.mp4"
    if ! video_ok faces_cut.mp4; then
        echo "fetch-testdata: error: faces_cut.mp4 made by ffmpeg does not decode to" \
            "$video_frames 640x480 frames" >&2
        exit 1
    fi
    echo "fetch-testdata: faces_cut.mp4 ok (${codec[1]})"
fi
