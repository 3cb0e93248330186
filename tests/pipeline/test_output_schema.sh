#!/bin/sh
# docs/omma-faces.schema.json against real output (docs/OUTPUT.md): the
# JSON Lines of `omma run --backend cpu` on the photo and 4 frames of the
# panning video (run records), and of `omma stream --backend cpu` on the
# video (stream records) validate with Debian's python3-jsonschema; records
# broken on purpose (a landmark missing, a stream field in a run record,
# presence 1.5, id 0, ...) are rejected, so the check can fail; the CSV
# header of `omma run --csv` is the documented column list; `omma run --pose
# lite` on the full-length photo (messi5.jpg) gives a run record with one
# person of 33 landmarks that validates, and broken people are rejected;
# `omma run --face-mesh 478 --head-pose` on the photo gives a face of 478
# landmarks with a head_pose that validates (and broken ones are rejected),
# and with --csv the documented iris and head pose columns after the
# landmarks, holding the JSON record's numbers.
# usage: test_output_schema.sh OMMA SOURCE_DIR TESTDATA_DIR
omma=$1 src=$2 data=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$omma" ] || fail "no omma binary at '$omma'"
schema=$src/docs/omma-faces.schema.json doc=$src/docs/OUTPUT.md
[ -f "$schema" ] && [ -f "$doc" ] || fail "no $schema or $doc"
photo=$data/astronaut.png video=$data/astronaut_pan.mp4 person=$data/messi5.jpg
[ -f "$photo" ] && [ -f "$video" ] && [ -f "$person" ] ||
    fail "no $photo, $video or $person: run scripts/fetch-testdata.sh"
# Debian's python3 and its python3-jsonschema first (scripts/install-deps.sh
# installs it), else a python3 on PATH that has jsonschema.
py=
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import jsonschema; jsonschema.Draft202012Validator' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
[ -n "$py" ] || fail "no python3 with jsonschema (Debian's python3-jsonschema; scripts/install-deps.sh)"
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-schema-XXXXXX") || fail "mktemp"
trap 'rm -rf "$dir"' EXIT

"$omma" run --backend cpu --threads 2 --max-frames 4 --out "$dir/run.jsonl" "$photo" "$video" \
    2>"$dir/err" || fail "omma run exited $?: $(cat "$dir/err")"
"$omma" run --backend cpu --threads 2 --csv --out "$dir/run.csv" "$photo" 2>"$dir/err" ||
    fail "omma run --csv exited $?: $(cat "$dir/err")"
"$omma" run --backend cpu --threads 2 --pose lite --out "$dir/pose.jsonl" "$person" \
    2>"$dir/err" || fail "omma run --pose exited $?: $(cat "$dir/err")"
"$omma" run --backend cpu --threads 2 --face-mesh 478 --head-pose --out "$dir/mesh.jsonl" \
    "$photo" 2>"$dir/err" || fail "omma run --face-mesh 478 --head-pose exited $?: $(cat "$dir/err")"
"$omma" run --backend cpu --threads 2 --face-mesh 478 --head-pose --csv --out "$dir/mesh.csv" \
    "$photo" 2>"$dir/err" ||
    fail "omma run --face-mesh 478 --head-pose --csv exited $?: $(cat "$dir/err")"
"$omma" stream --backend cpu --threads 2 --max-frames 4 --realtime off --status off \
    --out "$dir/stream.jsonl" "$video" 2>"$dir/err" ||
    fail "omma stream exited $?: $(cat "$dir/err")"

"$py" - "$schema" "$doc" "$dir/run.jsonl" "$dir/stream.jsonl" "$dir/run.csv" "$dir/pose.jsonl" \
    "$dir/mesh.jsonl" "$dir/mesh.csv" <<'PY' ||
import copy, csv, json, sys
import jsonschema

schema_path, doc_path, run_path, stream_path, csv_path, pose_path, mesh_path, mesh_csv_path = \
    sys.argv[1:]
schema = json.load(open(schema_path))
jsonschema.Draft202012Validator.check_schema(schema)


def validator(kind):
    """The schema restricted to one record kind (None: either)."""
    s = copy.deepcopy(schema)
    if kind:
        s["oneOf"] = [{"$ref": "#/$defs/%s_record" % kind}]
    return jsonschema.Draft202012Validator(s)


