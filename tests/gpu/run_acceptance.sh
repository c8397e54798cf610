#!/usr/bin/env bash
# ccld's acceptance run on a real GPU (docs/gpu.md).  On a machine with one
# NVIDIA GPU, PyTorch and NCCL, as root: a 2-rank torch.distributed job on
# the one GPU (tests/gpu/workload.py: one NCCL_HOSTID per rank, so NCCL's
# network transport over lo with its proxy thread), ccld-trace attached with
# -p after step 50, four scenarios checked by tests/gpu/check_gpu.py:
#   healthy  every call with its arguments and seqs, tier B completions,
#            tier C proxy records, no verdict, step time traced vs untraced
#   sleep    rank 1 sleeps in Python before a collective: H1 naming it
#   size     rank 1's all_reduce has another count: H2 naming the field
#   compute  rank 1 does 3x the compute for 8 s: S1 naming it
# Writes OUTDIR/results.md (a fragment for docs/numbers.md) and
# OUTDIR/artefacts.tar.gz; exits 0 when every check passed, 1 when one
# failed, 2 when the machine cannot run it.
#
# usage: run_acceptance.sh [--out DIR] [--only NAME[,NAME..]] [--keep]
#   DIR defaults to $OUT, else ./ccld-gpu-results.  ccld-trace: $CCLD_TRACE,
#   else the bundle's launcher (make gpu-bundle), else build/bin/ccld-trace.
#   PYTHON (python3), CCLD_GPU_DEVICE (0), CCLD_GPU_STALL (4 s),
#   CCLD_GPU_MAX_OVERHEAD (1: percent), CCLD_GPU_WORKLOAD_ARGS (more
#   workload.py options, e.g. "--compute-ms 20"), CCLD_GPU_HEALTHY_S (20:
#   the healthy run's traced window, s), CCLD_GPU_UNTRACED_S (8: its
#   untraced window after the detach, s), CCLD_GPU_BASELINE_S (12: the
#   compute run's healthy traced steps before the fault, s).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
DEV=${CCLD_GPU_DEVICE:-0}
STALL=${CCLD_GPU_STALL:-4}
MAX_OVERHEAD=${CCLD_GPU_MAX_OVERHEAD:-1}
HEALTHY_S=${CCLD_GPU_HEALTHY_S:-20}
UNTRACED_S=${CCLD_GPU_UNTRACED_S:-8}
BASELINE_S=${CCLD_GPU_BASELINE_S:-12}
read -ra WL_ARGS <<<"${CCLD_GPU_WORKLOAD_ARGS:-}"
ATTACH_STEP=50
OUTDIR=${OUT:-$PWD/ccld-gpu-results}
ONLY=healthy,sleep,size,compute
KEEP=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUTDIR=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run_acceptance.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
if [ -n "${CCLD_TRACE:-}" ]; then
	TRACE=$CCLD_TRACE
elif [ -x "$ROOT/ccld-trace" ] && [ -x "$ROOT/bin/ccld-trace" ]; then
	TRACE=$ROOT/ccld-trace
else
	TRACE=$ROOT/build/bin/ccld-trace
