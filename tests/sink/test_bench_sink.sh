#!/bin/sh
# omma bench sink on a small load (2000 messages, 200 at 200/s): it starts
# its servers, stops them, and prints one JSON line per sink built in with
# every latency message received and none dropped. It measures; this only
# checks that it works (no number is compared). Bad values exit 2.
# usage: test_bench_sink.sh OMMA
omma=$1
PATH=$PATH:/usr/sbin
kinds=
features=$("$omma" version)
case $features in *libnats*) command -v nats-server >/dev/null && kinds="$kinds,nats,nats-core" ;; esac
case $features in *libmosquitto*) command -v mosquitto >/dev/null && kinds="$kinds,mqtt" ;; esac
case $features in *librdkafka*) kinds="$kinds,kafka" ;; esac
kinds=${kinds#,}
[ -n "$kinds" ] || { echo "SKIP: no sink library or server"; exit 77; }
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
out=$("$omma" bench sink --kinds "$kinds" --messages 2000 --rate 200 --seconds 1 --json 2>/tmp/omma-bench-sink.$$)
rc=$?
[ $rc = 0 ] || fail "exit $rc: $(cat /tmp/omma-bench-sink.$$)"
for k in $(echo "$kinds" | tr ',' ' '); do
    line=$(printf '%s\n' "$out" | grep "\"kind\":\"$k\"")
    printf '%s\n' "$line" | grep -q '"messages":2000,.*"dropped":0,.*"received":200}' ||
        fail "$k: $line"
done
"$omma" bench sink --size 10 >/dev/null 2>&1
[ $? = 2 ] || fail "--size 10 did not exit 2"
"$omma" bench sink --kinds amqp >/dev/null 2>&1
[ $? = 2 ] || fail "--kinds amqp did not exit 2"
rm -f /tmp/omma-bench-sink.$$
[ $fails = 0 ] && echo "ok: omma bench sink ($kinds)" && exit 0
exit 1
