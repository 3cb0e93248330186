# Sourced by the NATS tests (tests/sink/test_sink_nats.sh,
# tests/cluster/test_cluster.sh): a three-node nats-server cluster with
# JetStream on free loopback ports. Needs nats_tool (nats_consumer), tmp (a
# folder for the stores and logs) and pids (the PIDs the test kills at its
# exit), and takes nats_extra (more nats-server options) if set; sets p1
# p2 p3 (the client ports) and defines start_node N and stop_node N
# (SIGKILL).
set -- $("$nats_tool" ports 6)
p1=$1 p2=$2 p3=$3 c1=$4 c2=$5 c3=$6
routes="nats://127.0.0.1:$c1,nats://127.0.0.1:$c2,nats://127.0.0.1:$c3"
start_node() { # N: node N (1..3) on its ports, its store in $tmp/nN
    eval "port=\$p$1 cport=\$c$1"
    mkdir -p "$tmp/n$1"
    nats-server -a 127.0.0.1 -p "$port" -n "node$1" --cluster_name omma \
        --cluster "nats://127.0.0.1:$cport" --routes "$routes" -js -sd "$tmp/n$1" $nats_extra \
        >>"$tmp/n$1.log" 2>&1 &
    eval "pid$1=$!"
    pids="$pids $!"
}
stop_node() { # N
    eval "kill -9 \$pid$1; wait \$pid$1 2>/dev/null"
}