fi
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK=$(mktemp -d /tmp/ccld-gpu.XXXXXX)
JOB=''
TRACER=''
cleanup() {
	[ -n "$TRACER" ] && kill -9 "$TRACER" 2>/dev/null
	[ -n "$JOB" ] && kill -9 -- "-$JOB" 2>/dev/null
	if [ "$KEEP" = 1 ]; then
		echo "work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
log() { echo "[$(date +%T)] $*" >&2; }
die() { echo "run_acceptance.sh: $*" >&2; exit 2; }
# wait_for SECONDS CMD...: retry CMD every 0.2 s
wait_for() {
	local i n=$(($1 * 5))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
lines() { [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ]; }
rt_ns() { date +%s%N; }

# ---- what this machine is, and whether it can run this --------------------
[ "$(id -u)" = 0 ] || die "needs root (uprobes, BPF)"
[ -r /sys/kernel/btf/vmlinux ] || die "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v nvidia-smi >/dev/null || die "no nvidia-smi: no NVIDIA GPU here?"
if ! "$TRACE" --help >/dev/null 2>"$WORK/help.err"; then
	[ -f "$ROOT/MANIFEST" ] && sed -n 2p "$ROOT/MANIFEST" >&2
	die "$TRACE does not run here: $(head -3 "$WORK/help.err")"
fi
"$PY" - >"$WORK/torch.env" 2>"$WORK/torch.err" <<'EOF' || die "$PY: no usable PyTorch: $(tail -3 "$WORK/torch.err")"
import sys, torch, torch.distributed as dist
assert torch.cuda.is_available(), "torch sees no GPU"
assert dist.is_nccl_available(), "torch has no NCCL backend"
print("python=" + sys.version.split()[0])
print("torch=" + torch.__version__)
print("torch_cuda=" + str(torch.version.cuda))
v = torch.cuda.nccl.version()  # a tuple; an int in old releases
print("nccl=" + (".".join(map(str, v)) if isinstance(v, tuple) else str(v)))
EOF
gpu=$(nvidia-smi -i "$DEV" --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi -i "$DEV" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")
if [ -f "$ROOT/MANIFEST" ]; then
	ccld=$(head -1 "$ROOT/MANIFEST" | awk '{print $2}' | tr -d ,)
else
	ccld=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "?")
fi
log "GPU $gpu, driver $driver; $(tr '\n' ' ' <"$WORK/torch.env"); ccld $ccld ($TRACE)"
LIBNCCL=''
PROBE=''

# ---- one scenario -------------------------------------------------------
stop_tracer() {
	[ -n "$TRACER" ] || return 0
	kill -INT "$TRACER" 2>/dev/null
	if ! wait_for 30 bash -c "! kill -0 $TRACER 2>/dev/null"; then
		echo "ccld-trace did not stop on SIGINT within 30 s" >>"$1/error"
		kill -9 "$TRACER" 2>/dev/null
	fi
	wait "$TRACER" 2>/dev/null
	echo "tracer_rc=$?" >>"$1/tracer.env"
	TRACER=
}
stop_job() {
	[ -n "$JOB" ] || return 0
	kill -TERM -- "-$JOB" 2>/dev/null
	wait_for 10 bash -c "! kill -0 $JOB 2>/dev/null" || kill -9 -- "-$JOB" 2>/dev/null
	wait "$JOB" 2>/dev/null
	JOB=
}
# the job ends by itself once DIR/stop exists (every rank at the same step)
end_job() {
	touch "$1/stop"
	if wait_for 60 bash -c "! kill -0 $JOB 2>/dev/null"; then
		wait "$JOB"
		echo "job_rc=$?" >>"$1/tracer.env"
		JOB=
	else
		echo "the job did not end within 60 s of the stop file" >>"$1/error"
		stop_job
	fi
}
tracer_cpu_s() {
	# utime and stime: fields 14 and 15, counted after the ")" that ends the name
	sed 's/.*) //' "/proc/$TRACER/stat" |
		awk -v t="$(getconf CLK_TCK)" '{ printf "%.3f\n", ($12 + $13) / t }'
}

run_scenario() {
	local name=$1 fault=$2 d=$WORK/$1 p0 p1
	mkdir -p "$d"
	log "$name: starting the job"
	"$PY" "$HERE/workload.py" launch --dir "$d" --fault "$fault" --device "$DEV" \
		--timeout 240 "${WL_ARGS[@]}" >"$d/launch.log" 2>&1 &
	JOB=$!
	wait_for 120 bash -c "[ -f '$d/pids' ] && [ \$(wc -l < '$d/pids') -ge 2 ] || ! kill -0 $JOB"
	if ! lines "$d/pids" 2; then
		echo "no rank started: $(tail -5 "$d/launch.log")" >>"$d/error"
		stop_job
		return 1
	fi
	p0=$(awk '$1 == 0 { print $2 }' "$d/pids")
	p1=$(awk '$1 == 1 { print $2 }' "$d/pids")
	if ! wait_for 240 bash -c "[ -f '$d/steps.0.jsonl' ] && [ -f '$d/steps.1.jsonl' ] &&
	     [ \$(wc -l < '$d/steps.0.jsonl') -ge $ATTACH_STEP ] &&
	     [ \$(wc -l < '$d/steps.1.jsonl') -ge $ATTACH_STEP ] || ! kill -0 $JOB"; then
		echo "the job did not reach step $ATTACH_STEP" >>"$d/error"
	fi
	if ! kill -0 "$JOB" 2>/dev/null || [ -f "$d/error" ]; then
		echo "the job ended before the attach: $(tail -3 "$d"/rank.*.log | tr '\n' ' ')" >>"$d/error"
		stop_job
		return 1
	fi
	if [ -z "$LIBNCCL" ]; then
		LIBNCCL=$(grep -m1 -o '/[^ ]*libnccl[^ ]*\.so[^ ]*' "/proc/$p0/maps")
		if [ -n "$LIBNCCL" ]; then
			"$TRACE" probe-check "/proc/$p0/root$LIBNCCL" >"$WORK/probe-check.txt" 2>&1
			PROBE=$(awk '$1 == "NCCL" && $2 ~ /^[0-9]/ { v = $2 } /^DWARF / { d = $2 }
				/tier C on the NET transport:/ { sub(/.*transport: */, ""); n = $1 }
				/^result:/ { sub(/^result: */, ""); r = $0 }
				END { printf "probe-check: NCCL %s, DWARF %s, tier C on NET %s, %s", v, d, n, r }' \
				"$WORK/probe-check.txt")
		else
			LIBNCCL="no file named libnccl in rank 0's maps (NCCL linked into another library?)"
		fi
		log "$PROBE"
	fi
	log "$name: attaching ccld-trace to pids $p0,$p1 (step $(wc -l <"$d/steps.0.jsonl"))"
	# the probes go in before ccld-trace says "tracing": untraced is before this
	echo "started_rt_ns=$(rt_ns)" >>"$d/tracer.env"
	CCLD_CACHE_DIR=$WORK/cache "$TRACE" -p "$p0,$p1" --json --events --stall "$STALL" \
		-o "$d/run.ccld" >"$d/trace.jsonl" 2>"$d/trace.err" &
	TRACER=$!
	if ! wait_for 60 grep -qs "tracing" "$d/trace.err"; then
		echo "ccld-trace did not start: $(head -5 "$d/trace.err")" >>"$d/error"
		stop_tracer "$d"
		stop_job
		return 1
	fi
	echo "attached_rt_ns=$(rt_ns)" >>"$d/tracer.env"
	case $name in
	healthy)
		sleep "$HEALTHY_S"
		echo "tracer_cpu_s=$(tracer_cpu_s)" >>"$d/tracer.env"
		echo "detached_rt_ns=$(rt_ns)" >>"$d/tracer.env"
		stop_tracer "$d"
		sleep "$UNTRACED_S" # untraced again: the third window of the step-time comparison
		end_job "$d"
		;;
	sleep | size)
		sleep 4 # a few healthy steps traced: the calls' history
		touch "$d/go"
		wait_for $((STALL + 20)) grep -qs '"class":"H[0-9]"' "$d/trace.jsonl" ||
			log "$name: no hang verdict within $((STALL + 20)) s"
		sleep 2 # updates, if any
		stop_tracer "$d"
		stop_job
		;;
	compute)
		sleep "$BASELINE_S" # the detector's baseline
		touch "$d/go"
		wait_for 60 grep -qs end_t_ns "$d/fault.json" ||
			log "$name: the fault did not end within 60 s"
		sleep 6 # the recovery
		stop_tracer "$d"
		end_job "$d"
		;;
	esac
	"$TRACE" replay "$d/run.ccld" --json --stall "$STALL" >"$d/replay.jsonl" 2>"$d/replay.err"
	log "$name: checking"
	"$PY" "$HERE/check_gpu.py" check "$name" "$d" --stall "$STALL" \
		--max-overhead "$MAX_OVERHEAD" 2>&1 | tee "$d/check.txt" >&2
}

