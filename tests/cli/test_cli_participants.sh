#!/bin/sh
# omma stream's participants on a two-person video made here from two real
# photos (testdata/astronaut.png and grace_hopper.jpg, their faces cropped
# into 200x200 tiles on a 640x480 frame, 10 fps, 16 s): the astronaut moves
# in the top half, Grace Hopper in the bottom half, so a face's lane says who
# it is. 0-2 s still (astronaut left), 2-4 s they cross, 5-7 s they cross
# back, 8-9 s Grace leaves on the right, 10-11 s she comes back there,
# 12-13 s both leave, 13.5-15 s both come back on each other's side.
#  1. From a config file (cameras, participants, regions, outputs), regions:
#     the first 125 frames (before the swap, which regions alone cannot
#     follow): every participant record has the right person, both are
#     followed nearly always, Grace's loss and her return (by region) are
#     events, per participant --data files with a camera column.
#  2. From the command line, no regions, --enroll: the whole video; both
#     start by position, Grace's return and both swapped returns are by
#     enrollment, never the wrong person.
#  3. Bad config files: each error names the file, the line and the key.
# usage: test_cli_participants.sh OMMA TESTDATA_DIR
omma=$1 data=$2
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
for f in astronaut.png grace_hopper.jpg; do
    [ -f "$data/$f" ] || { echo "SKIP: $data/$f missing (scripts/fetch-testdata.sh)"; exit 77; }
