#!/bin/sh
# Three omma nodes (omma stream --cluster --backend cpu, or BACKEND: cuda
# runs each node's cameras in one GPU runtime, added and removed live,
# exit 77 without a GPU) sharing 12 cameras
# (2 test videos, 10 synthetic) through a three-node nats-server
# cluster with JetStream on loopback (R3 buckets), results on an R3
# JetStream stream; cluster_check watches the owner keys throughout and
# reads the results at the end; cluster_report.py gives the verdict:
#   1. bad input: a camera id that is no name, malformed and unreachable
#      cluster URLs, --cluster without --node, camera values in the bucket
#      that do not parse (the nodes refuse them, the rest runs);
#   2. the cameras split 4/4/4; a camera added and removed live;
#   3. node 1 SIGKILLed: its cameras owned again within 10 s, their results
#      resume; it comes back and the split is even again;
#   4. node 2 drained (omma cluster drain): its cameras handed over, their
#      results resuming within 10 s; undrained;
#   5. node 3 partitioned (its NATS connection through a proxy the test
#      cuts; its sink still connected): its cameras owned by the others
#      within 10 s, and never two owners publishing (fencing: in capture
#      order no result carries an older lease); mended: it rejoins.
# Every camera's owner key changes by compare-and-set only throughout.
# Servers, proxy and nodes are stopped by PID on every path.
# usage: test_cluster.sh OMMA CLUSTER_CHECK NATS_CONSUMER TESTDATA_DIR [BACKEND]
omma=$1 check=$2 nats_tool=$3 data=$4 backend=${5:-cpu}
here=$(dirname "$0")
if [ "$backend" != cpu ]; then
    "$omma" info >/dev/null 2>&1
    [ $? -eq 3 ] && { echo "SKIP: no GPU"; exit 77; }
fi
command -v nats-server >/dev/null || { echo "SKIP: nats-server not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
"$check" >/dev/null 2>&1
[ $? = 77 ] && { echo "SKIP: built without libnats"; exit 77; }
"$omma" version 2>/dev/null | grep -q " ffmpeg" ||
    { echo "SKIP: built without FFmpeg (the test's video cameras)"; exit 77; }
video1=$data/astronaut_pan.mp4 video2=$data/faces_cut.mp4 photo=$data/astronaut.png
[ -f "$video1" ] && [ -f "$video2" ] && [ -f "$photo" ] ||
    { echo "SKIP: no test videos or photo (fetch-testdata.sh)"; exit 77; }

fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
tmp=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# --no_advertise: a client knows only the servers it is given (node 3 only
# the proxy: cutting the proxy cuts it off).
nats_extra=--no_advertise
. "$here/../sink/nats_cluster.sh"
start_node 1
start_node 2
start_node 3
all="127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p3"
url1=nats://127.0.0.1:$p1
if ! "$nats_tool" create "$url1" RESULTS "clu.>" 3 2>"$tmp/create.err"; then
    fail "creating the R3 results stream: $(cat "$tmp/create.err")"
    exit 1
fi
set -- $("$nats_tool" ports 2)
px=$1 closed=$2
python3 "$here/tcp_proxy.py" "$px" "$p3" >"$tmp/proxy.log" 2>&1 &
proxy=$!
pids="$pids $proxy"
opts="lease_ms=4000&replicas=3"
cl="nats://$all/omma?$opts"
cl3="nats://127.0.0.1:$px/omma?$opts" # node 3's way to the cluster: the proxy
now_ms() { date +%s%3N; }

# 1. Bad input.
"$omma" cluster add "bad id" synthetic --cluster "$cl" 2>"$tmp/bad.err"
rc=$?
[ $rc = 2 ] && grep -q "camera id 'bad id' is not a name" "$tmp/bad.err" ||
    fail "a bad camera id: exit $rc (want 2): $(cat "$tmp/bad.err")"
"$omma" cluster ls --cluster "nats://127.0.0.1:0" 2>"$tmp/bad.err"
rc=$?
[ $rc = 2 ] && grep -q "bad host:port '127.0.0.1:0'" "$tmp/bad.err" ||
    fail "a malformed URL: exit $rc (want 2): $(cat "$tmp/bad.err")"
"$omma" cluster ls --cluster "nats://u:secret@127.0.0.1:$closed" --timeout 1 2>"$tmp/bad.err"
rc=$?
[ $rc = 1 ] && grep -q "cluster nats://u:\*\*\*@127.0.0.1:$closed: cannot connect" "$tmp/bad.err" &&
    ! grep -q secret "$tmp/bad.err" ||
    fail "an unreachable server: exit $rc (want 1): $(cat "$tmp/bad.err")"
"$omma" stream --backend "$backend" --cluster "$cl" 2>"$tmp/bad.err"
rc=$?
[ $rc = 2 ] && grep -q "needs --node" "$tmp/bad.err" ||
    fail "--cluster without --node: exit $rc (want 2): $(cat "$tmp/bad.err")"
"$omma" stream --backend "$backend" --cluster "$cl" --node x "$video1" 2>"$tmp/bad.err"
rc=$?
[ $rc = 2 ] && grep -q "not SOURCEs" "$tmp/bad.err" ||
    fail "--cluster with a source: exit $rc (want 2): $(cat "$tmp/bad.err")"
"$omma" stream --backend "$backend" --cluster "nats://127.0.0.1:$closed/omma" --node x 2>"$tmp/bad.err"
rc=$?
[ $rc = 1 ] && grep -q "cannot connect" "$tmp/bad.err" ||
    fail "--cluster unreachable: exit $rc (want 1): $(cat "$tmp/bad.err")"

# The cameras: 2 videos, 10 synthetic (at 1 frame/s: the CPU backend with
# sanitizers on a shared CI machine; the GPU backend likewise, same bounds). The first add makes the bucket (the
# JetStream cluster may still be electing: tried for up to 20 s).
cams=""
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
    id=$(printf cam%02d "$i")
    case $i in 0) src=$video1 ;; 6) src=$video2 ;; *) src=synthetic ;; esac
    for _ in $(seq 40); do
        "$omma" cluster add "$id" "$src" --cluster "$cl" 2>"$tmp/add.err" && break
        sleep 0.5
    done || fail "adding $id: $(cat "$tmp/add.err")"
    cams="$cams${cams:+,}$id"
