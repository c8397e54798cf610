#!/usr/bin/env bash
# ccld-trace probe-check: exit codes and errors, a library compiled here
# without DWARF (init-argument fallback), and the real libnccl.so.2 2.28.9
# when present (every required tier A hook and every ncclComm field found).
. "$(dirname "$0")/../lib.sh"
set -u
PC="$BIN/ccld-trace probe-check"
[ -x "$BIN/ccld-trace" ] || fail "no $BIN/ccld-trace: run make first"
export CCLD_CACHE_DIR=$TMP/cache

# usage errors: exit 2
$PC >/dev/null 2>&1; [ $? = 2 ] || fail "no argument: exit 2 expected"
$PC --bogus x >/dev/null 2>&1; [ $? = 2 ] || fail "bad option: exit 2 expected"

# not an ELF file: one clear line on stderr, nothing on stdout, exit 1
echo "not a library" >"$TMP/notelf.so"
$PC "$TMP/notelf.so" >"$TMP/out" 2>"$TMP/err"; rc=$?
[ $rc = 1 ] || fail "non-ELF: exit $rc, expected 1"
[ ! -s "$TMP/out" ] || fail "non-ELF: unexpected stdout: $(cat "$TMP/out")"
[ "$(wc -l <"$TMP/err")" = 1 ] || fail "non-ELF: expected one stderr line: $(cat "$TMP/err")"
grep -qx "ccld-trace: cannot open $TMP/notelf.so: not an ELF file" "$TMP/err" ||
	fail "non-ELF: bad message: $(cat "$TMP/err")"
$PC "$TMP/missing.so" >/dev/null 2>"$TMP/err"; rc=$?
[ $rc = 1 ] && grep -q "cannot open $TMP/missing.so: No such file" "$TMP/err" ||
	fail "missing file: exit $rc, $(cat "$TMP/err")"

# an NCCL-like library without DWARF, of a version ccld's layout table does
# not know: hooks found, identity falls back
syms="AllReduce AllGather ReduceScatter Broadcast Reduce Send Recv GroupStart
GroupEnd CommInitRank CommInitAll CommDestroy CommAbort CommGetAsyncError"
stub() {
	{
		echo "const char v[] = \"NCCL version $1+cuda12.2\";"
		for s in $syms; do
			echo "int pnccl$s(void) { return 0; }"
			echo "int nccl$s(void) __attribute__((weak, alias(\"pnccl$s\")));"
		done
	} >"$TMP/nodwarf.c"
	cc -shared -fPIC -g0 -o "$TMP/libnccl.so.2" "$TMP/nodwarf.c" || fail "cannot compile stub"
}
stub 2.17.1
$PC "$TMP/libnccl.so.2" >"$TMP/out" 2>&1 || fail "stub: exit $?: $(cat "$TMP/out")"
grep -q '^NCCL        2.17.1$' "$TMP/out" || fail "stub: version: $(cat "$TMP/out")"
grep -q '^layout      none: identity from init arguments only$' "$TMP/out" ||
	fail "stub: layout: $(cat "$TMP/out")"
grep -q 'without DWARF: falls back to init-argument capture' "$TMP/out" ||
	fail "stub: no DWARF fallback line: $(cat "$TMP/out")"
grep -q 'identity from memory (commHash/rank/nRanks): off (no DWARF, no table entry)' "$TMP/out" ||
	fail "stub: identity from memory should be off"
grep -q 'ncclCommSplit .*missing$' "$TMP/out" || fail "stub: Split should be missing"
# a version the table knows: its entry, to be confirmed at attach
stub 2.18.5
$PC "$TMP/libnccl.so.2" >"$TMP/out" 2>&1 || fail "stub 2.18.5: exit $?: $(cat "$TMP/out")"
grep -q "^layout      table: ccld's entry for NCCL 2.18.5, used once a live communicator confirms it at attach$" \
	"$TMP/out" || fail "stub 2.18.5: layout: $(cat "$TMP/out")"