def records(path):
    lines = open(path).read().splitlines()
    return [json.loads(l) for l in lines]


def must_pass(v, rec, what):
    errors = sorted(v.iter_errors(rec), key=str)
    if errors:
        sys.exit("%s: rejected by the schema: %s" % (what, errors[0].message[:300]))


def must_fail(v, rec, what):
    if v.is_valid(rec):
        sys.exit("a broken record passed the schema: %s" % what)


run, stream = records(run_path), records(stream_path)
# Real content: the photo (camera 0, 1 frame) and 4 video frames (camera 1),
# each with the one face; 4 stream frames of the video.
assert len(run) == 5, ("run records", len(run))
assert len(stream) == 4, ("stream records", len(stream))
for r in run + stream:
    assert len(r["faces"]) == 1, r["faces"][:0]
either, run_v, stream_v = validator(None), validator("run"), validator("stream")
for i, r in enumerate(run):
    must_pass(run_v, r, "omma run record %d" % i)
    must_pass(either, r, "omma run record %d (either kind)" % i)
    must_fail(stream_v, r, "a run record as a stream record")
for i, r in enumerate(stream):
    must_pass(stream_v, r, "omma stream record %d" % i)
    must_pass(either, r, "omma stream record %d (either kind)" % i)
    must_fail(run_v, r, "a stream record as a run record")


def broken(base, change):
    r = copy.deepcopy(base)
    change(r)
    return r


face = lambda r: r["faces"][0]
run0, stream0 = run[1], stream[0]
cases = [
    ("a landmark missing", run0, lambda r: face(r)["landmarks"].pop()),
    ("a landmark without z", run0, lambda r: face(r)["landmarks"][7].pop()),
    ("a keypoint missing", run0, lambda r: face(r)["keypoints"].pop()),
    ("a box of 3 numbers", run0, lambda r: face(r)["box"].pop()),
    ("presence 1.5", run0, lambda r: face(r).update(presence=1.5)),
    ("id 0", run0, lambda r: face(r).update(id=0)),
    ("id as text", run0, lambda r: face(r).update(id="1")),
    ("a coordinate as text", run0, lambda r: face(r)["landmarks"][1].__setitem__(0, "12.5")),
    ("an unknown face field", run0, lambda r: face(r).update(name="x")),
    ("no faces field", run0, lambda r: r.pop("faces")),
    ("frame -1", run0, lambda r: r.update(frame=-1)),
    ("camera as text", run0, lambda r: r.update(camera="0")),
    ("gpu in a run record", run0, lambda r: r.update(gpu=0)),
    ("no latency_ms in a stream record", stream0, lambda r: r.pop("latency_ms")),
    ("dropped -1", stream0, lambda r: r.update(dropped=-1)),
    ("gpu -2", stream0, lambda r: r.update(gpu=-2)),
]
for what, base, change in cases:
    must_fail(either, broken(base, change), what)

# omma run --pose: one record, one person of 33 landmarks, valid; no pose
# field without --pose; broken people rejected.
pose = records(pose_path)
assert len(pose) == 1 and len(pose[0]["pose"]) == 1, pose_path
person = pose[0]["pose"][0]
assert len(person["landmarks"]) == 33 and len(person["world"]) == 33
assert person["landmarks"][0][1] < person["landmarks"][11][1], "nose below the shoulder"
must_pass(run_v, pose[0], "omma run --pose record")
assert all("pose" not in r for r in run), "a pose field without --pose"
who = lambda r: r["pose"][0]
pose_cases = [
    ("a pose landmark missing", lambda r: who(r)["landmarks"].pop()),
    ("a pose landmark without presence", lambda r: who(r)["landmarks"][3].pop()),
    ("visibility 2", lambda r: who(r)["landmarks"][0].__setitem__(3, 2)),
    ("a world landmark of 2 numbers", lambda r: who(r)["world"][5].pop()),
    ("no world landmarks", lambda r: who(r).pop("world")),
    ("pose id 0", lambda r: who(r).update(id=0)),
    ("pose as an object", lambda r: r.update(pose=who(r))),
]
for what, change in pose_cases:
    must_fail(either, broken(pose[0], change), what)
cases += pose_cases

