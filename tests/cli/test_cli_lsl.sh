#!/bin/sh
# omma stream --lsl and omma lsl ls|read as people use them: usage errors
# (names that do not fit the cameras), a stream nobody serves (a clear
# error), and end to end on the CPU backend: a video's face on LSL, listed
# by omma lsl ls, read by omma lsl read (1417 landmark channels with a
# face present, the VideoSync stream whose capture_time channel is the
# sample's timestamp, frame numbers in order), the counts on exit; the
# per-frame CSV files of --data (and that they are never overwritten).
# usage: test_cli_lsl.sh OMMA TESTDATA_DIR MODELS_DIR
omma=$1
data=$2
models=$3
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-cli-lsl-XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

usage_error() { # MESSAGE ARGS...
    msg=$1
    shift
    "$omma" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "omma $*: exit $rc, expected 2"
    grep -qF -- "$msg" "$dir/err" || fail "omma $*: '$(cat "$dir/err")' lacks '$msg'"
}
usage_error "omma lsl needs ls or read" lsl
usage_error "unknown lsl command 'lss'" lsl lss
usage_error "omma lsl read needs a stream NAME" lsl read
usage_error "--wait 0: expected a number in" lsl ls --wait 0
usage_error "more names than the 1 camera" stream --backend cpu --lsl-name a,b synthetic
usage_error "expected 2 names" stream --backend cpu --lsl-name "a b" synthetic:2
usage_error "a twice" stream --backend cpu --lsl-name a,a synthetic:2
"$omma" lsl --help | grep -q "omma lsl read NAME" || fail "lsl --help"
"$omma" stream --help | grep -q -- "--lsl-name NAMES" || fail "stream --help: no --lsl-name"

"$omma" lsl read nosuch_$$ --wait 0.3 >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -eq 1 ] || fail "lsl read nosuch: exit $rc"
grep -q "no LSL stream named nosuch_$$ answered" "$dir/err" || fail "lsl read nosuch: $(cat "$dir/err")"

# omma bench lsl runs (numbers are not checked: tests do not time) and
# every sample pushed reaches its reader, in order.
"$omma" bench lsl --streams 2 --channels 16 --rate 100 --duration 0.5 --json >"$dir/bench" \
    2>"$dir/bench.err" || fail "bench lsl: exit $?: $(cat "$dir/bench.err")"
[ "$(grep -c '"bench":"lsl"' "$dir/bench")" -eq 2 ] || fail "bench lsl: $(cat "$dir/bench")"
sed 's/.*"samples":\([0-9]*\),"received":\([0-9]*\),"gaps":\([0-9]*\).*/\1 \2 \3/' "$dir/bench" |
    awk '{ if ($1 == 0 || $1 != $2 || $3 != 0) bad = 1 } END { exit bad }' ||
    fail "bench lsl lost samples: $(cat "$dir/bench")"

if [ ! -f "$data/astronaut_pan.mp4" ] || [ ! -f "$models/face_landmark.tflite" ]; then
    echo "SKIP: testdata or models missing (scripts/fetch-testdata.sh, fetch-models.sh)"
    [ $fails -eq 0 ] && exit 77
    exit 1
fi
# --data: per-frame CSV, one row per frame, the LSL landmarks' columns.
OMMA_DATA=$(dirname "$models") "$omma" stream --backend cpu --threads 1 --results off --status off \
    --realtime off --max-frames 5 --lsl-name alice --data "$dir/data" "$data/astronaut_pan.mp4" \
    >/dev/null 2>"$dir/data.err" || fail "stream --data: exit $?: $(cat "$dir/data.err")"
csv=$dir/data/alice.csv
[ "$(head -1 "$csv" | cut -d, -f1-6)" = "frame,capture_time,unix_time,face_id,lm0_x,lm0_y" ] ||
    fail "--data header: $(head -1 "$csv" | cut -c1-100)"
[ "$(head -1 "$csv" | tr ',' '\n' | tail -1)" = "presence" ] || fail "--data: last column"
# 5 rows of 1421 fields: frames 0..4, capture times rising, face 1 present.
awk -F, 'NR > 1 { if (NF != 1421 || $1 != NR - 2 || $4 != 1 || $1421 <= 0.5 || $2 <= last) bad = 1;
    last = $2; rows++ } END { exit bad || rows != 5 }' "$csv" ||
    fail "--data rows: $(cut -c1-120 "$csv")"
grep -q "alice.csv: 5 rows, 0 dropped" "$dir/data.err" || fail "--data counts: $(cat "$dir/data.err")"
OMMA_DATA=$(dirname "$models") "$omma" stream --backend cpu --results off --status off \
    --max-frames 1 --lsl-name alice --data "$dir/data" "$data/astronaut_pan.mp4" \
    >/dev/null 2>"$dir/data.err"
rc=$?
[ $rc -eq 1 ] || fail "stream --data over an existing file: exit $rc"
grep -q "alice.csv exists (omma never overwrites data" "$dir/data.err" ||
    fail "--data exists: $(cat "$dir/data.err")"
