#!/bin/sh
# omma stream --pose on the CPU backend (or, with BACKEND gpu, the GPU
# backend: its batched GPU pose on the frames in device memory, the same
# checks), on real people: a usage error (a bad model name); then one run, looping,
# with --lsl, on two videos made here with ffmpeg: testdata/messi5.jpg (a
# footballer shot full length, face near x 224..256, y 95..129) as camera
# 0, and the same photo beside astronaut.png (a second person whose face is
# larger) as camera 1, with two participants by region there (E left, L
# right) and --max-poses 2:
#   - camera 0: every record has one pose whose "face" is the frame's face,
#     whose nose lies in that face's box, and no participant names;
#   - camera 1: the astronaut's face carries the name E and the pose over it
#     points at it; a pose on the footballer (whose face is too small for
#     the detector in the wider frame) has face null, never the other
#     person's;
#   - E_pose read back with omma lsl read (132 channels, labelled): her nose
#     where the photo has it; L_pose NaN with visibility 0 (no face, so no
#     pose of L's);
#   - every result line passes docs/omma-faces.schema.json;
#   - the live view (--ui) sends camera 0's results with the pose attached
#     to its face (what its page draws the pose overlay from).
# The camera streams' NAME_pose layout is tested in tests/lsl/test_lsl_proto.c.
# Exits 77 without ffmpeg, the models or a build with FFmpeg (gpu: or a GPU).
# usage: test_cli_stream_pose.sh OMMA TESTDATA_DIR MODELS_DIR [BACKEND [POSE]]
#        (BACKEND cpu or gpu, default cpu; POSE the landmark model, lite)
omma=$1 data=$2 models=$3 backend=${4:-cpu} model=${5:-lite}
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/omma-pose-XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export OMMA_DATA
OMMA_DATA=$(dirname "$models")

out=$("$omma" stream --backend "$backend" --pose tiny synthetic 2>&1 >/dev/null)
rc=$?
[ $rc = 2 ] && printf '%s' "$out" | grep -q -- "--pose tiny: expected lite, full or heavy" ||
    fail "--pose tiny: exit $rc: $out"

if ! command -v ffmpeg >/dev/null || ! command -v python3 >/dev/null ||
    [ ! -f "$models/pose_landmark_$model.tflite" ] || [ ! -f "$data/messi5.jpg" ]; then
    echo "SKIP: ffmpeg, python3, the pose models or messi5.jpg missing"
    [ $fails = 0 ] && exit 77
    exit 1
fi
# The clips, or the same clips made beforehand (OMMA_POSE_CLIPS: a folder
# with messi.avi and pair.avi, for machines whose ffmpeg is a minimal
# build without PNG, image2 or these filters).
if [ -n "${OMMA_POSE_CLIPS:-}" ]; then
    cp "$OMMA_POSE_CLIPS/messi.avi" "$OMMA_POSE_CLIPS/pair.avi" "$tmp/" || exit 1
elif ! ffmpeg -loglevel error -y -loop 1 -i "$data/messi5.jpg" -frames:v 4 -r 10 -c:v mjpeg \
    -q:v 2 "$tmp/messi.avi" ||
    ! ffmpeg -loglevel error -y -i "$data/astronaut.png" -i "$data/messi5.jpg" \
        -filter_complex "[0]scale=342:342[a];[a][1]hstack,loop=3:1:0" -r 10 -c:v mjpeg -q:v 2 \
        "$tmp/pair.avi"; then
    echo "SKIP: this ffmpeg cannot make the clips (set OMMA_POSE_CLIPS)"
    [ $fails = 0 ] && exit 77
    exit 1
fi
"$omma" stream --backend "$backend" --max-frames 1 --realtime off --status off --results off \
    "$tmp/messi.avi" 2>"$tmp/probe"
probe=$?
if [ $probe != 0 ] && grep -qi "without FFmpeg" "$tmp/probe"; then
    echo "SKIP: no FFmpeg in this build"
    [ $fails = 0 ] && exit 77
    exit 1
fi
if [ "$backend" = gpu ] && [ $probe = 3 ]; then # no GPU (or no CUDA): the runtime says so
    echo "SKIP: no GPU: $(cat "$tmp/probe")"
    [ $fails = 0 ] && exit 77
    exit 1
fi
threads=
[ "$backend" = cpu ] && threads="--threads 2"

# Starts omma stream ARGS... in the background (stdout: results), then
# reads 2 samples of each stream NAME given in READS into $tmp/NAME.
run_and_read() { # TAG "READS" ARGS...
    tag=$1 reads=$2
    shift 2
    # shellcheck disable=SC2086 # $threads: empty or two words
    "$omma" stream --backend "$backend" $threads --model full --pose "$model" --status off --loop \
        --duration 120 --lsl --ui 127.0.0.1:0 "$@" >"$tmp/$tag.jsonl" 2>"$tmp/$tag.err" &
    pid=$!
    readers=
    for s in $reads; do # at once: the same frames serve them all
        "$omma" lsl read "$s" --count 2 --json --wait 60 >"$tmp/$s" 2>"$tmp/$s.err" &
        readers="$readers $!"
    done
    for r in $readers; do
        wait "$r" || fail "lsl read: exit $?: $(cat "$tmp"/*.err)"
    done
    ui_check "$tmp/$tag.err"
    kill -INT $pid
    wait $pid
    rc=$?
    pid=
    [ $rc = 130 ] || fail "$tag: exit $rc after SIGINT: $(cat "$tmp/$tag.err")"
}

