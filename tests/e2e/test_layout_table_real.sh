#!/usr/bin/env bash
# ccld's layout table against the real libnccl.so.2 (2.28.9), stripped of
# its DWARF (a copy: objcopy --strip-debug).
# 1. probe-check: the copy's layout comes from the table's 2.28.9 entry and
#    equals, member for member, what the original's DWARF says.
# 2. Attach: there is no GPU, so NCCL cannot make a comm; a program maps
#    the stripped copy and holds a comm-shaped block laid out by the
#    original's DWARF offsets.  ccld-trace -p finds it at attach, the block
#    confirms the table entry, and the comm state read through the entry
#    holds exactly what the program planted.  Once more with endMagic one
#    word early: the entry is rejected and nothing is read through it.
. "$(dirname "$0")/../lib.sh"
require_real_nccl
command -v objcopy >/dev/null || fail "no objcopy"
mkdir -p "$TMP/lib"
LIB=$TMP/lib/libnccl.so.2
objcopy --strip-debug "$REAL_NCCL" "$LIB" || fail "cannot strip a copy of $REAL_NCCL"

# 1: the table entry is the DWARF's layout
CCLD_CACHE_DIR=$TMP/cache-dwarf "$BIN/ccld-trace" probe-check --json "$REAL_NCCL" \
	>"$TMP/dwarf.json" || fail "probe-check $REAL_NCCL failed"
CCLD_CACHE_DIR=$TMP/cache-table "$BIN/ccld-trace" probe-check --json "$LIB" \
	>"$TMP/table.json" || fail "probe-check of the stripped copy failed"
python3 - "$TMP/dwarf.json" "$TMP/table.json" <<'PY' || fail "table entry differs from the DWARF"
import json, sys
d, t = (json.load(open(p)) for p in sys.argv[1:3])
assert d["nccl_version"] == "2.28.9", d["nccl_version"]
assert d["layout"]["source"] == "dwarf", d["layout"]
assert t["layout"] == {"source": "table", "debuginfo": None, "table_version": "2.28.9"}, t["layout"]
assert not t["dwarf"]["present"]
bad = [(s, m, d["structs"][s][m], t["structs"][s].get(m))
       for s in d["structs"] for m in d["structs"][s]
       if d["structs"][s][m] != t["structs"][s].get(m)]
bad += [(k, d[k], t[k]) for k in ("comm_size", "seq_number_n", "sub_size", "peer_size")
        if d[k] != t[k]]
assert not bad, bad
n = sum(len(v) for v in d["structs"].values())
print(f"ok: the 2.28.9 table entry equals the real library's DWARF ({n} members and 4 sizes)")
PY

# 2: attach to a process holding a comm laid out by the DWARF
require_bpf
cc -O1 -Wall -Werror "$TOP/tests/e2e/fakecomm_prog.c" -ldl -o "$TMP/fakecomm" ||
	fail "cannot build the test program"
read -r size start end hash rank nranks dev seq seqn coll < <(python3 - "$TMP/dwarf.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["structs"]["ncclComm"]
print(d["comm_size"], c["startMagic"], c["endMagic"], c["commHash"], c["rank"], c["nRanks"],
      c["cudaDev"], c["seqNumber"], d["seq_number_n"], c["collOpCount"])
PY
)

# attach NAME END_MAGIC: the program with endMagic at that offset, traced with -p
attach() {
	local name=$1 prog tracer
	mkfifo "$TMP/$name.hold"
	"$TMP/fakecomm" "$LIB" "$size" "$start" "$2" "$hash" "$rank" "$nranks" "$dev" \
		"$seq" "$seqn" "$coll" <"$TMP/$name.hold" >"$TMP/$name.out" 2>"$TMP/$name.prog.err" &
	prog=$!
	at_exit "kill $prog"
	exec 9>"$TMP/$name.hold"
	WAIT_S=30 wait_for grep -qs "^ready" "$TMP/$name.out" ||
		fail "$name: the program did not start: $(cat "$TMP/$name.prog.err")"
	ADDR=$(awk '{ print $2 }' "$TMP/$name.out")
	PROG=$prog
	# (not holding the pipe open: closing it is what ends the program)
	CCLD_CACHE_DIR=$TMP/cache-$name "$BIN/ccld-trace" -p "$prog" --json --events \
		>"$TMP/$name.jsonl" 2>"$TMP/$name.err" 9>&- &
	tracer=$!
	at_exit "kill $tracer"
	WAIT_S=60 wait_for grep -qs "state read from memory" "$TMP/$name.err" ||
		fail "$name: no attach-time read: $(cat "$TMP/$name.err")"
	exec 9>&-
	wait "$prog" || fail "$name: the program failed: $(cat "$TMP/$name.prog.err")"
	WAIT_S=10 wait_for grep -qs "every traced process exited" "$TMP/$name.err" ||
		fail "$name: ccld-trace did not notice the exit: $(cat "$TMP/$name.err")"
	wait "$tracer" || fail "$name: ccld-trace exited with $?: $(cat "$TMP/$name.err")"
}

attach fits "$end"
grep -q "libnccl.so.2: no DWARF layout of ncclComm (nor separate debuginfo for build-id [0-9a-f]*): ccld's table entry for NCCL 2.28.9 is used once a live communicator confirms it" \
	"$TMP/fits.err" || fail "fits: no word about the table entry: $(cat "$TMP/fits.err")"
grep -qF "libnccl.so.2: ccld's table layout of NCCL 2.28.9 confirmed by comm $ADDR of process $PROG " \
	"$TMP/fits.err" || fail "fits: the entry was not confirmed by $ADDR: $(cat "$TMP/fits.err")"
grep -q "state read from memory: 1 comm rank(s) of 1 process(es) (a memory scan)" "$TMP/fits.err" ||
	fail "fits: the comm was not read: $(cat "$TMP/fits.err")"
python3 - "$TMP/fits.jsonl" "$PROG" <<'PY' || fail "fits: the comm state is not what was planted"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
cs = [r for r in recs if r["type"] == "comm_state"]
assert len(cs) == 1, cs
r = cs[0]
want = {"pid": int(sys.argv[2]), "comm": "1234abcd5678ef01", "rank": 1, "nranks": 4,
        "source": "scan", "launched": 15, "launched_per_fn": [3, 0, 5, 0, 7],
        "coll_op_count": 15, "cuda_dev": 2}
bad = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
assert not bad, bad
print("ok: the entry confirmed by the comm at attach, its state read through the entry")
PY

attach misfit "$((end - 8))"
grep -qF "libnccl.so.2: ccld's table layout of NCCL 2.28.9 does not fit this build (process $PROG, comm " \
	"$TMP/misfit.err" || fail "misfit: the entry was not rejected: $(cat "$TMP/misfit.err")"
grep -q "does not fit this build (process [0-9]*, comm 0x[0-9a-f]*: endMagic at offset $end holds 0): not used; no DWARF layout of ncclComm: identity from init arguments only" \
	"$TMP/misfit.err" || fail "misfit: not the misplaced endMagic: $(cat "$TMP/misfit.err")"
grep -q "confirmed by comm" "$TMP/misfit.err" && fail "misfit: confirmed: $(cat "$TMP/misfit.err")"
grep -q "state read from memory: 0 comm rank(s) of 1 process(es) (none found)" "$TMP/misfit.err" ||
	fail "misfit: a comm was read: $(cat "$TMP/misfit.err")"
grep -q '"type":"comm_state"' "$TMP/misfit.jsonl" && fail "misfit: a comm state was read"
echo "ok: with endMagic misplaced the entry is rejected and nothing is read through it"
