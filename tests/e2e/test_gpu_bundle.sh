#!/usr/bin/env bash
# The real-GPU acceptance kit (docs/gpu.md) where there is no GPU:
# 1. make gpu-bundle; the tarball's launcher runs ccld-trace with its own
#    libraries in a root that holds nothing but glibc (chroot): --help and
#    probe-check of the stand-in and of the real libnccl.so.2, the same as
#    the build's binary says;
# 2. check_gpu.py on a ccld-simjob run traced through the bundle: passes,
#    and fails when the trace's calls, seqs or streams are altered;
# 3. the bundle's run_acceptance.sh, every scenario, on a PyTorch stand-in
#    (tests/e2e/torch_standin) over the NCCL and CUDA stand-ins, with a
#    fake nvidia-smi: every check must pass.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/e2e/simjob_lib.sh"
require_bpf
command -v objdump >/dev/null || skip "no objdump (binutils)"

make -C "$TOP" --no-print-directory gpu-bundle >"$TMP/make.log" 2>&1 ||
	fail "make gpu-bundle: $(tail -5 "$TMP/make.log")"
tar -C "$TMP" -xzf "$TOP/build/ccld-gpu-bundle.tar.gz" || fail "cannot unpack the bundle"
B=$TMP/ccld-gpu-bundle
for f in ccld-trace bin/ccld-trace tests/gpu/run_acceptance.sh tests/gpu/workload.py \
	tests/gpu/check_gpu.py MANIFEST README.md lib/libbpf.so.1 lib/libdw.so.1; do
	[ -e "$B/$f" ] || fail "bundle without $f"
done
grep -q '^needs glibc >= 2\.[0-9]' "$B/MANIFEST" || fail "MANIFEST names no glibc: $(head -3 "$B/MANIFEST")"
(cd "$B" && sed -n '/^$/,$p' MANIFEST | sed 1d | sha256sum -c --quiet) ||
	fail "MANIFEST checksums do not match"
# every library ccld-trace needs is glibc's or in the bundle
LD_LIBRARY_PATH=$B/lib ldd "$B/bin/ccld-trace" | awk '$2 == "=>"' >"$TMP/ldd"
awk -v lib="$B/lib/" '$3 !~ /^\// ||
	(index($3, lib) != 1 && $1 !~ /^(libc|libm|libpthread|libdl|librt)\.so/)' "$TMP/ldd" |
	grep . && fail "libraries from outside the bundle: $(cat "$TMP/ldd")"