done
# Values that do not parse: the nodes say so and claim neither.
"$check" put "$url1" omma cam.zz1 'max_frames=3\n' || fail "putting a bad value"
"$check" put "$url1" omma cam.zz2 'source=synthetic\nfps=9' || fail "putting a bad value"

"$check" watch "$url1" omma 600 >"$tmp/watch.log" 2>"$tmp/watch.err" &
watcher=$!
pids="$pids $watcher"

start_omma() { # N URL
    "$omma" stream --backend "$backend" --threads 1 --loop --fps 1 --resolution 320x240 \
        --cluster "$2" --node "n$1" --sink "nats://$all/clu" --site lab --status json \
        --status-every 1 --results off --sink-drain 5 2>>"$tmp/n$1.err" &
    eval "omma$1=$!"
    pids="$pids $!"
}

# ls_owners: "CAMERA OWNER" lines of the valid cameras (OWNER - when none).
ls_owners() {
    "$omma" cluster ls --cluster "$cl" --json 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin)["cameras"]:
    if c["valid"]:
        print(c["id"], c["owner"] or "-")'
}
# balanced NODES...: every camera owned by one of NODES, 4 each.
balanced() {
    ls_owners >"$tmp/owners"
    [ "$(grep -c . "$tmp/owners")" = 12 ] || return 1
    for n in "$@"; do
        [ "$(grep -c " $n\$" "$tmp/owners")" = $((12 / $#)) ] || return 1
    done
}
wait_for() { # SECONDS COMMAND...: 0 once COMMAND succeeds within SECONDS
    end=$(($(date +%s) + $1))
    shift
    while [ "$(date +%s)" -lt "$end" ]; do
        "$@" && return 0
        sleep 0.2
    done
    "$@"
}
owned_by() { # NODE: its cameras, comma-separated
    ls_owners | awk -v n="$1" '$2 == n {printf "%s%s", s, $1; s = ","}'
}
none_owned_by() { # NODE [CAMS]: none of CAMS (default all) owned by NODE, all owned
    ls_owners >"$tmp/o2"
    ! grep -q " -\$" "$tmp/o2" && ! grep -q " $1\$" "$tmp/o2"
}
resumed_elsewhere() { # T NODE CAMS: each of CAMS has a result from another node since T
    "$check" dump "$url1" RESULTS 2>/dev/null >"$tmp/rnow" || return 1
    for cam in $(echo "$3" | tr ',' ' '); do
        awk -v c="$cam" -v n="$2" -v t="$1" '$1 == c && $2 != n && $5 >= t {f = 1} END {exit !f}' \
            "$tmp/rnow" || return 1
    done
}
results_from_all() {
    "$check" dump "$url1" RESULTS 2>/dev/null | awk '{print $1}' | sort -u | grep -c cam >"$tmp/nres"
    [ "$(cat "$tmp/nres")" -ge 12 ]
}

# 2. Three nodes: 4 cameras each, results from every camera.
start_omma 1 "$cl"
start_omma 2 "$cl"
start_omma 3 "$cl3"
wait_for 60 balanced n1 n2 n3 || fail "no 4/4/4 split in 60 s: $(tr '\n' ' ' <"$tmp/owners")"
wait_for 90 results_from_all || fail "results from $(cat "$tmp/nres") cameras of 12 in 90 s"
grep -q "camera zz1 ignored: bucket omma key cam.zz1: no source= line" "$tmp/n1.err" ||
    fail "node 1 did not refuse cam.zz1: $(grep zz1 "$tmp/n1.err")"
grep -q "camera zz2 ignored: bucket omma key cam.zz2: line 2: an unknown key 'fps'" "$tmp/n2.err" ||
    fail "node 2 did not refuse cam.zz2: $(grep zz2 "$tmp/n2.err")"
# The split may still move for a moment (a node handing a camera over as
# another claims): ls until it shows n1's 4, 10 s at most.
ls_shows_split() {
    "$omma" cluster ls --cluster "$cl" >"$tmp/ls.txt" 2>&1 &&
        grep -q "zz1 .*(invalid" "$tmp/ls.txt" && grep -q "n1 .* weight 0, 4 cameras" "$tmp/ls.txt"
}
wait_for 10 ls_shows_split || fail "omma cluster ls: $(cat "$tmp/ls.txt")"
# A camera added live is claimed; removed, it is handed back.
"$omma" cluster add live synthetic --cluster "$cl" || fail "adding live"
wait_for 15 sh -c "grep -q 'claimed camera live' '$tmp/n1.err' '$tmp/n2.err' '$tmp/n3.err'" ||
    fail "the camera added live was not claimed in 15 s"
"$omma" cluster rm live --cluster "$cl" || fail "removing live"
wait_for 15 sh -c "grep -q 'handed camera live over (removed from the bucket)' '$tmp/n1.err' '$tmp/n2.err' '$tmp/n3.err'" ||
    fail "the camera removed live was not handed back in 15 s"
"$omma" cluster rm nosuch --cluster "$cl" 2>"$tmp/bad.err"
rc=$?
[ $rc = 2 ] && grep -q "no camera nosuch in the bucket omma" "$tmp/bad.err" ||
    fail "removing a camera that is not there: exit $rc: $(cat "$tmp/bad.err")"
wait_for 30 balanced n1 n2 n3 || fail "no 4/4/4 split again: $(tr '\n' ' ' <"$tmp/owners")"

# 3. Node 1 SIGKILLed.
lost=$(owned_by n1)
t=$(now_ms)
kill -9 "$omma1"
echo "kill $t n1 ${lost:--}" >>"$tmp/events"
wait_for 20 none_owned_by n1 || fail "node 1's cameras not owned again in 20 s: $(tr '\n' ' ' <"$tmp/o2")"
wait_for 10 resumed_elsewhere "$t" n1 "$lost" || fail "node 1 killed: results not resumed in 10 s"
start_omma 1 "$cl"
wait_for 60 balanced n1 n2 n3 || fail "node 1 back: no 4/4/4 split in 60 s: $(tr '\n' ' ' <"$tmp/owners")"

# 4. Node 2 drained.
moved=$(owned_by n2)
t=$(now_ms)
"$omma" cluster drain n2 --cluster "$cl" || fail "omma cluster drain n2"
echo "drain $t n2 ${moved:--}" >>"$tmp/events"
wait_for 20 none_owned_by n2 || fail "node 2 drained: cameras not handed over in 20 s: $(tr '\n' ' ' <"$tmp/o2")"
wait_for 10 balanced n1 n3 || fail "node 2 drained: no 6/6 split: $(tr '\n' ' ' <"$tmp/owners")"
# Their results resume on the new owners before n2 takes some back (a
# camera's results come seconds apart: a fixed wait was sometimes too short).
wait_for 10 resumed_elsewhere "$t" n2 "$moved" || fail "node 2 drained: results not resumed in 10 s"
"$omma" cluster ls --cluster "$cl" >"$tmp/ls.txt" 2>&1
grep -q "n2 .*draining" "$tmp/ls.txt" || fail "omma cluster ls does not show n2 draining: $(cat "$tmp/ls.txt")"
"$omma" cluster drain n2 --undo --cluster "$cl" || fail "omma cluster drain n2 --undo"
wait_for 60 balanced n1 n2 n3 || fail "node 2 undrained: no 4/4/4 split in 60 s: $(tr '\n' ' ' <"$tmp/owners")"

# 5. Node 3 partitioned: its cluster connection cut, its sink still there.
cut=$(owned_by n3)
t=$(now_ms)
kill -USR1 "$proxy"
echo "cut $t n3 ${cut:--}" >>"$tmp/events"
wait_for 20 none_owned_by n3 || fail "node 3 cut off: cameras not owned again in 20 s: $(tr '\n' ' ' <"$tmp/o2")"
sleep 5 # both sides publishing, if fencing failed
wait_for 10 resumed_elsewhere "$t" n3 "$cut" || fail "node 3 cut off: results not resumed in 10 s"
kill -USR2 "$proxy"
wait_for 60 balanced n1 n2 n3 || fail "node 3 back: no 4/4/4 split in 60 s: $(tr '\n' ' ' <"$tmp/owners")"
sleep 2

kill -INT "$omma1" "$omma2" "$omma3"
for n in 1 2 3; do
    eval "wait \$omma$n"
    rc=$?
    [ $rc = 130 ] || fail "node $n exited $rc (want 130): $(tail -n 5 "$tmp/n$n.err")"
done
kill "$watcher"
wait "$watcher"
grep -q "lost camera .*no renewal came through in time" "$tmp/n3.err" ||
    fail "node 3 never said its leases ended: $(grep -v '^{' "$tmp/n3.err" | tail -n 5)"
"$check" dump "$url1" RESULTS >"$tmp/results" || fail "reading the results"
python3 "$here/cluster_report.py" "$tmp/watch.log" "$tmp/results" "$tmp/events" "$cams" \
    >"$tmp/report" 2>&1 || fail "the verdict: $(grep FAIL "$tmp/report")"
echo "report: $(head -n 1 "$tmp/report")"
fenced=$(grep -h '^{"cluster"' "$tmp/n3.err" | tail -n 1)
echo "node 3 at the end: $fenced"
for n in 1 2 3; do
    echo "node $n: $(grep -c 'claimed camera' "$tmp/n$n.err") claims, $(grep -c 'lost camera' "$tmp/n$n.err") lost, $(grep 'sink nats' "$tmp/n$n.err" | tail -n 1)"
done

[ -n "$OMMA_KEEP" ] && cp "$tmp"/*.err "$tmp"/watch.log "$tmp"/results "$tmp"/events "$tmp"/report "$OMMA_KEEP"/
[ $fails = 0 ] && echo "ok: cluster" && exit 0
for n in 1 2 3; do
    echo "== node $n (first and last lines)"
    grep -v '^{' "$tmp/n$n.err" | head -n 10
    echo "..."
    grep -v '^{' "$tmp/n$n.err" | tail -n 15
done
exit 1