names=()
for s in healthy:none sleep:sleep size:size compute:compute; do
	name=${s%%:*}
	case ",$ONLY," in *",$name,"*) ;; *) continue ;; esac
	run_scenario "$name" "${s#*:}" || log "$name: $(cat "$WORK/$name/error")"
	names+=("$WORK/$name")
done
[ ${#names[@]} -gt 0 ] || die "--only named no scenario"

# ---- results ------------------------------------------------------------
step=$("$PY" - "${names[0]}/info.0.json" 2>/dev/null <<'EOF'
import json, sys
i = json.load(open(sys.argv[1]))
print("%d fp32 matmuls of %dx%d per step (%s ms each, measured with both ranks on the GPU)"
      % (i["matmuls_per_step"], i["matrix"], i["matrix"], i["per_mm_ms"]))
EOF
)
kernel=$(uname -r) cpus=$(nproc) date=$(date -u +%F) \
	gpu=$gpu driver=$driver os=$os ccld=$ccld libnccl=$LIBNCCL probe_check=$PROBE \
	step=$step attach_step=$ATTACH_STEP stall=$STALL \
	"$PY" -c 'import json, os, sys
env = {k: os.environ.get(k, "") for k in ("kernel", "cpus", "date", "gpu", "driver", "os",
       "ccld", "libnccl", "probe_check", "step", "attach_step", "stall")}
for line in open(sys.argv[1]):
    k, _, v = line.strip().partition("=")
    env[k] = v
json.dump(env, open(sys.argv[2], "w"), indent=1)' "$WORK/torch.env" "$WORK/env.json"
"$PY" "$HERE/check_gpu.py" report --env "$WORK/env.json" --out "$OUTDIR/results.md" "${names[@]}"
rc=$?
# what a later look needs, within what comes back from a device run (16 MiB)
tar -C "$WORK" -czf "$OUTDIR/artefacts.tar.gz" --exclude=cache . 2>/dev/null
if [ "$(stat -c %s "$OUTDIR/artefacts.tar.gz")" -gt 15000000 ]; then
	tar -C "$WORK" -czf "$OUTDIR/artefacts.tar.gz" --exclude=cache --exclude=run.ccld \
		--exclude=trace.jsonl --exclude=replay.jsonl . 2>/dev/null
fi
log "results: $OUTDIR/results.md ($([ $rc = 0 ] && echo 'every check passed' || echo 'FAILED checks'))"
exit $rc
