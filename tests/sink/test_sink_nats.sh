#!/bin/sh
# omma stream --backend cpu on the test videos with --sink nats://... into a
# three-node nats-server cluster with JetStream on loopback (free ports, an
# R3 file stream "FACES" on omma.>), checked by a JetStream consumer
# (nats_consumer check: every camera's messages, distinct, in order):
#   1. a plain run: every frame's message there, complete and in order;
#      the same with core NATS publishes (jetstream=0: no acks);
#   2. one node killed (SIGKILL) mid-run (after 4 acks; the run ends 8
#      messages later, by SIGINT): every message acknowledged is
#      there (the sink resends what was not acknowledged; with dedup=1,
#      as here, JetStream drops duplicates by Nats-Msg-Id; the plain run
#      publishes without the header);
#   3. every node down for 10 s, then back: the backlog is delivered; with
#      a backlog bound too small for 10 s the drops are counted, and the
#      stream holds every message not dropped (and perhaps one that was in
#      flight when the nodes went, counted dropped: its ack never came);
#   4. a wrong password: exit 1, the error names the sink (not the
#      password); a subject no stream holds: exit 2, naming the subject.
# The servers are stopped by PID on every path (trap). Skips (77) without
# nats-server or without libnats in the build.
# usage: test_sink_nats.sh OMMA NATS_CONSUMER TESTDATA_DIR
omma=$1 tool=$2 data=$3
command -v nats-server >/dev/null || { echo "SKIP: nats-server not installed"; exit 77; }
"$tool" ports 1 >/dev/null 2>&1
[ $? = 77 ] && { echo "SKIP: built without libnats"; exit 77; }
video1=$data/astronaut_pan.mp4 video2=$data/faces_cut.mp4
[ -f "$video1" ] && [ -f "$video2" ] || { echo "SKIP: no test videos (fetch-testdata.sh)"; exit 77; }

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

nats_tool=$tool
. "$(dirname "$0")/nats_cluster.sh"
start_node 1
start_node 2
start_node 3
url1=nats://127.0.0.1:$p1
sinkurl="nats://127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p3/omma"
if ! "$tool" create "$url1" FACES "omma.>" 3 2>"$tmp/create.err"; then
    fail "creating the R3 stream: $(cat "$tmp/create.err") $(tail -5 "$tmp/n1.log")"
    exit 1
fi

# check NAME MODE: the stream against omma's summary (MODE strict: complete
# and in order; acked: every acknowledged message there).
check() {
    "$tool" check "$url1" FACES 2 >"$tmp/$1.check" 2>&1
    rc=$?
    published=$(sed -n 's/.*sink nats:.*: \([0-9]*\) published, \([0-9]*\) acknowledged.*/\1/p' "$tmp/$1.err")
    acked=$(sed -n 's/.*sink nats:.*: \([0-9]*\) published, \([0-9]*\) acknowledged.*/\2/p' "$tmp/$1.err")
    dropped=$(sed -n 's/.*sink nats:.* \([0-9]*\) dropped.*/\1/p' "$tmp/$1.err")
    distinct=$(sed -n 's/.* \([0-9]*\) distinct.*/\1/p' "$tmp/$1.check" | awk '{s += $1} END {print s + 0}')
    echo "$1: published $published, acknowledged $acked, dropped $dropped; in the stream: $(tr '\n' ';' <"$tmp/$1.check")"
}

# 1. A plain run: 24 frames of each video.
"$omma" stream --backend cpu --threads 2 --realtime off --max-frames 24 --status off \
    --results off --site lab --sink "$sinkurl" "$video1" "$video2" 2>"$tmp/plain.err"
rc=$?
[ $rc = 0 ] || fail "the plain run exited $rc: $(cat "$tmp/plain.err")"
check plain
[ "$rc" = 0 ] || fail "plain run: the stream is not complete and in order: $(cat "$tmp/plain.check")"
[ "$published" = 48 ] && [ "$acked" = 48 ] && [ "$dropped" = 0 ] ||
    fail "plain run: want 48 published and acknowledged, none dropped: $(grep sink "$tmp/plain.err")"
[ "$distinct" = 48 ] || fail "plain run: $distinct distinct messages in the stream, want 48"

