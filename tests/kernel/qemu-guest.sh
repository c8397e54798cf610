#!/bin/bash
# Runs inside the QEMU guest of tests/kernel/qemu-rdma.sh (host root over
# 9p, read-only): soft-RoCE on eth0, ccld-trace --all -v, a verbs ping-pong,
# a QP moved to error, the link down and up; then bpftool's run counts.
MODS=$1 TOP=$2
say() { echo "guest: $*"; }
# writable scratch on the read-only host root: tmpfs over the usual
# directories, except one holding the repository (a clone under /tmp)
S=
for d in /tmp /var/tmp /run /mnt; do
	case "$TOP/" in "$d"/*) continue ;; esac
	mount -t tmpfs scratch "$d" && { [ -n "$S" ] || S=$d; }
done
[ -n "$S" ] || { say "no directory for scratch files"; poweroff -f; }
export TMPDIR=$S
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm	# the stand-in's shared memory
# /lib/modules is not on the read-only host root: insmod by path, in order
ins() { busybox insmod "$(find "$MODS/kernel" -name "$1.ko" | head -n 1)" || say "insmod $1 failed"; }
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
say "kernel $(uname -r)"
for m in failover net_failover virtio_net; do ins $m; done
ip link set lo up; ip link set eth0 up; ip addr add 10.0.2.15/24 dev eth0
# rxe asks the crypto API for "crc32" (request_module needs modprobe: not here)
for m in crc32_generic ib_core ib_uverbs udp_tunnel ip6_udp_tunnel rdma_rxe; do ins $m; done
sleep 1
sysctl -qw kernel.bpf_stats_enabled=1
export CCLD_CACHE_DIR=$S/cache HOME=$S
# one run: ccld-trace ($1: kprobe or fentry) while rxe0 comes up, a verbs
# ping-pong runs, a QP goes to ERR and the link goes down and up
run() {
	say "=== $1"
	[ "$1" = fentry ] && export CCLD_RDMA_NO_KPROBES=1
	"$TOP/build/bin/ccld-trace" --all -v --json --duration 240 >$S/trace.out 2>$S/trace.err &
	tracer=$!
	sleep 8
	say "ccld-trace startup: $(grep 'kernel evidence: rdma' $S/trace.err)"
	rdma link add rxe0 type rxe netdev eth0 && say "rxe0 added" || say "rdma link add failed"
	sleep 2
	timeout 90 ibv_rc_pingpong -d rxe0 -g 1 -n 100 >$S/srv.out 2>&1 &
	server=$!
	sleep 2
	timeout 90 ibv_rc_pingpong -d rxe0 -g 1 -n 100 10.0.2.15 >$S/cli.out 2>&1
	say "pingpong client: $(tail -n 2 $S/cli.out | tr '\n' ' ')"
	wait $server
	"$TOP/build/tests/kernel/qp_error"
	ip link set eth0 down; sleep 2; ip link set eth0 up; sleep 3
	bpftool prog show | grep -E "name (kp|fe)_" | sed 's/^/guest: bpftool: /'
	kill -INT $tracer 2>/dev/null; wait $tracer
	say "ccld-trace stderr:"
	sed 's/^/guest: | /' $S/trace.err
	rdma link delete rxe0
	unset CCLD_RDMA_NO_KPROBES
}
# a traced NCCL rank (the stand-in) with the device open: its QP error and
# the port going down are its own HW verdicts, live and from the capture
attributed() {
	say "=== attributed"
	rdma link add rxe0 type rxe netdev eth0 || say "rdma link add failed"
	"$TOP/build/bin/ccld-trace" --all -v --json -o $S/rdma.ccld --duration 240 \
		>$S/trace.out 2>$S/trace.err &
	tracer=$!
	sleep 8
	CCLD_QP_GO=$S/qp.go "$TOP/build/tests/kernel/nccl_qp_error" 10 &
	job=$!
	# its QP error once the tracer has its probes in (-v says so), then
	# the port down while it sleeps with the device open
	for _ in $(seq 600); do
		grep -q "attached [0-9]* probes to .*libnccl" $S/trace.err && break
		sleep 0.1
	done
	sleep 1
	touch $S/qp.go
	sleep 4
	ip link set eth0 down; sleep 2; ip link set eth0 up
	wait $job
	sleep 2
	kill -INT $tracer 2>/dev/null; wait $tracer
	grep '"type":"verdict"' $S/trace.out | sed 's/^/guest: live: /'
	"$TOP/build/bin/ccld-trace" replay $S/rdma.ccld --json | grep '"type":"verdict"' |
		sed 's/^/guest: replay: /'
	sed 's/^/guest: | /' $S/trace.err
	rdma link delete rxe0
}
run kprobe
run fentry
attributed
poweroff -f