# --face-mesh 478 --head-pose: 478 landmarks and a head pose, valid; no
# head_pose without --head-pose; broken ones rejected.
mesh = records(mesh_path)
assert len(mesh) == 1 and len(mesh[0]["faces"]) == 1, mesh_path
mface = mesh[0]["faces"][0]
assert len(mface["landmarks"]) == 478 and len(mface["head_pose"]["matrix"]) == 16
must_pass(run_v, mesh[0], "omma run --face-mesh 478 --head-pose record")
assert all("head_pose" not in f for r in run + stream for f in r["faces"]), "head_pose unasked"
mesh_cases = [
    ("470 landmarks", lambda r: face(r)["landmarks"].__delitem__(slice(470, 478))),
    ("a matrix of 15", lambda r: face(r)["head_pose"]["matrix"].pop()),
    ("yaw as text", lambda r: face(r)["head_pose"].update(yaw="1")),
    ("no roll", lambda r: face(r)["head_pose"].pop("roll")),
    ("pitch 95", lambda r: face(r)["head_pose"].update(pitch=95)),
]
for what, change in mesh_cases:
    must_fail(either, broken(mesh[0], change), what)
cases += mesh_cases

# CSV: the documented columns, in order; one row of as many fields.
cols = "camera,source,frame,timestamp_ms,face_id,score,presence,x0,y0,x1,y1".split(",")
cols += ["kp%d_%s" % (k, c) for k in range(6) for c in "xy"]
cols += ["lm%d_%s" % (k, c) for k in range(468) for c in "xyz"]
doc = open(doc_path).read()
for text in ("camera,source,frame,timestamp_ms,face_id,score,presence,x0,y0,x1,y1,",
             "kp0_x,kp0_y,kp1_x,kp1_y,...,kp5_x,kp5_y,",
             "lm0_x,lm0_y,lm0_z,lm1_x,lm1_y,lm1_z,...,lm467_x,lm467_y,lm467_z",
             "%d columns" % len(cols)):
    assert text in doc, "docs/OUTPUT.md lacks " + text
rows = list(csv.reader(open(csv_path, newline="")))
assert rows[0] == cols, "CSV header differs from the documented columns at %s" % next(
    (i, a, b) for i, (a, b) in enumerate(zip(rows[0] + [None] * 9999, cols)) if a != b)
assert len(rows) == 2 and len(rows[1]) == len(cols), (len(rows), len(rows[1]))
json_face = run[0]["faces"][0]
assert int(rows[1][4]) == json_face["id"] and abs(float(rows[1][7]) - json_face["box"][0]) < 0.01

# CSV with --face-mesh 478 --head-pose: the irises' x, y and the head pose
# after the landmarks, as documented, equal to the JSON record's numbers.
extra = ["lm%d_%s" % (k, c) for k in range(468, 478) for c in "xy"]
extra += ["yaw", "pitch", "roll"] + ["hp%d" % k for k in range(16)]
for text in ("lm468_x,lm468_y,lm469_x,lm469_y,...,lm477_x,lm477_y",
             "yaw,pitch,roll,hp0,hp1,...,hp15", "+ 20 columns", "+ 19 columns"):
    assert text in doc, "docs/OUTPUT.md lacks " + text
mrows = list(csv.reader(open(mesh_csv_path, newline="")))
assert mrows[0] == cols + extra, "CSV header with --face-mesh 478 --head-pose: %s" % mrows[0][-30:]
assert len(mrows) == 2 and len(mrows[1]) == len(cols) + len(extra), (len(mrows), len(mrows[1]))
got = dict(zip(mrows[0], mrows[1]))
for k in range(468, 478):
    for i, c in enumerate("xy"):
        assert abs(float(got["lm%d_%s" % (k, c)]) - mface["landmarks"][k][i]) < 0.006, (k, c)
hp = mface["head_pose"]
for name in ("yaw", "pitch", "roll"):
    assert abs(float(got[name]) - hp[name]) < 0.006, name
for k in range(16):
    assert abs(float(got["hp%d" % k]) - hp["matrix"][k]) < 0.00006, k
print("schema: %d run and %d stream records valid, %d broken records rejected, CSV header of %d "
      "columns as documented (%d with irises and head pose)" %
      (len(run), len(stream), len(cases), len(cols), len(cols) + len(extra)))
PY
    fail "the schema check failed"
echo "ok"
