#!/usr/bin/env bash
# `make kernel-proof` (run by .ci/run after make test; about 5 minutes under
# TCG): tests/kernel/qemu-rdma.sh boots Debian 12's 6.1 kernel with
# rdma_rxe, then this checks its console: with kprobes and again with
# fentry all four RDMA programs attached and ib_modify_qp_with_udata /
# ib_dispatch_event fired, the verbs ping-pong ran while ccld traced, and a
# traced stand-in rank got HW verdicts for its QP error and its port going
# down, the same from the capture.  Installs its Debian packages; exits 77
# without the cached kernel .deb (tests/kernel/debian-kernel.sh fetch).
. "$(dirname "$0")/../lib.sh"
set -u
[ "$(id -u)" = 0 ] || skip "needs root"
PKGS="qemu-system-x86 busybox-static ibverbs-utils ibverbs-providers libibverbs-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "installing$missing"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing \
		>"$TMP/apt.log" 2>&1 || fail "apt-get install$missing: $(tail -3 "$TMP/apt.log")"
fi
LOG=$TMP/qemu-rdma.log
"$TOP/tests/kernel/qemu-rdma.sh" "$LOG" >"$TMP/run.out" 2>&1; rc=$?
[ $rc = 3 ] && skip "no Debian 6.1 kernel .deb cached: tests/kernel/debian-kernel.sh fetch"
[ $rc = 0 ] || fail "qemu-rdma.sh exited $rc: $(tail -5 "$TMP/run.out")"
mkdir -p "$TOP/build/tests/kernel" && cp "$LOG" "$TOP/build/tests/kernel/qemu-rdma.log"
python3 - "$LOG" "$TOP/tests/quarantine.txt" <<'PY' || fail "the guest's console does not show it (build/tests/kernel/qemu-rdma.log)"
import re, sys
log = open(sys.argv[1], errors="replace").read()
sections = re.split(r"^guest: === ", log, flags=re.M)
by = {s.split("\n", 1)[0].strip(): s for s in sections[1:]}
bad = []
for kind, prefix in (("kprobe", "kp"), ("fentry", "fe")):
    s = by.get(kind, "")
    if not re.search(r"rdma: attached 4 of 4: .*\(%s\)" % kind, s):
        bad.append("%s: not all four programs attached" % kind)
    for prog in ("modify_qp", "dispatch_event"):
        m = re.search(r"name %s_%s .* run_cnt (\d+)" % (prefix, prog), s)
        if not m or int(m.group(1)) < 1:
            bad.append("%s: %s_%s never ran" % (kind, prefix, prog))
    if not re.search(r"pingpong client: .*100 iters", s):
        bad.append("%s: the verbs ping-pong did not complete" % kind)
s = by.get("attributed", "")
live = re.findall(r"^guest: live: (.*)$", s, flags=re.M)
replay = re.findall(r"^guest: replay: (.*)$", s, flags=re.M)
quarantined = {l.split()[0] for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")}
if not any("QP moved to error" in l for l in live):
    if "check_qemu_rdma:attributed-qp" in quarantined:
        print("quarantined (tests/quarantine.txt): attributed: no HW verdict for the QP error")
    else:
        bad.append("attributed: no HW verdict for the QP error")
if not any("port error" in l for l in live):
    bad.append("attributed: no HW verdict for the port going down")
if live != replay:
    bad.append("attributed: replay differs from live")
if bad:
    sys.exit("\n".join(bad))
print("ok: kprobe and fentry programs attached and fired on Debian 6.1 + rdma_rxe;"
      " %d HW verdicts, replay identical" % len(live))
PY
