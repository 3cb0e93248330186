#!/bin/sh
# omma stream --backend cpu on the test videos with --sink mqtt://...?qos=1
# into mosquitto on loopback (a free port, persistence on), and a
# subscriber (mosquitto_sub, QoS 1, a persistent session) that gets every
# message: the broker is restarted mid-run (SIGTERM once 4 messages are
# acknowledged, 2 s away, started again on the same port and store; the run
# ends by SIGINT 8 messages later); every camera's seqs arrive complete.
# Then a wrong password (a broker with a password file): exit 1, the error
# names the sink. The messages validate against the schema's sink_record.
# Servers stopped by PID on every path (trap). Skips (77)
# without mosquitto or without libmosquitto in the build.
# usage: test_sink_mqtt.sh OMMA NATS_CONSUMER(for free ports) TESTDATA_DIR
omma=$1 tool=$2 data=$3
for c in mosquitto mosquitto_sub mosquitto_passwd; do
    command -v $c >/dev/null || [ -x /usr/sbin/$c ] || { echo "SKIP: $c not installed"; exit 77; }
done
PATH=$PATH:/usr/sbin
"$omma" version 2>/dev/null | grep -q libmosquitto || { echo "SKIP: built without libmosquitto"; exit 77; }
video1=$data/astronaut_pan.mp4 video2=$data/faces_cut.mp4
[ -f "$video1" ] && [ -f "$video2" ] || { echo "SKIP: no test videos"; exit 77; }

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

port=$("$tool" ports 1 2>/dev/null) || port=$((20000 + $$ % 20000))
cat >"$tmp/m.conf" <<EOF
listener $port 127.0.0.1
user $(id -un)
allow_anonymous true
persistence true
persistence_location $tmp/
autosave_interval 1
EOF
start_broker() {
    mosquitto -c "$tmp/m.conf" >>"$tmp/broker.log" 2>&1 &
    bpid=$!
    pids="$pids $bpid"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        mosquitto_sub -h 127.0.0.1 -p "$port" -t probe -C 1 -W 1 >/dev/null 2>&1
        [ $? = 27 ] && break # timed out waiting for a message: the broker is up
        sleep 0.2
    done
}
start_broker

# The subscriber: a persistent session (-c, fixed id), QoS 1, one line per message.
mosquitto_sub -h 127.0.0.1 -p "$port" -q 1 -c -i omma-test-sub -t 'omma/#' >"$tmp/got" \
    2>"$tmp/sub.err" &
spid=$!
pids="$pids $spid"
sleep 0.5

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

# A looping run; the broker restarted once 4 messages are acknowledged;
# SIGINT once 8 more are published (whatever the CPU backend's speed).
"$omma" stream --backend cpu --threads 2 --loop --status json --status-every 0.2 \
    --results off --site lab --node n1 --sink "mqtt://127.0.0.1:$port/omma?qos=1" \
    "$video1" "$video2" 2>"$tmp/run.err" &
opid=$!
wait_count "$tmp/run.err" acked 4 || fail "no 4 messages acknowledged"
kill -TERM $bpid
wait $bpid 2>/dev/null
before=$(sink_count "$tmp/run.err" published)
sleep 2
start_broker
wait_count "$tmp/run.err" published $((before + 8)) || fail "no 8 messages after the restart"
kill -INT $opid
wait $opid
rc=$?
[ $rc = 130 ] || fail "the run exited $rc (want 130): $(tail -n 5 "$tmp/run.err")"
sleep 3 # the subscriber's last messages
kill $spid 2>/dev/null
wait $spid 2>/dev/null

