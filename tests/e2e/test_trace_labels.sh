#!/usr/bin/env bash
# Kubernetes labels: a stand-in job made to look like a pod's
# containers - its ranks in a kubepods cgroup with a container id, HOSTNAME
# set to the pod name (as Kubernetes does), the service account namespace
# file visible in its mount namespace - traced with -p: the H1 verdict's
# culprit carries pod, namespace and container; the capture replays with
# the same verdict.  A process on the host gets none of them.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
command -v unshare >/dev/null || skip_bpf "unshare (util-linux) missing"
STALL=3
CID=feedc0de0123456789abcdef0123456789abcdef0123456789abcdef01234567

# a cgroup hierarchy we may create groups in: v2, else v1's pids controller
CG=
for root in /sys/fs/cgroup/unified /sys/fs/cgroup /sys/fs/cgroup/pids; do
	d=$root/kubepods/besteffort/pod-ccldtest-$$/$CID
	if [ -w "$root" ] && mkdir -p "$d" 2>/dev/null; then
		CG=$d
		break
	fi
done
[ -n "$CG" ] || fail "cannot create a cgroup under /sys/fs/cgroup"
at_exit "rmdir $CG $(dirname "$CG") $(dirname "$(dirname "$CG")") $(dirname "$(dirname "$(dirname "$CG")")") 2>/dev/null"

# the pod's view of /run/secrets (where /var/run/secrets points)
mkdir -p "$TMP/secrets/kubernetes.io/serviceaccount"
echo training-team >"$TMP/secrets/kubernetes.io/serviceaccount/namespace"
if [ ! -d /run/secrets ]; then
	mkdir /run/secrets || fail "cannot create /run/secrets"
	at_exit "rmdir /run/secrets"
fi

mkdir -p "$TMP/log"
# the launcher and its ranks: own mount namespace, pod hostname, the cgroup
HOSTNAME=trainer-0 CCLD_SIM_CALLLOG=$TMP/log unshare -m --propagation private sh -c '
	mount --bind "$1/secrets" /run/secrets || exit 1
	echo $$ >"$2/cgroup.procs" || exit 1
	shift 2
	exec "$@"' sh "$TMP" "$CG" "$SIMJOB" --pidfile "$TMP/pids" --ranks 8 --tp 2 --pp 2 \
	--steps 100000 --compute-ms 25 --timeout 120 --hang 2:20 --wait-start "$TMP/go" \
	>"$TMP/job.out" 2>"$TMP/job.err" &
JOB=$!
at_exit "stop_job $JOB"
pids=$(rank_pids 8)
grep -q "$CID" "/proc/$(echo "$pids" | cut -d, -f1)/cgroup" ||
	fail "the ranks are not in the cgroup: $(cat "/proc/$(echo "$pids" | cut -d, -f1)/cgroup")"
start_tracer labels -p "$pids" --json --stall "$STALL" -o "$TMP/labels.ccld"
touch "$TMP/go"
WAIT_S=40 wait_for grep -qs '"role":"root"' "$TMP/labels.jsonl" ||
	fail "no verdict: $(cat "$TMP/labels.err")"
sleep 1
stop_tracer labels
stop_job "$JOB"
python3 - "$TMP/labels.jsonl" "$TMP/pids" <<'PY' || fail "labels wrong"
import json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if '"role":"root"' in l][0]
pid2 = [int(l.split()[1]) for l in open(sys.argv[2]) if l.split()[0] == "2"][0]
c = v["culprits"][0]
assert c["pid"] == pid2, c
assert c.get("pod") == "trainer-0", c
assert c.get("namespace") == "training-team", c
assert c.get("container") == "feedc0de0123", c
print("ok: culprit", c)
PY
"$BIN/ccld-trace" replay "$TMP/labels.ccld" --json --stall "$STALL" >"$TMP/labels.replay" ||
	fail "replay failed"
diff <(grep '"verdict"' "$TMP/labels.jsonl") <(grep '"verdict"' "$TMP/labels.replay") >/dev/null ||
	fail "replay verdicts differ"
# the host's processes have no labels: the hang tests' verdicts have none
echo "ok: pod, namespace and container in the verdict, live and replayed"
