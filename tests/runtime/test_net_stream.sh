#!/bin/sh
# Network cameras end to end, on the CPU backend, against real servers on
# loopback (net_server.py; free ports; every server stopped by its PID on
# every exit path):
#   - GStreamer's RTSP server plays an H.264 video made from the test photos:
#     the camera connects (TCP), frames arrive with increasing timestamps and
#     faces; the capture clock comes from the stream's RTCP reports; the
#     server is killed: the status, the JSON status lines and the OpenMetrics
#     endpoint say reconnecting; restarted on its port: the camera runs again
#     and more frames come; SIGINT ends the run (130). RTSP over UDP too.
#   - An HTTP MJPEG camera (multipart/x-mixed-replace from JPEGs of the same
#     video) goes silent mid-stream: reported after the read timeout,
#     reconnected, faces found; the RTSP camera beside it keeps delivering.
#   - HLS: a playlist of MPEG-TS segments of the video over HTTP.
#   - Clear errors naming the camera: a server that accepts and never answers
#     (within the connect timeout), refused connections, a URL without host,
#     unknown paths (RTSP and HTTP 404), a video codec FFmpeg cannot decode
#     (JPEG 2000 over RTP), a stream with no video, corrupt streams (random
#     bytes over RTSP and HTTP); a password in a URL is never shown.
# No timing is asserted beyond generous limits on waiting for events.
# Skips (77) without FFmpeg in the build or without GStreamer's RTSP server
# for python3 (scripts/install-deps.sh installs it).
# usage: test_net_stream.sh OMMA TESTDATA_DIR
omma=$1 data=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
[ -x "$py" ] || py=python3
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
tmp=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$omma" stream --backend cpu --max-frames 1 --realtime off --status off --results off \
    "$data/astronaut_pan.mp4" 2>"$tmp/probe"
if grep -qi "without FFmpeg" "$tmp/probe"; then
    echo "SKIP: omma was built without FFmpeg"
    exit 77
fi
if ! "$py" -c 'import gi; gi.require_version("GstRtspServer", "1.0")
from gi.repository import GstRtspServer' 2>/dev/null; then
    echo "SKIP: no GStreamer RTSP server for $py (python3-gi, gir1.2-gst-rtsp-server-1.0)"
    exit 77
fi

# A long H.264 video from the test clip (frames of a real photo), and its
# frames as JPEGs.
ffmpeg -v error -stream_loop 150 -i "$data/astronaut_pan.mp4" -c copy "$tmp/long.mp4" ||
    { echo "FAIL: ffmpeg could not make the looped video"; exit 1; }
mkdir "$tmp/jpg"
ffmpeg -v error -i "$data/astronaut_pan.mp4" -q:v 3 "$tmp/jpg/%03d.jpg" ||
    { echo "FAIL: ffmpeg could not make the JPEGs"; exit 1; }

# start_server NAME MODE [ARGS...]: runs net_server.py, sets $port and
# NAME_pid once it listens.
start_server() {
    name=$1 mode=$2
    shift 2
    rm -f "$tmp/$name.port"
    "$py" "$here/net_server.py" "$mode" "$tmp/$name.port" "$@" >"$tmp/$name.log" 2>&1 &
    eval "${name}_pid=$!"
    pids="$pids $!"
    k=0
    while [ ! -s "$tmp/$name.port" ] && [ $k -lt 300 ]; do
        sleep 0.1
        k=$((k + 1))
    done
    port=$(cat "$tmp/$name.port" 2>/dev/null)
    [ -n "$port" ] || { echo "FAIL: the $mode server did not start: $(cat "$tmp/$name.log")"; exit 1; }
}

stop_server() { # NAME
    eval "p=\$${1}_pid"
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
}

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s.
wait_for() {
    limit=$(($1 * 5)) what=$2
    shift 2
    k=0
    while ! "$@" >/dev/null 2>&1; do
        k=$((k + 1))
        if [ $k -ge $limit ]; then
            fail "waited $((limit / 5)) s for $what"
            return 1
        fi
        sleep 0.2
    done
    return 0
}

# processed_at_least FILE CAMERA N: the last JSON status line in FILE has
# camera CAMERA with at least N frames processed.
processed_at_least() {
    "$py" - "$@" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('{"time_unix_ms"')]
cams = json.loads(lines[-1])["cameras"] if lines else []
sys.exit(0 if any(c["index"] == int(sys.argv[2]) and c["frames_processed"] >= int(sys.argv[3])
                  for c in cams) else 1)
PY
}

processed_now() { # FILE CAMERA
    "$py" - "$@" <<'PY'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('{"time_unix_ms"')]
cams = json.loads(lines[-1])["cameras"] if lines else []
print(sum(c["frames_processed"] for c in cams if c["index"] == int(sys.argv[2])))
PY
}

reconnecting_line() { # FILE: a JSON status line with a camera reconnecting, attempt >= 1
    "$py" - "$@" <<'PY'
import json, sys
sys.exit(0 if any(c["state"] == "reconnecting" and c["attempt"] >= 1 and c["error"]
                  for l in open(sys.argv[1]) if l.startswith('{"time_unix_ms"')
                  for c in json.loads(l)["cameras"]) else 1)
PY
}

