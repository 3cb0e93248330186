#!/bin/sh
# Recording (io/recorder.c, omma stream --record; docs/RECORDING.md), checked
# with Debian's ffprobe/ffmpeg on clips made here (H.264 with B-frames and a
# key frame every half second, HEVC, MJPEG) and the test video:
#   - remuxed in segments of 1 s: every frame in exactly one segment (frame
#     counts of the segments add up to the source's), each segment starts
#     on a key frame, the packets are the source's bit for bit (framemd5 of
#     the source vs the segments, in order), and each sidecar CSV lists its
#     segment's frames: the times in the file (ffprobe's) and the frame
#     numbers 0..N-1 once each across the sidecars;
#   - a looped video (rewinds) records every pass, a new segment each;
#   - encoded (raw frames, libx264) in segments: every frame there, every
#     segment decodes without an error;
#   - kill -9 mid-recording (remux and encode): the closed segments are
#     whole (all their sidecar's frames, decode cleanly), the open one is
#     readable and holds all but about its last second of frames;
#   - omma stream --record on the CPU backend: a video camera remuxed and an
#     image directory encoded, named by the template, frame numbers and
#     capture times equal to the --data files' (the runtime's frame numbers,
#     as the VideoSync stream's); bad --record, --record-name and
#     --record-segment values give clear errors;
#   - network cameras through omma stream --record: HTTP MJPEG (remuxed
#     without timestamps of its own) and RTSP H.264 with B-frames (RTP gives
#     no decode times) where GStreamer's RTSP server is there for python3.
# "Decodes cleanly": ffmpeg -v error prints nothing, its frames passed
# through as timed (encoded recordings are timed by capture, variable rate).
# Skips (77) without FFmpeg in the build or without ffmpeg/ffprobe.
# usage: test_recorder.sh RECORD_TOOL OMMA TESTDATA_DIR
tool=$1 omma=$2 data=$3
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
if ! command -v ffprobe >/dev/null 2>&1 || ! command -v ffmpeg >/dev/null 2>&1; then
    echo "SKIP: no ffmpeg/ffprobe (scripts/install-deps.sh installs them)"
    exit 77
fi
tmp=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/probe"
"$tool" remux "$tmp/probe" "$data/astronaut_pan.mp4" none >/dev/null 2>&1
[ $? = 77 ] && { echo "SKIP: built without FFmpeg"; exit 77; }

ff() { ffmpeg -nostdin -v error -y "$@"; }
ff -f lavfi -i testsrc2=size=320x240:rate=30 -t 6 -c:v libx264 -g 15 -bf 2 -pix_fmt yuv420p \
    "$tmp/h264.mp4" || fail "ffmpeg could not make the H.264 clip"
# Closed GOPs, as cameras send: an open GOP's leading pictures after the
# key frame a segment starts on need the previous segment (RECORDING.md).
ff -f lavfi -i testsrc2=size=320x240:rate=30 -t 3 -c:v libx265 -preset ultrafast \
    -x265-params log-level=error:no-open-gop=1 -g 15 -pix_fmt yuv420p "$tmp/hevc.mp4" \
    2>/dev/null || rm -f "$tmp/hevc.mp4"
ff -f lavfi -i testsrc2=size=320x240:rate=15 -t 3 -c:v mjpeg -q:v 5 "$tmp/mjpeg.avi" ||
    fail "ffmpeg could not make the MJPEG clip"
ff -f lavfi -i testsrc2=size=320x240:rate=30 -t 12 -c:v libx264 -g 15 -bf 2 -pix_fmt yuv420p \
    "$tmp/long.mp4" || fail "ffmpeg could not make the long clip"
ff -f lavfi -i testsrc2=size=640x480:rate=30 -t 6 -c:v libx264 -preset ultrafast -crf 12 -g 15 \
    -bf 2 -pix_fmt yuv420p "$tmp/big.mp4" || fail "ffmpeg could not make the 3 MB clip"

