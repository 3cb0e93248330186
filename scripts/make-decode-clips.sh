#!/usr/bin/env bash
# Makes, with this machine's (Debian's) ffmpeg, the clips the GPU decoding
# tests and `omma bench decode` read, from the real photo
# testdata/astronaut.png (scripts/fetch-testdata.sh fetches it), into DIR
# (default testdata/decode). The GPU machine has no encoders: make them
# here and carry them there with testdata/.
#   pan_h264.mp4, pan_hevc.mp4, pan_vp9.webm, pan_mjpeg.avi: 640x480, 24
#     frames at 15 fps, the photo panning (as testdata/astronaut_pan.mp4)
#   pan_hevc10.mkv: the same in 10-bit HEVC (GPU decoding refuses it)
#   pan_mjpeg422.avi, pan_mjpeg444.mkv, pan_mjpeg_gray.avi: the same in
#     MJPEG at 4:2:2 (most webcams' MJPEG), 4:4:4 (in Matroska) and grey
#     (nvJPEG decodes them on the GPU)
#   pan1080_mjpeg422.avi: 1920x1080 4:2:2 MJPEG, 2 s at 30 fps, as a USB
#     webcam sends at 1080p30 (the MJPEG row of omma bench decode)
#   pan1080_h264.mp4, pan1080_hevc.mp4: 1920x1080, 10 s at 30 fps, the
#     photo scaled to fill the frame width and panning down, with noise, a
#     key frame every 2 s, no B-frames, 4 / 3 Mb/s (as an IP camera sends)
#   usage: scripts/make-decode-clips.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/testdata/decode}
photo=$root/testdata/astronaut.png
[ -f "$photo" ] || { echo "make-decode-clips: $photo missing (run scripts/fetch-testdata.sh)" >&2; exit 1; }
mkdir -p "$dest"
make_clip() { # name size frames rate filter codec-options...
    local name=$1 frames=$2 rate=$3 filter=$4
    shift 4
    [ -s "$dest/$name" ] && return 0
    ffmpeg -nostdin -hide_banner -loglevel error -y -loop 1 -framerate "$rate" -i "$photo" \
        -vf "$filter" -frames:v "$frames" "$@" -map_metadata -1 "$dest/.tmp.$name"
    mv -f "$dest/.tmp.$name" "$dest/$name"
    echo "make-decode-clips: $name"
}
pan="scale=768:768:flags=bicubic,crop=640:480:x='16+4*n':y=60"
make_clip pan_h264.mp4 24 15 "$pan,format=yuv420p" -c:v libx264 -preset medium -crf 18 -threads 1
make_clip pan_hevc.mp4 24 15 "$pan,format=yuv420p" -c:v libx265 -preset fast -crf 20 \
    -x265-params log-level=error -tag:v hvc1
make_clip pan_vp9.webm 24 15 "$pan,format=yuv420p" -c:v libvpx-vp9 -b:v 1M -threads 1
make_clip pan_mjpeg.avi 24 15 "$pan,format=yuvj420p" -c:v mjpeg -q:v 3
make_clip pan_mjpeg422.avi 24 15 "$pan,format=yuvj422p" -c:v mjpeg -q:v 3
make_clip pan_mjpeg444.mkv 24 15 "$pan,format=yuvj444p" -c:v mjpeg -q:v 3
make_clip pan_mjpeg_gray.avi 24 15 "$pan,format=gray" -c:v mjpeg -q:v 3
make_clip pan_hevc10.mkv 24 15 "$pan,format=yuv420p10le" -c:v libx265 -preset fast -crf 20 \
    -x265-params log-level=error
# Sensor-like noise keeps the bitrate of a real camera (4 Mb/s H.264,
# 3 Mb/s HEVC, constant): a clean still photo would compress to a tenth
# of that, and decoding cost grows with the bits.
big="scale=1920:-2:flags=bicubic,crop=1920:1080:x=0:y='min(n*2\\,ih-1080)',noise=alls=12:allf=t"
make_clip pan1080_h264.mp4 300 30 "$big,format=yuv420p" -c:v libx264 -preset veryfast \
    -b:v 4M -maxrate 4M -bufsize 4M -g 60 -bf 0 -movflags +faststart
make_clip pan1080_hevc.mp4 300 30 "$big,format=yuv420p" -c:v libx265 -preset fast \
    -x265-params log-level=error:keyint=60:bframes=0:vbv-maxrate=3000:vbv-bufsize=3000:bitrate=3000 \
    -tag:v hvc1 -movflags +faststart
make_clip pan1080_mjpeg422.avi 60 30 "$big,format=yuvj422p" -c:v mjpeg -q:v 5