grep -q "identity from memory (commHash/rank/nRanks): on (ccld's table for NCCL 2.18.5: once a live communicator confirms it at attach)" \
	"$TMP/out" || fail "stub 2.18.5: identity from memory: $(cat "$TMP/out")"
grep -q 'identity from init arguments: on (until a live communicator confirms the table entry' \
	"$TMP/out" || fail "stub 2.18.5: no fallback line: $(cat "$TMP/out")"
grep -q 'comm pointer check (startMagic/endMagic): off' "$TMP/out" ||
	fail "stub 2.18.5: 2.18 has no magics: $(cat "$TMP/out")"
$PC --json "$TMP/libnccl.so.2" >"$TMP/out.json" 2>&1 || fail "stub 2.18.5 --json: exit $?"
python3 - "$TMP/out.json" <<'PY' || fail "stub 2.18.5: JSON: $(cat "$TMP/out.json")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["layout"] == {"source": "table", "debuginfo": None, "table_version": "2.18.5"}, o["layout"]
assert not o["dwarf"]["present"]
assert o["structs"]["ncclComm"]["rank"] is not None and o["structs"]["ncclComm"]["endMagic"] is None
PY
stub 2.17.1
# one required hook fewer: exit 1, named in the output
sed -i '/CommAbort/d' "$TMP/nodwarf.c"
cc -shared -fPIC -g0 -o "$TMP/libnccl.so.2" "$TMP/nodwarf.c" || fail "cannot compile stub"
$PC "$TMP/libnccl.so.2" >"$TMP/out" 2>&1; rc=$?
[ $rc = 1 ] || fail "stub without ncclCommAbort: exit $rc, expected 1"
grep -q 'ncclCommAbort .*MISSING (required)' "$TMP/out" || fail "stub: Abort not reported"

# JSON checker: every required tier A hook and every ncclComm field found
check_json() {
	python3 - "$1" "$2" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["schema"] == 1 and o["type"] == "probe_check", o
assert o["defines_nccl"] and o["ok"], "not ok"
miss = [h["symbol"] for h in o["hooks"] if h["tier"] == "A" and h["required"] and not h["found"]]
assert not miss, "required hooks missing: %s" % miss
if sys.argv[2] == "real":
    miss = [h["symbol"] for h in o["hooks"] if not h["found"]]
    assert not miss, "hooks missing in the real library: %s" % miss
    comm = o["structs"]["ncclComm"]
    miss = [k for k, v in comm.items() if v is None]
    assert not miss, "ncclComm fields missing: %s" % miss
    assert o["seq_number_n"] == 5, o["seq_number_n"]
    assert o["dwarf"]["present"]
    if o["build_id"] == "9fcf74d93a8c3605bf7718f594d0a24366e38536":
        assert o["nccl_version"] == "2.28.9", o["nccl_version"]
        assert comm["commHash"] == 1066184 and comm["rank"] == 1066192, comm
        assert comm["nRanks"] == 1066196 and comm["endMagic"] == 1082960, comm
        assert comm["seqNumber"] == 1075728, comm
    on = {f["name"]: f["on"] for f in o["features"]}
    for k in ("identity from memory (commHash/rank/nRanks)",
              "NCCL sequence numbers (seqNumber[])",
              "comm pointer check (startMagic/endMagic)",
              "proxy progress (tier C)", "tier C on the NET transport",
              "tier C on the COLLNET transport"):
        assert on.get(k), "feature off: " + k
    # the C++ hooks, found by demangled name and parameters
    for h in o["hooks"]:
        if h["tier"] == "C":
            assert h["elf_symbol"].startswith("_Z") and h["params"], h
    # every progress function with its transport (the transport tables) and
    # direction; net and collnet each have a static sendProxyProgress
    prog = {(p["transport"], p["dir"]): p["elf_symbol"] for p in o["progress"]}
    want = {("NET", "send"): "_ZL17sendProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("NET", "recv"): "_ZL17recvProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("COLLNET", "send"): "_ZL17sendProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("COLLNET", "recv"): "_ZL17recvProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("P2P", "send"): "_ZL20p2pSendProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("SHM", "send"): "_ZL20shmSendProxyProgressP14ncclProxyStateP13ncclProxyArgs",
            ("SHM", "recv"): "_ZL20shmRecvProxyProgressP14ncclProxyStateP13ncclProxyArgs"}
    for k, v in want.items():
        assert prog.get(k) == v, "progress %s: %s" % (k, prog.get(k))
    assert not [p for p in o["progress"] if p["transport"] == "unknown"], o["progress"]
    offs = [p["offset"] for p in o["progress"]]
    assert len(offs) == len(set(offs)) == 8, o["progress"]
PY
}