frames_in() { # FILE -> frames decoded
    ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
        -of csv=p=0 "$1" 2>/dev/null | head -n 1
}
segments_of() { # DIR -> its .mkv files, oldest first (names hold the start time)
    ls "$1"/*.mkv 2>/dev/null | sort
}
rows_of() { # CSV -> its rows without the header
    tail -n +2 "$1"
}
csv_of() { echo "${1%.mkv}.csv"; }
pts_in() { # FILE -> its frames' times, sorted, 3 decimals
    ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 "$1" |
        awk -F, 'NF && $1 != "N/A" { printf "%.3f\n", $1 }' | sort -n
}
md5s() { # FILE -> its packets' size and md5, in order
    ff -i "$1" -map 0:v:0 -c copy -f framemd5 - 2>/dev/null | grep -v '^#' |
        awk -F, '{ gsub(/ /, ""); print $5, $6 }'
}

# Every frame once across the segments; key frames first; sidecars exact.
check_segments() { # NAME DIR N_SOURCE_FRAMES MIN_SEGMENTS
    name=$1 dir=$2 want=$3 min=$4
    total=0 rows=0 nseg=0
    for seg in $(segments_of "$dir"); do
        nseg=$((nseg + 1))
        n=$(frames_in "$seg")
        total=$((total + ${n:-0}))
        csv=$(csv_of "$seg")
        [ -f "$csv" ] || { fail "$name: $seg has no sidecar"; continue; }
        head -n 1 "$csv" | grep -q '^frame,pts,capture_time,unix_time$' ||
            fail "$name: $csv header is '$(head -n 1 "$csv")'"
        r=$(rows_of "$csv" | wc -l)
        rows=$((rows + r))
        [ "$r" = "$n" ] || fail "$name: $seg has $n frames, its sidecar $r rows"
        rows_of "$csv" | awk -F, '{ printf "%.3f\n", $2 }' | sort -n >"$tmp/csv_pts"
        pts_in "$seg" >"$tmp/file_pts"
        cmp -s "$tmp/csv_pts" "$tmp/file_pts" ||
            fail "$name: $seg: the sidecar's times differ from the file's: $(diff "$tmp/csv_pts" "$tmp/file_pts" | head -n 4 | tr '\n' ' ')"
        first=$(ffprobe -v error -select_streams v:0 -show_entries packet=flags -of csv=p=0 \
            "$seg" | head -n 1)
        case $first in K*) ;; *) fail "$name: $seg starts with a packet flagged '$first'" ;; esac
    done
    [ "$total" = "$want" ] || fail "$name: $total frames in $nseg segments, the source has $want"
    [ "$rows" = "$want" ] || fail "$name: $rows sidecar rows, the source has $want frames"
    [ "$nseg" -ge "$min" ] || fail "$name: $nseg segments, want at least $min"
    cat "$dir"/*.csv | grep -v '^frame' | cut -d, -f1 | sort -n | uniq >"$tmp/numbers"
    seq 0 $((want - 1)) >"$tmp/want_numbers"
    cmp -s "$tmp/numbers" "$tmp/want_numbers" ||
        fail "$name: the sidecars' frame numbers are not 0..$((want - 1)) once each"
    echo "$name: $total frames in $nseg segments"
}

remux() { # NAME SOURCE SEGMENT MIN_SEGMENTS
    dir=$tmp/$1
    mkdir "$dir"
    "$tool" remux "$dir" "$2" "$3" >"$tmp/$1.out" 2>&1 || fail "$1: record_tool: $(tail -n 3 "$tmp/$1.out")"
    grep -q "dropped 0 " "$tmp/$1.out" || fail "$1: $(tail -n 1 "$tmp/$1.out")"
    check_segments "$1" "$dir" "$(frames_in "$2")" "$4"
    md5s "$2" >"$tmp/src.md5"
    for seg in $(segments_of "$dir"); do md5s "$seg"; done >"$tmp/rec.md5"
    [ -s "$tmp/src.md5" ] && cmp -s "$tmp/src.md5" "$tmp/rec.md5" ||
        fail "$1: the recorded packets differ from the source's ($(wc -l <"$tmp/src.md5") vs $(wc -l <"$tmp/rec.md5"))"
}

remux h264 "$tmp/h264.mp4" 1s 5
[ -f "$tmp/hevc.mp4" ] && remux hevc "$tmp/hevc.mp4" 1s 3
remux mjpeg "$tmp/mjpeg.avi" 1s 2
remux pan "$data/astronaut_pan.mp4" none 1
remux big_1MB "$tmp/big.mp4" 1MB 2

# A loop: each rewind a discontinuity, so each pass its own segment.
mkdir "$tmp/loop"
"$tool" remux "$tmp/loop" "$data/astronaut_pan.mp4" none 0 2 >"$tmp/loop.out" 2>&1 ||
    fail "loop: $(tail -n 3 "$tmp/loop.out")"
n=$(frames_in "$data/astronaut_pan.mp4")
check_segments loop "$tmp/loop" $((3 * n)) 3

# What the decoding check's null output says of timestamps that its frame
# rate's time base cannot tell apart (frames captured a few ms apart on a
# loaded machine: a variable frame rate the Matroska file keeps exactly)
# is no decoding error: left out.
no_muxer_notes() {
    grep -v "non monotonically increasing dts to muxer\|Last message repeated" || true
}

# Encoded: the decoded frames through libx264, paced at 30 fps (capture
# times are the timestamps): 2 s segments of a 6 s clip.
mkdir "$tmp/enc"
"$tool" encode "$tmp/enc" "$tmp/h264.mp4" 2s 33 >"$tmp/enc.out" 2>&1 ||
    fail "encode: $(tail -n 3 "$tmp/enc.out")"
grep -q "dropped 0 " "$tmp/enc.out" || fail "encode: $(tail -n 1 "$tmp/enc.out")"
for seg in $(segments_of "$tmp/enc"); do
    err=$(ffmpeg -nostdin -v error -i "$seg" -fps_mode passthrough -f null - 2>&1 | no_muxer_notes)
    [ -z "$err" ] || fail "encode: $seg does not decode cleanly: $err"
    codec=$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$seg")
    [ "$codec" = h264 ] || fail "encode: $seg holds $codec"
done

check_segments encode "$tmp/enc" "$(frames_in "$tmp/h264.mp4")" 2

# kill -9 while recording at about 30 fps, in 2 s segments.
killed() { # NAME MODE
    dir=$tmp/$1
    mkdir "$dir"
    "$tool" "$2" "$dir" "$tmp/long.mp4" 2s 33 >"$tmp/$1.out" 2>&1 &
    pid=$!
    pids="$pids $pid"
    for _ in $(seq 1 300); do
        grep -q '^frame 200$' "$tmp/$1.out" && break
        sleep 0.1
    done
    grep -q '^frame 200$' "$tmp/$1.out" || fail "$1: 200 frames not recorded within 30 s"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    last=$(segments_of "$dir" | tail -n 1)
    nseg=$(segments_of "$dir" | wc -l)
    [ "$nseg" -ge 3 ] || fail "$1: $nseg segments before the kill, want at least 3"
    for seg in $(segments_of "$dir"); do
        n=$(frames_in "$seg")
        r=$(rows_of "$(csv_of "$seg")" | wc -l)
        tail -c 1 "$(csv_of "$seg")" | od -c | grep -q '\\n' ||
            fail "$1: $(csv_of "$seg") ends inside a row"
        if [ "$seg" = "$last" ]; then
            # The open segment: a Matroska file missing at most about its
            # last second (the cluster being built, what the queue held);
            # killed within its first second it may hold no frame yet.
            magic=$(head -c 4 "$seg" | od -An -tx1 | tr -d ' \n')
            [ "$magic" = 1a45dfa3 ] || fail "$1: the open segment $seg is not Matroska ($magic)"
            [ $((${n:-0} + 45)) -ge "$r" ] ||
                fail "$1: the open segment $seg reads ${n:-no} frames of the $r its sidecar lists"
            echo "$1: the open segment reads ${n:-0} of its sidecar's $r frames"
        else
            [ "$n" = "$r" ] || fail "$1: closed segment $seg has $n frames, its sidecar $r"
            err=$(ffmpeg -nostdin -v error -i "$seg" -fps_mode passthrough -f null - 2>&1 | no_muxer_notes)
            [ -z "$err" ] || fail "$1: closed segment $seg does not decode cleanly: $err"
        fi
    done
}
killed kill_remux remux
killed kill_encode encode

# omma stream --record: the runtime's sources, on the CPU backend.
expect() { # WANT_RC WANT_TEXT ARGS...
    want=$1 text=$2
    shift 2
    out=$("$omma" stream --backend cpu --status off --results off "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" != "$want" ] || ! printf '%s' "$out" | grep -q -- "$text"; then
        fail "omma stream $*: exit $rc (want $want), stderr: $out"
    fi
}
video=$data/astronaut_pan.mp4
expect 2 "unknown unit 'x'" --record "$tmp/x" --record-segment 10x "$video"
expect 2 "zero" --record "$tmp/x" --record-segment 0s "$video"
expect 2 "no unit" --record "$tmp/x" --record-segment 500 "$video"
expect 2 "too small" --record "$tmp/x" --record-segment 100kB "$video"
expect 2 "without '/'" --record "$tmp/x" --record-name "a/{camera}.mkv" "$video"
expect 2 "unknown field {cam}" --record "$tmp/x" --record-name "{cam}.mkv" "$video"
expect 2 "must end in .mkv" --record "$tmp/x" --record-name "{camera}.mp4" "$video"
expect 2 "{start} or {segment}" --record "$tmp/x" --record-name "{camera}.mkv" \
    --record-segment 10m "$video"
expect 2 "need --record DIR" --record-segment 10m "$video"
touch "$tmp/file"
expect 1 "not a directory" --record "$tmp/file" "$video"
expect 1 "cannot make it" --record "$tmp/file/sub" "$video"
expect 1 "not writable" --record /proc/self "$video"
[ -e "$tmp/x" ] && fail "a refused run made its --record directory"

mkdir "$tmp/seq"
for k in 0 1 2; do cp "$data/astronaut.png" "$tmp/seq/a$k.png"; done
"$omma" stream --backend cpu --threads 2 --max-frames 6 --realtime off --status off \
    --results off --lsl-name front,side --record "$tmp/cli" --data "$tmp/data" \
    --record-name "{participant}-{camera}-{segment}.mkv" "$video" "$tmp/seq" 2>"$tmp/cli.err" ||
    fail "omma stream --record exited $?: $(cat "$tmp/cli.err")"
[ -f "$tmp/cli/front-front-0001.mkv" ] && [ -f "$tmp/cli/side-side-0001.mkv" ] ||
    fail "omma stream --record made: $(ls "$tmp/cli" | tr '\n' ' ')"
grep -q "record front: 6 frames remuxed in 1 segment" "$tmp/cli.err" ||
    fail "no summary for the video camera: $(cat "$tmp/cli.err")"
grep -q "record side: 3 frames encoded in 1 segment" "$tmp/cli.err" ||
    fail "no summary for the image camera: $(cat "$tmp/cli.err")"
n=$(frames_in "$tmp/cli/side-side-0001.mkv")
[ "$n" = 3 ] || fail "the image camera's recording has $n frames, want 3"
n=$(frames_in "$tmp/cli/front-front-0001.mkv")
[ "${n:-0}" -ge 6 ] || fail "the video camera's recording has $n frames, want at least 6"
for cam in front side; do
    # The --data rows (the runtime's frame numbers, as on LSL) are the
    # recording's: the same numbers with the same capture times.
    tail -n +2 "$tmp/data/$cam.csv" | cut -d, -f1,2 | sort >"$tmp/data_rows"
    tail -n +2 "$tmp/cli/$cam-$cam-0001.csv" | cut -d, -f1,3 | sort >"$tmp/rec_rows"
    [ -s "$tmp/data_rows" ] && [ -z "$(comm -23 "$tmp/data_rows" "$tmp/rec_rows")" ] ||
        fail "$cam: --data rows not in the recording's sidecar: $(comm -23 "$tmp/data_rows" "$tmp/rec_rows" | head -n 3 | tr '\n' ' ')"
done

# Network cameras through omma stream: an HTTP MJPEG camera (net_server.py,
# loopback, a free port) and, where GStreamer's RTSP server is there for
# python3, an RTSP H.264 camera: 30 frames each, their sidecars' times all
# in the files, which decode cleanly.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
here=$(cd "$(dirname "$0")" && pwd)
serve() { # NAME MODE ARGS... -> $port, once it listens
    name=$1 mode=$2
    shift 2
    rm -f "$tmp/$name.port"
    "$py" "$here/../runtime/net_server.py" "$mode" "$tmp/$name.port" "$@" >"$tmp/$name.log" 2>&1 &
    pids="$pids $!"
    for _ in $(seq 1 300); do
        [ -s "$tmp/$name.port" ] && break
        sleep 0.1
    done
    port=$(cat "$tmp/$name.port" 2>/dev/null)
}
mkdir "$tmp/jpg"
ffmpeg -nostdin -v error -i "$video" -q:v 3 "$tmp/jpg/%03d.jpg" || fail "ffmpeg: no JPEGs"
# shellcheck disable=SC2046
serve mjpeg mjpeg $(ls "$tmp/jpg"/*.jpg) --fps 15
urls="" names=""
if [ -n "$port" ]; then
    urls="http://127.0.0.1:$port/cam" names=mjpeg
else
    fail "the MJPEG server did not start: $(cat "$tmp/mjpeg.log")"
fi
if "$py" -c 'import gi; gi.require_version("GstRtspServer", "1.0")
from gi.repository import GstRtspServer' 2>/dev/null; then
    ff -stream_loop 10 -i "$video" -c copy "$tmp/loop.mp4"
    serve rtsp rtsp "$tmp/loop.mp4"
    if [ -n "$port" ]; then
        urls="$urls rtsp://127.0.0.1:$port/cam" names="${names:+$names,}rtsp"
    else
        fail "the RTSP server did not start: $(cat "$tmp/rtsp.log")"
    fi
else
    echo "no GStreamer RTSP server for python3: the RTSP camera is left out"
fi
if [ -n "$urls" ]; then
    # shellcheck disable=SC2086
    "$omma" stream --backend cpu --threads 2 --max-frames 30 --status off --results off \
        --lsl-name "$names" --record "$tmp/net" $urls 2>"$tmp/net.err" ||
        fail "omma stream --record on network cameras exited $?: $(cat "$tmp/net.err")"
fi
for cam in $(echo "$names" | tr , ' '); do
    seg=$(ls "$tmp/net/$cam"_*.mkv 2>/dev/null | head -n 1)
    [ -n "$seg" ] || { fail "$cam: no recording: $(cat "$tmp/net.err")"; continue; }
    r=$(rows_of "$(csv_of "$seg")" | wc -l)
    n=$(frames_in "$seg")
    [ "$r" = 30 ] && [ "${n:-0}" -ge 30 ] || fail "$cam: $n frames in the file, $r sidecar rows (want 30)"
    rows_of "$(csv_of "$seg")" | awk -F, '{ printf "%.3f\n", $2 }' | sort >"$tmp/csv_pts"
    pts_in "$seg" | sort >"$tmp/file_pts"
    [ -z "$(comm -23 "$tmp/csv_pts" "$tmp/file_pts")" ] ||
        fail "$cam: sidecar times not in the file: $(comm -23 "$tmp/csv_pts" "$tmp/file_pts" | head -n 3 | tr '\n' ' ')"
    err=$(ffmpeg -nostdin -v error -i "$seg" -fps_mode passthrough -f null - 2>&1 | no_muxer_notes)
    [ -z "$err" ] || fail "$cam: $seg does not decode cleanly: $err"
    echo "$cam: $n frames recorded, $r in the sidecar"
done

[ "$fails" = 0 ] && echo "ok: recordings complete, bit-identical when remuxed, sidecars exact, kill-safe"
exit $((fails > 0))
