#!/usr/bin/env bash
# Manual proof run (not part of make test): boots Debian 12's 6.1 kernel
# (which has kprobes, ib_core, ib_uverbs and rdma_rxe) under QEMU with this
# machine's root file system shared read-only over 9p, creates a soft-RoCE
# device (rdma_rxe) on the guest's virtio NIC, and runs ccld-trace while an
# ibverbs ping-pong runs, a QP is moved to error (tests/kernel/qp_error.c)
# and the link goes down and up, with kprobes and again with fentry; then a
# traced one-rank NCCL job on the stand-in (tests/kernel/nccl_qp_error.c)
# moves a QP to error and sees its port go down: HW verdicts, live and
# replayed from the capture.  Output: the guest's console, with
# ccld-trace's startup line, its RDMA lines and bpftool's run counts.
#   tests/kernel/qemu-rdma.sh [OUT.log]
# Needs: qemu-system-x86, busybox-static, ibverbs-utils, ibverbs-providers,
# libibverbs-dev, and `tests/kernel/debian-kernel.sh fetch` done.  KVM is
# used when CCLD_QEMU_KVM=1 (it hangs under some nested hypervisors), else
# TCG.
set -eu -o pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${CCLD_KERNEL_CACHE:-/var/cache/ccld/kernels}
LOG=${1:-$TOP/build/tests/kernel/qemu-rdma.log}
deb=$(ls -1 "$CACHE"/linux-image-6.1.0-*-amd64_*_amd64.deb 2>/dev/null | sort -V | tail -n 1)
[ -n "$deb" ] || { echo "no kernel .deb: tests/kernel/debian-kernel.sh fetch" >&2; exit 3; }
Q=${deb%.deb}.qemu
if [ ! -d "$Q/root/lib/modules" ]; then
	rm -rf "$Q" && mkdir -p "$Q"
	dpkg-deb -x "$deb" "$Q/root"
fi
kver=$(ls "$Q/root/lib/modules")
MODS=$Q/root/lib/modules/$kver
[ -s "$MODS/modules.dep" ] || busybox depmod -b "$Q/root" "$kver"
mkdir -p "$TOP/build/tests/kernel"
cc -O2 -Wall -Wextra -Werror -o "$TOP/build/tests/kernel/qp_error" \
	"$TOP/tests/kernel/qp_error.c" -libverbs
cc -O2 -Wall -Wextra -Werror -I"$TOP/include" -o "$TOP/build/tests/kernel/nccl_qp_error" \
	"$TOP/tests/kernel/nccl_qp_error.c" -L"$TOP/build/sim/lib" -lnccl -lcudart -libverbs \
	-Wl,-rpath,"$TOP/build/sim/lib"

# initramfs: busybox, the virtio/9p modules, an init that mounts / over 9p
ird=$Q/initramfs
rm -rf "$ird" && mkdir -p "$ird"/{bin,mod,proc,sys,dev,newroot}
cp /bin/busybox "$ird/bin/busybox"
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
	 9pnet 9pnet_virtio netfs fscache 9p; do
	cp "$(find "$MODS/kernel" -name "$m.ko" | head -n 1)" "$ird/mod/"
done
cat >"$ird/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
	 9pnet 9pnet_virtio netfs fscache 9p; do insmod /mod/\$m.ko || echo "init: insmod \$m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /newroot ||
	{ echo "init: cannot mount the host root"; poweroff -f; }
mount --move /proc /newroot/proc; mount --move /sys /newroot/sys; mount --move /dev /newroot/dev
exec chroot /newroot /bin/bash $TOP/tests/kernel/qemu-guest.sh $MODS $TOP
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | busybox cpio -o -H newc | gzip -1) >"$Q/initramfs.gz"

accel="-accel tcg -cpu max"
[ "${CCLD_QEMU_KVM:-0}" = 1 ] && accel="-enable-kvm -cpu qemu64"
echo "booting $kver under QEMU ($accel); console to $LOG"
timeout "${CCLD_QEMU_TIMEOUT:-900}" qemu-system-x86_64 $accel -smp 1 -m 2048 \
	-nographic -no-reboot -kernel "$Q/root/boot/vmlinuz-$kver" \
	-initrd "$Q/initramfs.gz" -append "console=ttyS0 panic=-1 quiet" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-netdev user,id=n0 -device virtio-net-pci,netdev=n0 </dev/null >"$LOG" 2>&1 || true
grep -E "^(guest|ccld-trace|qp_error|[0-9]+: (kprobe|tracing))|run_cnt|kp_|fe_" "$LOG" || true