# The live view's events (its address from omma's log ERR): a result of
# camera 0 whose pose is attached to its face.
ui_check() { # ERR
    url=$(grep -o "live view at http://[^ ]*" "$1" | head -n 1 | sed 's/live view at //')
    python3 - "$url" <<'PY' || fail "the live view's results (above)"
import json, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
if not u.port:
    print("no live view address in the log")
    sys.exit(1)
query = "cams=0,1&large=0" + ("&" + u.query if u.query else "")
s = socket.create_connection((u.hostname, u.port), timeout=30)
s.sendall(("GET /api/events?%s HTTP/1.0\r\nHost: x\r\n\r\n" % query).encode())
buf, end = b"", time.time() + 30
while time.time() < end:
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
    for line in buf.split(b"\n"):
        if not line.startswith(b"data: {") or b'"pose"' not in line:
            continue
        try:
            r = json.loads(line[6:])
        except ValueError:
            continue
        if r.get("camera") == 0 and r.get("pose") and r.get("faces") and \
                r["pose"][0].get("face") == r["faces"][0]["id"]:
            print("ok: the live view's results carry camera 0's pose, attached to its face")
            sys.exit(0)
print("no live view result of camera 0 with its pose attached to its face: %r" % buf[-600:])
sys.exit(1)
PY
}

e=eileen$$ l=leo$$ # the participants (their LSL streams' names)
run_and_read two "${e}_pose ${l}_pose" --lsl-name "solo$$,pair$$" --max-faces 4 --max-poses 2 \
    --participant "$e=1:0,0,0.38,1" --participant "$l=1:0.38,0,0.62,1" "$tmp/messi.avi" \
    "$tmp/pair.avi"
grep -q "LSL stream ${e}_pose (Pose, 132 channels)" "$tmp/two.err" ||
    fail "no participant pose stream said: $(cat "$tmp/two.err")"
grep -q "channel labels: nose_x nose_y nose_z nose_visibility left_eye_inner_x" \
    "$tmp/${e}_pose.err" || fail "pose labels: $(cat "$tmp/${e}_pose.err")"

schema=$(dirname "$0")/../../docs/omma-faces.schema.json
python3 - "$tmp" "$e" "$l" "$schema" <<'PY' || fail "the results (above)"
import json, math, sys
tmp, eileen, leo, schema_path = sys.argv[1:]
bad = []
try:  # every line, pose and participant names included, valid (python3-jsonschema)
    import jsonschema
    v = jsonschema.Draft202012Validator(json.load(open(schema_path)))
    for line in open(tmp + "/two.jsonl"):
        for e in list(v.iter_errors(json.loads(line)))[:1]:
            bad.append("a line the schema rejects: %s" % e.message[:200])
except ImportError:
    print("no python3-jsonschema: the schema check is left out")
def records(path):
    out = []
    for line in open(path):
        r = json.loads(line)
        if "faces" in r:
            out.append(r)
    return out
def samples(path):
    return [json.loads(l)["values"] for l in open(path)]
def inside(pt, box, pad=0):
    return box[0] - pad <= pt[0] <= box[2] + pad and box[1] - pad <= pt[1] <= box[3] + pad

every = records(tmp + "/two.jsonl")
one = [r for r in every if r["camera"] == 0]
if len(one) < 2:
    bad.append("camera 0: %d records" % len(one))
for r in one:
    if len(r.get("pose", [])) != 1 or len(r["faces"]) != 1:
        bad.append("camera 0 frame %d: %d poses, %d faces" % (r["frame"], len(r.get("pose", [])),
                                                             len(r["faces"])))
        continue
    p, f = r["pose"][0], r["faces"][0]
    if p["face"] != f["id"]:
        bad.append("camera 0 frame %d: pose face %s, the face is %d" % (r["frame"], p["face"], f["id"]))
    if not inside(p["landmarks"][0], f["box"]):
        bad.append("camera 0 frame %d: nose %s not in the face box %s" % (
            r["frame"], p["landmarks"][0][:2], f["box"]))
    if "participant" in f:
        bad.append("camera 0: a participant name without participants")
two = [r for r in every if r["camera"] == 1]
if len(two) < 2:
    bad.append("camera 1: %d records" % len(two))
seen_eileen = 0
for r in two:
    faces = {f["id"]: f for f in r["faces"]}
    for f in r["faces"]:
        cx = (f["box"][0] + f["box"][2]) / 2
        want = eileen if cx < 342 else None
        if f.get("participant") != want:
            bad.append("camera 1 frame %d: face at x %.0f named %s" % (r["frame"], cx,
                                                                  f.get("participant")))
    for p in r.get("pose", []):
        nose = p["landmarks"][0]
        if nose[0] < 342:  # the astronaut: her face
            f = faces.get(p["face"])
            if not f or f.get("participant") != eileen or not inside(nose, f["box"]):
                bad.append("camera 1 frame %d: the astronaut's pose has face %s" % (r["frame"],
                                                                               p["face"]))
            else:
                seen_eileen += 1
        elif p["face"] is not None:
            bad.append("camera 1 frame %d: the footballer's pose has face %s" % (r["frame"],
                                                                            p["face"]))
if seen_eileen < 2:
    bad.append("camera 1: the astronaut's pose attached in %d frames" % seen_eileen)
for v in samples(tmp + "/" + eileen + "_pose"):
    # her nose in the 890x342 frame: x 120..180, y 50..115
    if len(v) != 132 or not (120 / 890 < v[0] < 180 / 890 and 50 / 342 < v[1] < 115 / 342):
        bad.append("%s_pose sample %s" % (eileen, v[:4]))
for v in samples(tmp + "/" + leo + "_pose"):
    if len(v) != 132 or v[0] is not None and not math.isnan(v[0]) or v[3] != 0:
        bad.append("%s_pose sample %s (no face: NaN, visibility 0)" % (leo, v[:4]))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

[ $fails = 0 ] && echo "ok: omma stream --backend $backend --pose $model (faces attached, LSL pose streams)"
[ $fails = 0 ]
