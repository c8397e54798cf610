#!/usr/bin/env bash
# Fuzzes the parsers of /proc text a traced process controls (maps, stat,
# task syscall, cgroup, environ, mountinfo; tests/fuzz/fuzz_procfs.c) for a
# third of CCLD_FUZZ_SECONDS (fuzz_lib.sh's default): they are small.  Seeds: this
# machine's own /proc files and hand-written lines of the kernel's formats
# with the awkward cases (spaces and ')' in comm, " (deleted)", escapes).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/fuzz_lib.sh"
c=$TMP/corpus
mkdir -p "$c"
# the first byte picks the parser: 0 maps, 1 stat, 2 syscall, 3 cgroup,
# 4 environ, 5 mountinfo
seed() { { printf "\\$(printf %03o "$1")"; cat; } >"$c/$2"; }
i=0
while IFS= read -r line && [ $i -lt 8 ]; do
	printf '%s\n' "$line" | seed 0 "maps-self-$i"
	i=$((i + 1))
done </proc/self/maps
printf '7f1c2a000000-7f1c2a021000 r-xp 00001000 fd:01 1835023                    /usr/lib/x86_64-linux-gnu/libnccl.so.2 (deleted)\n' | seed 0 maps-deleted
printf '7ffd5b3f0000-7ffd5b411000 rw-p 00000000 00:00 0                          [stack]\n' | seed 0 maps-anon
printf '00400000-00401000 r-xp 00000000 08:02 173521      /opt/my lib/libnccl.so\n' | seed 0 maps-space
seed 1 stat-self </proc/self/stat
printf '4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 1234 0 0 0 12 3 0 0 20 0 9 0\n' | seed 1 stat-paren
printf '7 (python3) R 1 7\n' | seed 1 stat-short
printf '202 0x7 0x7ffd5b3f0a40 0x1 0x0 0x0 0x0 0x7ffd5b3f09e8 0x7f1c2a0fe7d2\n' | seed 2 syscall-poll
printf -- '-1 0x7ffd5b3f09e8 0x7f1c2a0fe7d2\n' | seed 2 syscall-none
printf 'running\n' | seed 2 syscall-running
seed 3 cgroup-self </proc/self/cgroup
printf '0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n' | seed 3 cgroup-k8s
printf '12:cpu,cpuacct:/docker/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n1:name=systemd:/\n' | seed 3 cgroup-docker
printf 'PATH=/usr/bin\0HOSTNAME=trainer-7d9f-0\0NCCL_DEBUG=INFO\0' | seed 4 environ-pod
printf 'HOSTNAME=\0HOSTNAMEX=y\0HOSTNAME' | seed 4 environ-edge
seed 5 mountinfo-self < <(head -n 1 /proc/self/mountinfo)
printf '1234 1100 0:88 / / rw,relatime master:1 - overlay overlay rw,lowerdir=/var/lib/containerd/l/A:/var/lib/containerd/l/B,upperdir=/var/lib/containerd/u,workdir=/var/lib/containerd/w\n' | seed 5 mountinfo-overlay
printf '36 35 98:0 /mnt1 /mnt\\040two rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n' | seed 5 mountinfo-escape
run_fuzzer fuzz_procfs $(( $FUZZ_SECONDS / 3 + 1 )) 4096 "$c"