done
command -v ffmpeg >/dev/null 2>&1 || { echo "SKIP: no ffmpeg"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# Bad configs first (no video needed). ERR: the text the message must hold.
bad() { # NAME TEXT... (the file is $tmp/NAME.json)
    name=$1
    shift
    out=$("$omma" stream --config "$tmp/$name.json" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 2 ] || fail "$name: exit $rc (want 2): $out"
    for t in "$@"; do
        printf '%s' "$out" | grep -q -- "$t" || fail "$name: message lacks '$t': $out"
    done
}
printf '{\n  "backend": "cpu",\n  "fps": 30,\n  "lsl": tru\n}\n' >"$tmp/syntax.json"
bad syntax "$tmp/syntax.json:4:" "not valid JSON"
printf '{\n  "backend": "cpu",\n  "fsp": 30\n}\n' >"$tmp/unknown.json"
bad unknown "$tmp/unknown.json:3: key fsp: no such setting" 'did you mean "fps"'
printf '{\n  "backend": "cpu",\n  "loop": "yes"\n}\n' >"$tmp/switch.json"
bad switch "$tmp/switch.json:3: key loop:" "expected true or false"
printf '{\n  "backend": "cpu",\n  "thresholds": {\n    "min-score": 1.5\n  },\n  "cameras": ["x"]\n}\n' \
    >"$tmp/range.json"
bad range "$tmp/range.json:4: key thresholds.min-score: that value is refused" "--min-score"
printf '{"cameras": [\n  {"source": "a", "fps": 30},\n  {"source": "b",\n   "fps": 25}]}\n' \
    >"$tmp/fps.json"
bad fps "$tmp/fps.json:4: key cameras\[1\].fps: 25 differs"
printf '{"cameras": ["a"],\n "participants": [{"name": "ann", "camera": 0}],\n "regions": {\n   "bob": [0, 0, 1, 1]}}\n' \
    >"$tmp/region.json"
bad region "$tmp/region.json:4: key regions.bob: no participant named bob"
printf '{"backend": "cpu", "cameras": ["%s"],\n "participants": [\n  {"name": "ann",\n   "camera": "nowhere"}]}\n' \
    "$data/astronaut.png" >"$tmp/camera.json"
bad camera "$tmp/camera.json:3: key participants\[0\]: that participant is refused" "no camera 'nowhere'"
printf '{"outputs": {"lsl": {"bnd": "0.0.0.0"}}}\n' >"$tmp/sub.json"
bad sub "$tmp/sub.json:1: key outputs.lsl.bnd: no such setting" 'did you mean "lsl-bind"'
out=$("$omma" stream --config "$tmp/none.json" 2>&1)
[ $? = 2 ] && printf '%s' "$out" | grep -q "none.json: cannot open it" || fail "missing file: $out"

# The video.
video=$tmp/two.mp4
expr() { # "t:x ..." keyframes -> a piecewise-linear ffmpeg expression of t
    e="" close="" pt="" px=""
    for kv in $1; do
        t=${kv%%:*} x=${kv#*:}
        if [ -n "$pt" ]; then
            e="${e}if(lt(t\\,$t)\\,$px+($x-($px))*(t-$pt)/($t-$pt)\\,"
            close="$close)"
        fi
        pt=$t px=$x
    done
    echo "$e$px$close"
}
ax=$(expr "0:40 2:40 4:400 5:400 7:40 12:40 13:-220 13.5:-220 13.51:660 14:660 15:400 16:400")
gx=$(expr "0:400 2:400 4:40 5:40 7:400 8:400 9:660 10:660 11:400 12:400 13:660 13.5:660 13.51:-220 14:-220 15:40 16:40")
if ! ffmpeg -v error -y -f lavfi -i "color=c=0x606060:s=640x480:r=10:d=16" -i "$data/astronaut.png" \
    -i "$data/grace_hopper.jpg" -filter_complex \
    "[1]crop=200:200:125:24,format=yuv420p[a];[2]crop=400:400:64:32,scale=200:200,format=yuv420p[g];[0][a]overlay=x='$ax':y=20:eval=frame[t];[t][g]overlay=x='$gx':y=260:eval=frame,format=yuv420p" \
    -c:v libx264 -crf 18 -g 10 "$video" 2>"$tmp/ffmpeg.log"; then
    echo "SKIP: ffmpeg could not make the video (libx264?): $(cat "$tmp/ffmpeg.log")"
    exit 77
fi

# check.py OUT SHARE: the participant records against the lanes; prints the
# events; exit 1 on any wrong person, or a participant followed in fewer
# than SHARE of the frames its face is in (enrollment waits until a face
# coming back is whole: about half a second here, each time).
cat >"$tmp/check.py" <<'PY'
import json, sys
lane = {"astronaut": "top", "grace": "bottom"}
present = {"top": 0, "bottom": 0}
held = {"astronaut": 0, "grace": 0}
wrong, events = [], []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "event" in r:
        events.append(r)
        print("event", r["frame"], r["participant"], r["event"], r.get("by", ""),
              r.get("distance", ""))
    elif "participants" in r:
        for p in r["participants"]:
            if p["track"] is None:
                continue
            b = p["box"]
            where = "top" if (b[1] + b[3]) / 2 < 240 else "bottom"
            held[p["name"]] += 1
            if where != lane[p["name"]]:
                wrong.append((r["frame"], p["name"], p["track"]))
    elif "faces" in r:
        for f in r["faces"]:
            b = f["box"]
            present["top" if (b[1] + b[3]) / 2 < 240 else "bottom"] += 1
print("present", present, "followed", held, "wrong", wrong[:5])
ok = not wrong
for name, l in lane.items():
    ok &= held[name] >= float(sys.argv[2]) * present[l] and present[l] > 0
json.dump(events, open(sys.argv[1] + ".events", "w"))
sys.exit(0 if ok else 1)
PY

cat >"$tmp/room.json" <<JSON
{
  "backend": "cpu",
  "realtime": false,
  "max-faces": 2,
  "max-frames": 125,
  "status": "off",
  "cameras": [{"source": "$video", "name": "room"}],
  "participants": [
    {"name": "astronaut", "camera": "room", "region": [0, 0, 0.5, 1]},
    {"name": "grace", "camera": "room"}
  ],
  "regions": {"grace": {"pixels": [320, 0, 320, 480]}},
  "outputs": {"out": "$tmp/regions.jsonl", "data": "$tmp/data"}
}
JSON
"$omma" stream --config "$tmp/room.json" 2>"$tmp/regions.err"
rc=$?
[ "$rc" = 0 ] || fail "the regions run exited $rc: $(tail -5 "$tmp/regions.err")"
python3 "$tmp/check.py" "$tmp/regions.jsonl" 0.95 || fail "regions: a wrong or missing name"
python3 - "$tmp/regions.jsonl.events" <<'PY' || fail "regions: events"
import json, sys
ev = [(e["participant"], e["event"], e.get("by")) for e in json.load(open(sys.argv[1]))]
want = [("astronaut", "assigned", "region"), ("grace", "assigned", "region"),
        ("grace", "lost", None), ("grace", "assigned", "region")]
if sorted(ev[:2]) != want[:2] or ev[2:] != want[2:]:
    print("events", ev)
    sys.exit(1)
PY
for who in astronaut grace; do
    f=$tmp/data/$who.csv
    [ -f "$f" ] || { fail "no $f"; continue; }
    head -1 "$f" | grep -q '^frame,capture_time,unix_time,camera,face_id,lm0_x,' ||
        fail "$f header: $(head -c 100 "$f")"
    [ "$(wc -l <"$f")" = 126 ] || fail "$f: $(wc -l <"$f") lines, want 126"
done
grep -q "participant grace lost" "$tmp/regions.err" || fail "no loss said on stderr"

"$omma" stream --backend cpu --realtime off --max-faces 2 --status off --participant astronaut=0 \
    --participant grace=0 --enroll --out "$tmp/enroll.jsonl" "$video" 2>"$tmp/enroll.err"
rc=$?
[ "$rc" = 0 ] || fail "the enrollment run exited $rc: $(tail -5 "$tmp/enroll.err")"
python3 "$tmp/check.py" "$tmp/enroll.jsonl" 0.85 || fail "enrollment: a wrong or missing name"
python3 - "$tmp/enroll.jsonl.events" <<'PY' || fail "enrollment: events"
import json, sys
ev = json.load(open(sys.argv[1]))
first = sorted((e["participant"], e.get("by")) for e in ev[:2])
back = [(e["participant"], e.get("by")) for e in ev if e["event"] == "assigned" and e["frame"] > 90]
ok = first == [("astronaut", "position"), ("grace", "position")]
ok &= ("grace", "enrollment") in back and ("astronaut", "enrollment") in back
ok &= all(by == "enrollment" for _, by in back)
if not ok:
    print("events", [(e["frame"], e["participant"], e["event"], e.get("by")) for e in ev])
    sys.exit(1)
PY

# LSL per participant: two cameras (the panning video twice), one
# participant each: NAME_landmarks, NAME_face, NAME_track per participant,
# CAM_frames per camera, and CoModulation (one pair: 7 correlations and 7
# co-modulations, labelled).
pan=$data/astronaut_pan.mp4
if [ -f "$pan" ]; then
    a=pa$$ b=pb$$
    "$omma" stream --backend cpu --threads 1 --lsl --results off --status off --loop \
        --duration 120 --participant "$a=0" --participant "$b=1" --comodulation "$pan" "$pan" \
        >/dev/null 2>"$tmp/lsl.err" &
    pid=$!
    found=0
    for _ in $(seq 1 120); do
        "$omma" lsl ls --wait 0.5 --json --query "starts-with(name,'p') or name='CoModulation'" \
            >"$tmp/ls" 2>&1
        [ "$(grep -c "$a\|$b\|CoModulation" "$tmp/ls")" -ge 7 ] && found=1 && break
        kill -0 $pid 2>/dev/null || break
    done
    [ $found -eq 1 ] || fail "lsl ls: $(cat "$tmp/ls"); stream: $(cat "$tmp/lsl.err")"
    for want in "\"name\":\"${a}_landmarks\",\"type\":\"Landmark\",\"channels\":1417" \
        "\"name\":\"${b}_face\",\"type\":\"FaceMeasures\",\"channels\":8" \
        "\"name\":\"${a}_track\",\"type\":\"Assignment\",\"channels\":3,\"format\":\"double64\"" \
        "\"name\":\"CoModulation\",\"type\":\"CoModulation\",\"channels\":14,\"format\":\"float32\"" \
        "\"source_id\":\"omma:participant:$a:landmarks\""; do
        grep -q "$want" "$tmp/ls" || fail "lsl ls lacks $want: $(cat "$tmp/ls")"
    done
    "$omma" lsl read CoModulation --count 2 --json --wait 30 >"$tmp/cm" 2>"$tmp/cm.err" ||
        fail "lsl read CoModulation: $(cat "$tmp/cm.err")"
    grep -q "channel labels: ${a}-${b}_yaw_r ${a}-${b}_pitch_r .* ${a}-${b}_yaw_comod" \
        "$tmp/cm.err" || fail "CoModulation labels: $(cat "$tmp/cm.err")"
    "$omma" lsl read "${a}_track" --count 2 --json --wait 30 >"$tmp/tr" 2>"$tmp/tr.err" ||
        fail "lsl read track: $(cat "$tmp/tr.err")"
    grep -q '"values":\[0,1,0\]' "$tmp/tr" || fail "${a}_track: camera 0, track 1: $(cat "$tmp/tr")"
    kill -INT $pid
    wait $pid
    pid=
    grep -q "LSL CoModulation: [1-9][0-9]* samples" "$tmp/lsl.err" ||
        fail "CoModulation counts: $(cat "$tmp/lsl.err")"
fi

[ $fails -eq 0 ] && echo "ok: participants kept on the right people with regions and with enrollment; bad configs named"
exit $((fails > 0))
