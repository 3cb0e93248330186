#!/bin/sh
# omma stream across processes on the GPU: one process runs a synthetic
# camera (the real photo's face moving over the frame; pinned pool, so its
# frames are uploaded into the published ring) and publishes it (--publish,
# waiting for its first subscriber), another
# runs the face pipeline on the published frames (bus:NAME). The faces of
# every frame must be bitwise those the publisher found itself, no frame
# dropped; omma bus ls lists the bus with its camera; omma bus watch sees
# the frames. Exit 77 without a GPU.
# usage: test_bus_stream.sh OMMA
omma=$1
"$omma" info >/dev/null 2>&1
[ $? -eq 3 ] && { echo "SKIP: no GPU"; exit 77; }
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-bus-stream-XXXXXX") || exit 1
export OMMA_BUS_DIR="$dir/bus"
pub=
sub=
cleanup() {
    [ -n "$pub" ] && kill -9 "$pub" 2>/dev/null
    [ -n "$sub" ] && kill -9 "$sub" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
frames=120

"$omma" stream synthetic:1 --pool pinned --fps 15 --resolution 1280x720 --max-frames $frames \
    --publish tvid --publish-wait 60 --status off --out "$dir/pub.jsonl" 2>"$dir/pub.err" &
pub=$!
i=0
until "$omma" bus ls 2>/dev/null | grep -q "^tvid "; do
    i=$((i + 1))
    [ $i -lt 300 ] || { fail "the publisher never appeared: $(cat "$dir/pub.err")"; exit 1; }
    sleep 0.1
done
"$omma" bus ls >"$dir/ls" 2>&1
grep -q "camera 0 .*1280x720 NV12" "$dir/ls" || fail "bus ls: $(cat "$dir/ls")"

"$omma" stream bus:tvid --max-frames $frames --duration 90 --status off --out "$dir/sub.jsonl" \
    2>"$dir/sub.err" &
sub=$!
"$omma" bus watch tvid --duration 3 --json >"$dir/watch" 2>&1 || fail "bus watch: $(cat "$dir/watch")"
grep -q '"camera":0' "$dir/watch" || fail "bus watch: $(cat "$dir/watch")"
wait $pub
rc=$?
pub=
[ $rc -eq 0 ] || fail "publisher: exit $rc: $(cat "$dir/pub.err")"
wait $sub
rc=$?
sub=
[ $rc -eq 0 ] || fail "subscriber: exit $rc: $(cat "$dir/sub.err")"

python3 - "$dir/pub.jsonl" "$dir/sub.jsonl" "$frames" <<'PY' || fail "results differ"
import json, sys
def load(p):
    out = {}
    for line in open(p):
        r = json.loads(line)
        out[r["frame"]] = r
    return out
pub, sub, n = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
ok = len(pub) == n and len(sub) == n
if not ok:
    print("frames: publisher %d, subscriber %d, expected %d" % (len(pub), len(sub), n))
same = 0
for k in sorted(pub):
    if k not in sub:
        continue
    if sub[k].get("dropped", 0):
        print("frame %d: the subscriber dropped %d before it" % (k, sub[k]["dropped"]))
        ok = False
    if pub[k]["faces"] == sub[k]["faces"]:
        same += 1
    else:
        print("frame %d: faces differ" % k)
        ok = False
faces = sum(len(r["faces"]) for r in pub.values())
print("bus: %d frames, %d with bitwise equal faces (%d faces in all)" % (len(pub), same, faces))
sys.exit(0 if ok and faces >= n else 1)
PY
[ $fails -eq 0 ] && echo "ok: omma stream bus:NAME finds bitwise the faces of the publisher"
exit $fails