checked=0
REAL=${CCLD_REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
if [ -r "$REAL" ]; then
	$PC --json "$REAL" >"$TMP/real.json" || fail "real: exit $?"
	check_json "$TMP/real.json" real || fail "real: JSON check failed"
	# second run comes from the build-id cache with the same answer
	$PC --json "$REAL" >"$TMP/real2.json" || fail "real (cached): exit $?"
	grep -q '"from_cache":true' "$TMP/real2.json" || fail "real: cache not used"
	check_json "$TMP/real2.json" real || fail "real (cached): JSON check failed"
	$PC "$REAL" >"$TMP/real.txt" || fail "real text: exit $?"
	grep -q 'result: every required tier A hook resolves' "$TMP/real.txt" ||
		fail "real text: no result line"
	checked=1
fi
if [ -r "$SIMLIB/libnccl.so.2" ]; then
	$PC --json "$SIMLIB/libnccl.so.2" >"$TMP/sim.json" || fail "stand-in: exit $?"
	check_json "$TMP/sim.json" sim || fail "stand-in: JSON check failed"
	checked=1
fi
# the kernel's RDMA verbs functions (tier D): said in text and JSON; on a
# kernel without ib_core (these machines) "not attached" with the reason
$PC "$TMP/libnccl.so.2" >"$TMP/rdma.txt" 2>&1
$PC --json "$TMP/libnccl.so.2" >"$TMP/rdma.json" 2>&1
grep -q '^rdma: \(not attached: \|would attach \)' "$TMP/rdma.txt" ||
	fail "no rdma line: $(cat "$TMP/rdma.txt")"
python3 - "$TMP/rdma.json" <<'PY' || fail "rdma JSON: $(cat "$TMP/rdma.json")"
import json, sys
o = json.load(open(sys.argv[1]))
r = o["rdma"]
ks = open("/proc/kallsyms").read()
assert len(r["targets"]) == 4, r
assert {t["function"] for t in r["targets"]} == {"ib_modify_qp_with_udata",
    "ib_dispatch_event", "ib_uverbs_qp_event_handler", "ib_uverbs_cq_event_handler"}
f = [x for x in o["features"] if x["name"].startswith("RDMA verbs")]
assert len(f) == 1 and f[0]["on"] == (r["usable"] > 0), f
if " ib_modify_qp_with_udata" not in ks:
    assert r["usable"] == 0 and r["summary"].startswith("not attached: "), r
    assert "ib_core" in r["reason"], r
    assert all(t["method"] is None and t["why"] for t in r["targets"]), r
else:
    assert r["targets"][0]["in_kallsyms"], r
PY
if ! grep -q ' ib_modify_qp_with_udata' /proc/kallsyms; then
	grep -qx 'rdma: not attached: \(no ib_core in this kernel\|ib_core module not loaded.*\)' \
		"$TMP/rdma.txt" || fail "rdma: $(grep '^rdma' "$TMP/rdma.txt")"
fi
[ $checked = 1 ] || skip "neither the real libnccl.so.2 nor the stand-in is present"
echo "probe-check: ok"