metrics_has() { # PORT TEXT
    "$py" - "$@" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
sys.exit(0 if sys.argv[2] in text else 1)
PY
}

# check_results FILE CAMERA MIN_FACE_FRAMES: the camera's frames in order
# with increasing timestamps, and at least MIN frames with a face.
check_results() {
    "$py" - "$@" <<'PY'
import json, sys
path, cam, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open(path)]
rows = [r for r in rows if r["camera"] == cam]
frames = [r["frame"] for r in rows]
ts = [r["timestamp_ms"] for r in rows]
faced = sum(1 for r in rows if r["faces"])
ok = True
if frames != sorted(frames) or len(set(frames)) != len(frames):
    print(f"camera {cam}: frames not increasing: {frames[:20]}"); ok = False
if any(b <= a for a, b in zip(ts, ts[1:])):
    print(f"camera {cam}: timestamps not increasing: {ts[:20]}"); ok = False
if faced < want:
    print(f"camera {cam}: {faced} of {len(rows)} frames with a face, want at least {want}")
    ok = False
sys.exit(0 if ok else 1)
PY
}

common="--backend cpu --threads 2 --status json --status-every 0.5"

# ---- RTSP over TCP: connect, frames with faces, server killed and back ----
start_server rtsp rtsp "$tmp/long.mp4"
rport=$port
url="rtsp://127.0.0.1:$rport/cam"
"$omma" stream $common --read-timeout 3 --connect-timeout 10 --metrics-port 0 \
    --metrics-bind 127.0.0.1 --out "$tmp/rtsp.jsonl" "$url" 2>"$tmp/rtsp.err" &
omma_pid=$!
pids="$pids $omma_pid"
if wait_for 120 "the RTSP camera's first frames" processed_at_least "$tmp/rtsp.err" 0 3; then
    mport=$(sed -n 's|.*OpenMetrics at http://[0-9.]*:\([0-9]*\)/metrics.*|\1|p' "$tmp/rtsp.err")
    [ -n "$mport" ] || fail "no OpenMetrics port in: $(head -3 "$tmp/rtsp.err")"
    wait_for 60 "capture times from the stream's RTCP clock" \
        grep -q '"capture_clock":"stream"' "$tmp/rtsp.err"
    stop_server rtsp
    wait_for 60 "'reconnecting' after the server was killed" \
        grep -q "camera 0 ($url) reconnecting, attempt 1" "$tmp/rtsp.err"
    wait_for 30 "a JSON status line saying reconnecting" reconnecting_line "$tmp/rtsp.err"
    [ -z "$mport" ] || wait_for 30 "OpenMetrics saying reconnecting" metrics_has "$mport" \
        'omma_camera_state{camera="0:'"$url"'",omma_camera_state="reconnecting"} 1'
    before=$(processed_now "$tmp/rtsp.err" 0)
    start_server rtsp rtsp "$tmp/long.mp4" --port "$rport"
    wait_for 90 "the camera running again after the restart" \
        grep -q "camera 0 ($url) running again" "$tmp/rtsp.err" &&
        wait_for 120 "frames after the reconnection" \
            processed_at_least "$tmp/rtsp.err" 0 $((before + 3))
    [ -z "$mport" ] || metrics_has "$mport" 'omma_camera_reconnects_total{camera="0:'"$url"'"} 1' ||
        fail "OpenMetrics: no omma_camera_reconnects_total 1"
fi
kill -INT "$omma_pid"
wait "$omma_pid"
rc=$?
[ "$rc" = 130 ] || fail "RTSP run: SIGINT gave exit $rc, want 130: $(grep -v '^{' "$tmp/rtsp.err")"
grep -q '"reconnects":1' "$tmp/rtsp.err" || fail "no status line with reconnects 1"
check_results "$tmp/rtsp.jsonl" 0 5 || fail "RTSP results: see above"

# ---- RTSP over UDP ----
"$omma" stream $common --rtsp-transport udp --max-frames 30 --out "$tmp/udp.jsonl" "$url" \
    2>"$tmp/udp.err"
rc=$?
[ "$rc" = 0 ] || fail "RTSP over UDP: exit $rc: $(grep -v '^{' "$tmp/udp.err")"
check_results "$tmp/udp.jsonl" 0 1 || fail "RTSP over UDP results: see above"