# 1. a root with glibc and the bundle only
R=$TMP/root
mkdir -p "$R/tmp" "$R/nccl" "$R/bin"
for f in $( (ldd "$B/bin/ccld-trace"; ldd /bin/sh) | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' | sort -u); do
	case ${f##*/} in libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
	*) continue ;;
	esac
	mkdir -p "$R$(dirname "$f")"
	cp -L "$f" "$R$f"
done
cp -L /bin/sh "$R/bin/sh"
cp -a "$B" "$R/b"
cp -L "$SIMLIB/libnccl.so.2" "$R/nccl/libnccl.so.2"
in_root() { chroot "$R" /bin/sh -c "CCLD_CACHE_DIR=/tmp $*"; }
in_root /b/ccld-trace --help >"$TMP/help" 2>&1 || fail "--help in a glibc-only root: $(cat "$TMP/help")"
grep -q 'probe-check' "$TMP/help" || fail "--help: $(cat "$TMP/help")"
# probe-check's findings (not its timings or this kernel's RDMA) as the build's binary says
pc_cmp() {
	python3 - "$1" "$2" <<'PY' || fail "probe-check of $3 differs between the bundle and the build"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("dwarf", None), d.pop("rdma", None), d.pop("library", None)
    d["features"] = [f for f in d["features"] if not f["name"].startswith("RDMA")]
sys.exit(0 if a == b and a["ok"] else f"bundle: {a}\nbuild: {b}")
PY
}
in_root /b/ccld-trace probe-check --json /nccl/libnccl.so.2 >"$TMP/pc.root" 2>"$TMP/pc.err" ||
	fail "probe-check in a glibc-only root: $(cat "$TMP/pc.err")"
"$BIN/ccld-trace" probe-check --json "$SIMLIB/libnccl.so.2" >"$TMP/pc.build" 2>/dev/null
pc_cmp "$TMP/pc.root" "$TMP/pc.build" "the stand-in"
REAL=${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
if [ -r "$REAL" ]; then
	# a hard link: the 218 MB file is not copied (the same file system), else outside the root
	if ln "$REAL" "$R/nccl/real.so.2" 2>/dev/null; then
		in_root /b/ccld-trace probe-check --json /nccl/real.so.2 >"$TMP/pcr.root" 2>"$TMP/pcr.err" ||
			fail "probe-check of the real NCCL in a glibc-only root: $(cat "$TMP/pcr.err")"
	else
		env -i PATH=/usr/bin:/bin "$B/ccld-trace" probe-check --json "$REAL" >"$TMP/pcr.root" ||
			fail "probe-check of the real NCCL through the launcher"
	fi
	"$BIN/ccld-trace" probe-check --json "$REAL" >"$TMP/pcr.build" 2>/dev/null
	pc_cmp "$TMP/pcr.root" "$TMP/pcr.build" "$REAL"
	grep -q '"nccl_version":"2\.' "$TMP/pcr.root" || fail "no NCCL version from $REAL"
fi
echo "ok: the bundle runs with nothing but glibc"

# 2. check_gpu.py on the stand-in's own job, traced through the bundle
start_job --ranks 4 --pp 2 --steps 400 --compute-ms 10 --wait-start "$TMP/go"
pids=$(rank_pids 4)
mkdir -p "$TMP/sim"
env -i PATH=/usr/bin:/bin "$B/ccld-trace" -p "$pids" --json --events --stall 3 \
	-o "$TMP/sim/run.ccld" >"$TMP/sim/trace.jsonl" 2>"$TMP/sim/trace.err" &
TRACER=$!
at_exit "kill -9 $TRACER"
WAIT_S=60 wait_for grep -qs tracing "$TMP/sim/trace.err" ||
	fail "the bundle's ccld-trace did not start: $(cat "$TMP/sim/trace.err")"
touch "$TMP/go"
wait_job
wait "$TRACER" || fail "ccld-trace exited $?: $(cat "$TMP/sim/trace.err")"
python3 "$TOP/tests/e2e/gpu_standin_run.py" "$TMP/pids" "$TMP/log" "$TMP/sim" ||
	fail "cannot lay out the stand-in's logs"
"$B/ccld-trace" replay "$TMP/sim/run.ccld" --json --stall 3 >"$TMP/sim/replay.jsonl"
python3 "$B/tests/gpu/check_gpu.py" check healthy "$TMP/sim" --stall 3 --no-overhead \
	>"$TMP/sim.check" || fail "check_gpu.py on the stand-in: $(cat "$TMP/sim.check")"
# altered traces must fail their checks
for alt in count seq stream; do
	rm -rf "$TMP/alt" && cp -r "$TMP/sim" "$TMP/alt"
	python3 - "$TMP/alt/trace.jsonl" "$alt" <<'PY'
import json, sys
path, alt = sys.argv[1:]
recs = [json.loads(l) for l in open(path)]
calls = sorted((r for r in recs if r.get("type") == "call"), key=lambda c: c["t_ns"])
mid = [c for c in calls if c["t_ns"] > (calls[0]["t_ns"] + calls[-1]["t_ns"]) // 2]
ar = [c for c in mid if c["op"] == "AllReduce"][0]
if alt == "count":
    ar["count"] += 1
elif alt == "seq":
    ar["seq"] += 1
else:
    for c in calls:
        if c["pid"] == ar["pid"]:
            c["stream"] = "0x1"
open(path, "w").write("".join(json.dumps(r) + "\n" for r in recs))
PY
	want=$(case $alt in count) echo "FAIL calls" ;; seq) echo "FAIL collective seqs" ;;
		stream) echo "FAIL tier B" ;; esac)
	python3 "$B/tests/gpu/check_gpu.py" check healthy "$TMP/alt" --stall 3 --no-overhead \
		>"$TMP/alt.check" && fail "check_gpu.py passed a trace with another $alt"
	grep -q "^$want" "$TMP/alt.check" || fail "another $alt: no '$want': $(cat "$TMP/alt.check")"
done
echo "ok: check_gpu.py passes the stand-in's job and fails altered traces"

# 3. the whole acceptance run on the PyTorch stand-in
mkdir -p "$TMP/fakebin"
cat >"$TMP/fakebin/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
*name*) echo "ccld stand-in GPU (tests/sim), 0 MiB" ;;
*driver_version*) echo "none (stand-in)" ;;
esac
EOF
chmod +x "$TMP/fakebin/nvidia-smi"
PATH=$TMP/fakebin:$PATH PYTHONPATH=$TOP/tests/e2e/torch_standin CCLD_TORCH_STANDIN_LIB=$SIMLIB \
	CCLD_GPU_WORKLOAD_ARGS="--size 16384 --p2p 1024 --matrix 256" CCLD_GPU_MAX_OVERHEAD=50 \
	CCLD_GPU_HEALTHY_S=5 CCLD_GPU_UNTRACED_S=4 CCLD_GPU_BASELINE_S=8 \
	"$B/tests/gpu/run_acceptance.sh" --out "$TMP/results" >"$TMP/acceptance.log" 2>&1
rc=$?
cat "$TMP/results/results.md" 2>/dev/null
[ $rc = 0 ] || fail "run_acceptance.sh on the stand-in exited $rc: $(grep -E 'FAIL|run_acceptance' "$TMP/acceptance.log" | head -20)"
n=$(grep -c '| pass |' "$TMP/results/results.md")
[ "$n" -ge 20 ] || fail "only $n checks passed"
tar -tzf "$TMP/results/artefacts.tar.gz" >"$TMP/artefacts.list" || fail "artefacts.tar.gz unreadable"
# (traces and captures are left out where the whole would pass 15 MB)
grep -q 'healthy/' "$TMP/artefacts.list" || fail "artefacts without the healthy run's files"
echo "ok: run_acceptance.sh passes every scenario on the PyTorch stand-in ($n checks)"