[ "$(grep -c . "$csv")" -eq 6 ] || fail "--data: the existing file changed"

name=omma_cli_lsl_$$
OMMA_DATA=$(dirname "$models") "$omma" stream --backend cpu --threads 1 --lsl --lsl-name "$name" \
    --results off --status off --loop --duration 120 "$data/astronaut_pan.mp4" \
    >"$dir/stream.out" 2>"$dir/stream.err" &
pid=$!
found=0
for _ in $(seq 1 120); do
    "$omma" lsl ls --wait 0.5 --json --query "starts-with(name,'$name')" >"$dir/ls" 2>&1
    [ "$(grep -c . "$dir/ls")" -eq 3 ] && found=1 && break
    kill -0 $pid 2>/dev/null || break
done
[ $found -eq 1 ] || fail "lsl ls: $(cat "$dir/ls"); stream: $(cat "$dir/stream.err")"
grep -q "\"name\":\"${name}_landmarks\",\"type\":\"Landmark\",\"channels\":1417,\"format\":\"float32\",\"rate\":15," "$dir/ls" ||
    fail "lsl ls landmarks: $(cat "$dir/ls")"
grep -q "\"name\":\"${name}_frames\",\"type\":\"VideoSync\",\"channels\":4,\"format\":\"double64\"" "$dir/ls" ||
    fail "lsl ls frames: $(cat "$dir/ls")"
grep -q "\"name\":\"${name}_face\",\"type\":\"FaceMeasures\",\"channels\":8,\"format\":\"float32\"" "$dir/ls" ||
    fail "lsl ls face: $(cat "$dir/ls")"
grep -q "\"source_id\":\"omma:$name:$data/astronaut_pan.mp4:landmarks\"" "$dir/ls" ||
    fail "lsl ls source_id: $(cat "$dir/ls")"

"$omma" lsl read "${name}_landmarks" --count 3 --json --wait 30 >"$dir/lm" 2>"$dir/lm.err" ||
    fail "lsl read landmarks: $(cat "$dir/lm.err")"
[ "$(grep -c . "$dir/lm")" -eq 3 ] || fail "lsl read landmarks: $(wc -l <"$dir/lm") lines"
grep -q "channel labels: lm0_x lm0_y lm0_z lm1_x" "$dir/lm.err" || fail "labels: $(cat "$dir/lm.err")"
grep -q "time correction" "$dir/lm.err" || fail "time correction: $(cat "$dir/lm.err")"
# Every sample: 1417 values, the last (presence) above 0.5, x in 0..1.
awk -F'[][]' '{ n = split($2, v, ","); if (n != 1417 || v[1417] <= 0.5 || v[1] <= 0 || v[1] >= 1) bad = 1 }
    END { exit bad }' "$dir/lm" || fail "landmark samples: $(cut -c1-200 "$dir/lm")"

# The face measures: a frontal face, eyes open, present.
"$omma" lsl read "${name}_face" --count 2 --json --wait 30 >"$dir/face" 2>"$dir/face.err" ||
    fail "lsl read face: $(cat "$dir/face.err")"
grep -q "channel labels: yaw pitch roll right_eye_open left_eye_open mouth_open mouth_width presence" \
    "$dir/face.err" || fail "face labels: $(cat "$dir/face.err")"
awk -F'[][]' '{ split($2, v, ","); if (v[1] < -30 || v[1] > 30 || v[4] < 0.1 || v[8] <= 0.5) bad = 1 }
    END { exit bad || NR != 2 }' "$dir/face" || fail "face samples: $(cat "$dir/face")"

"$omma" lsl read "${name}_frames" --count 4 --json --wait 30 >"$dir/fr" 2>"$dir/fr.err" ||
    fail "lsl read frames: $(cat "$dir/fr.err")"
# {"timestamp":T,"values":[frame,T,faces,dropped]}: capture_time is the
# timestamp to the bit; frames count up.
sed -e 's/"timestamp"://' -e 's/"values"://' -e 's/[][{},]/ /g' "$dir/fr" |
    awk '{ if ($1 != $3) bad = 1; if (NR > 1 && $2 != last + 1) bad = 1; last = $2 }
        END { exit bad || NR != 4 }' || fail "frames samples: $(cat "$dir/fr")"

kill -INT $pid
wait $pid
rc=$?
pid=
[ $rc -eq 130 ] || fail "stream after SIGINT: exit $rc: $(cat "$dir/stream.err")"
grep -q "LSL streams ${name}_landmarks (Landmark, 1417 channels), ${name}_face (FaceMeasures, 8 channels) and ${name}_frames (VideoSync) at 15 Hz on 127.0.0.1" \
    "$dir/stream.err" || fail "stream: $(cat "$dir/stream.err")"
grep -q "LSL ${name}_landmarks: [0-9]* samples, 0 lost" "$dir/stream.err" || fail "stream counts: $(cat "$dir/stream.err")"

[ $fails -eq 0 ] && echo "ok: omma lsl and omma stream --lsl"
[ $fails -eq 0 ]