published=$(sed -n 's/.*sink mqtt:.*: \([0-9]*\) published.*/\1/p' "$tmp/run.err")
acked=$(sed -n 's/.*sink mqtt:.*published, \([0-9]*\) acknowledged.*/\1/p' "$tmp/run.err")
dropped=$(sed -n 's/.*sink mqtt:.* \([0-9]*\) dropped.*/\1/p' "$tmp/run.err")
# Per camera: messages, distinct seqs, the largest seq.
summary=$(sed -n 's/^{"camera":\([0-9]*\),.*"seq":\([0-9]*\),.*/\1 \2/p' "$tmp/got" | sort -n -k1 -k2 |
    awk '{n[$1]++; if (!(($1, $2) in seen)) {seen[$1, $2] = 1; d[$1]++}; if ($2 > top[$1]) top[$1] = $2}
         END {for (c in n) printf "camera %s: %d messages, %d distinct, last seq %d\n", c, n[c], d[c], top[c]}' | sort)
distinct=$(printf '%s\n' "$summary" | sed -n 's/.* \([0-9]*\) distinct.*/\1/p' | awk '{s += $1} END {print s + 0}')
complete=$(printf '%s\n' "$summary" | awk '{gsub(",", ""); if ($5 != $9) bad = 1} END {print bad ? "no" : "yes"}')
echo "broker restarted: published $published, acknowledged $acked, dropped $dropped; subscriber: $(printf '%s' "$summary" | tr '\n' ';')"
grep -q '"connected":false' "$tmp/run.err" || fail "the status never showed the sink disconnected"
[ -n "$published" ] && [ "$published" -ge $((before + 8)) ] ||
    fail "too few messages: $(tail -n 3 "$tmp/run.err")"
[ "$dropped" = 0 ] && [ "$acked" = "$published" ] || fail "published $published, acknowledged $acked, dropped $dropped"
[ "$distinct" = "$published" ] && [ "$complete" = yes ] ||
    fail "the subscriber got $distinct distinct of $published ($summary)"

# The messages against docs/omma-faces.schema.json's sink_record (with
# Debian's python3-jsonschema, when there).
schema=$(dirname "$0")/../../docs/omma-faces.schema.json
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
    /usr/bin/python3 - "$schema" "$tmp/got" <<'PY' || fail "a message is not a sink_record of the schema"
import copy, json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
schema["oneOf"] = [{"$ref": "#/$defs/sink_record"}]
v = jsonschema.Draft202012Validator(schema)
msgs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert msgs, "no messages"
for m in msgs:
    errors = list(v.iter_errors(m))
    if errors:
        sys.exit("message %s: %s" % (json.dumps(m)[:200], errors[0].message[:300]))
    assert m["node"] == "n1" and m["gpu"] == -1 and len(m["faces"]) == 1, m["node"]
broken = copy.deepcopy(msgs[0])
del broken["seq"]
assert not v.is_valid(broken), "a message without seq passed"
PY
fi

# A wrong password.
port2=$("$tool" ports 1 2>/dev/null) || port2=$((port + 1))
mosquitto_passwd -c -b "$tmp/passwd" omma right >/dev/null 2>&1
cat >"$tmp/auth.conf" <<EOF
listener $port2 127.0.0.1
user $(id -un)
allow_anonymous false
password_file $tmp/passwd
EOF
mosquitto -c "$tmp/auth.conf" >"$tmp/auth.log" 2>&1 &
pids="$pids $!"
for _ in $(seq 50); do grep -q running "$tmp/auth.log" && break; sleep 0.1; done
"$omma" stream --backend cpu --max-frames 1 --status off --results off \
    --sink "mqtt://omma:wrong@127.0.0.1:$port2/omma" "$video1" 2>"$tmp/auth.err"
rc=$?
[ $rc = 1 ] && grep -q "sink mqtt://omma:\*\*\*@127.0.0.1:$port2/omma" "$tmp/auth.err" &&
    grep -qi "not authori" "$tmp/auth.err" && ! grep -q wrong "$tmp/auth.err" ||
    fail "a wrong password: exit $rc (want 1), stderr: $(cat "$tmp/auth.err")"

[ -n "$OMMA_KEEP" ] && cp "$tmp"/*.err "$tmp"/got "$OMMA_KEEP"/ # logs for a look afterwards
[ $fails = 0 ] && echo "ok: MQTT sink" && exit 0
tail -n 5 "$tmp/run.err" "$tmp/broker.log" "$tmp/sub.err"
exit 1