# 1b. Core NATS publishes (jetstream=0, no acks): the stream still gets them.
"$tool" create "$url1" CORE "core.>" 3 2>"$tmp/create.err" || fail "stream CORE: $(cat "$tmp/create.err")"
"$omma" stream --backend cpu --threads 2 --realtime off --max-frames 8 --status off \
    --results off --sink "nats://127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p3/core?jetstream=0" "$video1" "$video2" 2>"$tmp/core.err"
rc=$?
[ $rc = 0 ] || fail "the core run exited $rc: $(cat "$tmp/core.err")"
"$tool" check "$url1" CORE 2 >"$tmp/core.check" 2>&1 ||
    fail "core NATS: the stream is not complete and in order: $(cat "$tmp/core.check")"
grep -q "16 published, 16 acknowledged, 0 failed (resent), 0 dropped" "$tmp/core.err" ||
    fail "core NATS: $(grep sink "$tmp/core.err")"

# The last status line's count FIELD (published, acked, ...) of the sink in FILE.
sink_count() {
    sed -n "s/.*\"sinks\":.*\"$2\":\([0-9]*\).*/\1/p" "$1" | tail -n 1
}
# Waits (up to 120 s) until the sink in FILE shows FIELD >= N; 1 if never.
wait_count() {
    for _ in $(seq 600); do
        v=$(sink_count "$1" "$2")
        [ -n "$v" ] && [ "$v" -ge "$3" ] && return 0
        sleep 0.2
    done
    return 1
}

# 2. One node killed mid-run: a looping run; node 2 killed once 4 messages
# are acknowledged; SIGINT once 8 more are published (whatever the CPU
# backend's speed here), then the sink drains.
"$tool" create "$url1" KILL "kill.>" 3 2>"$tmp/create.err" || fail "stream KILL: $(cat "$tmp/create.err")"
"$omma" stream --backend cpu --threads 2 --loop --status json --status-every 0.2 --results off \
    --site lab --sink "nats://127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p3/kill?ack_timeout_ms=1000&dedup=1" \
    "$video1" "$video2" 2>"$tmp/kill.err" &
opid=$!
wait_count "$tmp/kill.err" acked 4 || fail "node killed: no 4 messages acknowledged"
stop_node 2
before=$(sink_count "$tmp/kill.err" published)
wait_count "$tmp/kill.err" published $((before + 8)) || fail "node killed: no 8 messages after"
kill -INT $opid
wait $opid
rc=$?
[ $rc = 130 ] || fail "the run with a node killed exited $rc (want 130): $(tail -n 3 "$tmp/kill.err")"
"$tool" check "$url1" KILL 2 >"$tmp/kill.check" 2>&1
published=$(sed -n 's/.*sink nats:.*: \([0-9]*\) published.*/\1/p' "$tmp/kill.err")
acked=$(sed -n 's/.*sink nats:.*published, \([0-9]*\) acknowledged.*/\1/p' "$tmp/kill.err")
dropped=$(sed -n 's/.*sink nats:.* \([0-9]*\) dropped.*/\1/p' "$tmp/kill.err")
distinct=$(sed -n 's/.* \([0-9]*\) distinct.*/\1/p' "$tmp/kill.check" | awk '{s += $1} END {print s + 0}')
missing=$(sed -n 's/.*missing \([0-9]*\).*/\1/p' "$tmp/kill.check" | awk '{s += $1} END {print s + 0}')
echo "node killed: published $published, acknowledged $acked, dropped $dropped; stream: $(tr '\n' ';' <"$tmp/kill.check")"
[ -n "$published" ] && [ "$published" -ge $((before + 8)) ] ||
    fail "node killed: too few messages: $(tail -n 3 "$tmp/kill.err")"
[ "$dropped" = 0 ] || fail "node killed: $dropped dropped"
[ "$missing" = 0 ] && [ "$distinct" = "$published" ] ||
    fail "node killed: $distinct distinct in the stream of $published published, $missing missing"
start_node 2