# ---- HTTP MJPEG going silent mid-stream, beside the RTSP camera ----
start_server mjpeg mjpeg "$tmp"/jpg/*.jpg --stall-after 20
murl="http://127.0.0.1:$port/cam"
"$omma" stream $common --read-timeout 2 --out "$tmp/mjpeg.jsonl" "$url" "$murl" \
    2>"$tmp/mjpeg.err" &
omma_pid=$!
pids="$pids $omma_pid"
if wait_for 60 "the MJPEG camera's read timeout" \
    grep -q "camera 1 ($murl) reconnecting, attempt 1: no data for 2.0 s (read timeout)" \
    "$tmp/mjpeg.err"; then
    wait_for 60 "the MJPEG camera running again" \
        grep -q "camera 1 ($murl) running again" "$tmp/mjpeg.err"
    # The RTSP camera kept delivering while the other was silent: over the
    # status lines where camera 1's frame count stood still at its value
    # when it went reconnecting, camera 0's grew.
    "$py" - "$tmp/mjpeg.err" <<'PY' || fail "the RTSP camera stalled while the MJPEG one was silent"
import json, sys
snaps = [{c["index"]: c for c in json.loads(l)["cameras"]}
         for l in open(sys.argv[1]) if l.startswith('{"time_unix_ms"')]
first = next(i for i, s in enumerate(snaps) if s[1]["state"] == "reconnecting")
stuck = [s for s in snaps[:first + 1] if s[1]["frames_in"] == snaps[first][1]["frames_in"]]
print(f"camera 0 frames in while camera 1 was silent: {[s[0]['frames_in'] for s in stuck]}")
sys.exit(0 if len(stuck) >= 2 and stuck[-1][0]["frames_in"] > stuck[0][0]["frames_in"] else 1)
PY
    wait_for 120 "MJPEG frames processed" processed_at_least "$tmp/mjpeg.err" 1 3
fi
kill -INT "$omma_pid"
wait "$omma_pid"
check_results "$tmp/mjpeg.jsonl" 1 2 || fail "MJPEG results: see above"
stop_server mjpeg

# ---- HLS: a playlist of MPEG-TS segments over HTTP ----
mkdir "$tmp/hls"
ffmpeg -v error -i "$tmp/long.mp4" -t 10 -c copy -f hls -hls_time 2 -hls_list_size 0 \
    "$tmp/hls/index.m3u8" || fail "ffmpeg could not make the HLS playlist"
"$py" -u -m http.server 0 --bind 127.0.0.1 --directory "$tmp/hls" >"$tmp/hls.log" 2>&1 &
hls_pid=$!
pids="$pids $hls_pid"
wait_for 30 "the HLS server" grep -q "port [0-9]" "$tmp/hls.log"
hport=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$tmp/hls.log" | head -1)
"$omma" stream $common --max-frames 20 --out "$tmp/hls.jsonl" \
    "http://127.0.0.1:$hport/index.m3u8" 2>"$tmp/hls.err"
rc=$?
[ "$rc" = 0 ] || fail "HLS: exit $rc: $(grep -v '^{' "$tmp/hls.err")"
check_results "$tmp/hls.jsonl" 0 1 || fail "HLS results: see above"
kill "$hls_pid"
wait "$hls_pid" 2>/dev/null

# ---- Clear errors, each naming the camera ----
expect_error() { # WANT_TEXT URL [OPTIONS...]: exit 1 (2 for a malformed URL)
    want=$1 u=$2 want_rc=1
    [ "$u" = "rtsp://" ] && want_rc=2
    shift 2
    out=$(timeout 120 "$omma" stream --backend cpu --status off --results off \
        --connect-timeout 2 --read-timeout 2 "$@" "$u" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" != "$want_rc" ] || ! printf '%s' "$out" | grep -qF -- "$u" ||
        ! printf '%s' "$out" | grep -q -- "$want"; then
        fail "omma stream $u: exit $rc (want $want_rc), stderr: $out (want '$want')"
    fi
}
start_server silent silent
expect_error "no answer within 2.0 s" "rtsp://127.0.0.1:$port/cam"
expect_error "no answer within 2.0 s" "http://127.0.0.1:$port/cam"
stop_server silent
start_server garbage garbage
expect_error "not a stream omma can read" "rtsp://127.0.0.1:$port/cam"
expect_error "connecting" "http://127.0.0.1:$port/cam"
stop_server garbage
free=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_error "Connection refused" "rtsp://127.0.0.1:$free/cam"
expect_error "Connection refused" "http://127.0.0.1:$free/cam"
expect_error "no host" "rtsp://"
# A password in the URL is never shown.
out=$("$omma" stream --backend cpu --status off --results off \
    "rtsp://bob:secret@127.0.0.1:$free/cam" 2>&1 >/dev/null)
printf '%s' "$out" | grep -qF "rtsp://***@127.0.0.1:$free/cam" && ! printf '%s' "$out" | grep -q secret ||
    fail "a URL's password: $out"
expect_error "404" "rtsp://127.0.0.1:$rport/nothing"
expect_error "FFmpeg cannot decode" "rtsp://127.0.0.1:$rport/j2k"
expect_error "no video stream" "rtsp://127.0.0.1:$rport/gst"
start_server mjpeg mjpeg "$tmp"/jpg/*.jpg
expect_error "404" "http://127.0.0.1:$port/other"
stop_server mjpeg
stop_server rtsp

# Bad option values.
for args in "--rtsp-transport sctp" "--connect-timeout 0" "--read-timeout -1" \
    "--reconnect-max x" "--backoff-max 0.1"; do
    "$omma" stream --backend cpu $args "$url" >/dev/null 2>&1
    rc=$?
    [ "$rc" = 2 ] || fail "omma stream $args: exit $rc, want 2"
done

[ "$fails" = 0 ] && echo "all network camera checks passed"
[ "$fails" = 0 ]