# 3. Every node down for 10 s, then back. A backlog of 3 messages: about
# 2 cameras x 15 fps x 10 s = 300 are made meanwhile (fewer where the CPU
# backend is slower: 10 or more at 0.5 frames/s), so some are dropped.
"$tool" create "$url1" DOWN "down.>" 3 2>"$tmp/create.err" || fail "stream DOWN: $(cat "$tmp/create.err")"
"$omma" stream --backend cpu --threads 2 --loop --duration 18 --status json --status-every 1 \
    --results off --sink-drain 30 --site lab \
    --sink "nats://127.0.0.1:$p1,127.0.0.1:$p2,127.0.0.1:$p3/down?backlog=3&ack_timeout_ms=1000" \
    "$video1" "$video2" 2>"$tmp/down.err" &
opid=$!
sleep 3
t0=$(date +%s)
stop_node 1
stop_node 2
stop_node 3
sleep 10
start_node 1
start_node 2
start_node 3
wait $opid
rc=$?
t1=$(date +%s)
[ $rc = 0 ] || fail "the run with every node down exited $rc: $(tail -5 "$tmp/down.err")"
"$tool" check "$url1" DOWN 2 >"$tmp/down.check" 2>&1
published=$(sed -n 's/.*sink nats:.*: \([0-9]*\) published.*/\1/p' "$tmp/down.err")
acked=$(sed -n 's/.*sink nats:.*published, \([0-9]*\) acknowledged.*/\1/p' "$tmp/down.err")
dropped=$(sed -n 's/.*sink nats:.* \([0-9]*\) dropped.*/\1/p' "$tmp/down.err")
distinct=$(sed -n 's/.* \([0-9]*\) distinct.*/\1/p' "$tmp/down.check" | awk '{s += $1} END {print s + 0}')
echo "all down 10 s (back after $((t1 - t0)) s to the end): published $published, acknowledged $acked, dropped $dropped; stream: $(tr '\n' ';' <"$tmp/down.check")"
grep -q '"connected":false' "$tmp/down.err" || fail "all down: the status never showed the sink disconnected"
grep -q '"dropped":[1-9]' "$tmp/down.err" || fail "all down: the status never showed drops"
[ -n "$dropped" ] && [ "$dropped" -gt 0 ] || fail "all down: no drops counted past a backlog of 3"
# Every message not dropped is there; a message in flight when the nodes
# went may be there too although counted dropped (its ack never came).
[ -n "$published" ] && [ "$distinct" -ge $((published - dropped)) ] &&
    [ "$distinct" -le "$published" ] ||
    fail "all down: $distinct distinct in the stream, want published $published - dropped $dropped or more"

# 4. A wrong password, and a subject no stream holds.
set -- $("$tool" ports 1)
pa=$1
nats-server -a 127.0.0.1 -p "$pa" --user omma --pass right -js -sd "$tmp/auth" \
    >"$tmp/auth.log" 2>&1 &
apid=$!
pids="$pids $apid"
sleep 0.5
"$omma" stream --backend cpu --max-frames 1 --status off --results off \
    --sink "nats://omma:wrong@127.0.0.1:$pa/omma" "$video1" 2>"$tmp/auth.err"
rc=$?
[ $rc = 1 ] && grep -q "sink nats://omma:\*\*\*@127.0.0.1:$pa/omma" "$tmp/auth.err" &&
    grep -qi "authorization" "$tmp/auth.err" && ! grep -q wrong "$tmp/auth.err" ||
    fail "a wrong password: exit $rc (want 1), stderr: $(cat "$tmp/auth.err")"
"$omma" stream --backend cpu --max-frames 1 --status off --results off \
    --sink "nats://omma:right@127.0.0.1:$pa/nostream" "$video1" 2>"$tmp/nostream.err"
rc=$?
[ $rc = 2 ] && grep -q "no JetStream stream holds the subject nostream.default.cam0.faces" "$tmp/nostream.err" ||
    fail "no stream: exit $rc (want 2), stderr: $(cat "$tmp/nostream.err")"

[ -n "$OMMA_KEEP" ] && cp "$tmp"/*.err "$tmp"/*.check "$OMMA_KEEP"/ # logs for a look afterwards
[ $fails = 0 ] && echo "ok: NATS JetStream sink" && exit 0
for f in "$tmp"/*.err; do echo "== $f"; tail -3 "$f"; done
exit 1
