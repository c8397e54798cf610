#!/usr/bin/env bash
# The stand-in is faithful where ccld depends on it: every NCCL-internal
# function ccld resolves (tier C hooks, ncclDebugLog for NCCL's warnings,
# proxy progress functions with their transport) has the same symbol in the stand-in as in the real libnccl.so.2
# 2.28.9.  Skips where the real library is absent (not on CI).
. "$(dirname "$0")/../lib.sh"
set -u
[ -x "$BIN/ccld-trace" ] || fail "no $BIN/ccld-trace: run make first"
[ -r "$SIMLIB/libnccl.so.2" ] || fail "no stand-in at $SIMLIB: run make first"
require_real_nccl
REAL=$REAL_NCCL
export CCLD_CACHE_DIR=$TMP/cache
$BIN/ccld-trace probe-check --json "$REAL" >"$TMP/real.json" || fail "real: exit $?"
$BIN/ccld-trace probe-check --json "$SIMLIB/libnccl.so.2" >"$TMP/sim.json" ||
	fail "stand-in: exit $?"
python3 - "$TMP/real.json" "$TMP/sim.json" <<'PY' || fail "symbols differ"
import json, sys
real, sim = (json.load(open(p)) for p in sys.argv[1:3])
bad = []
# the stand-in models the NET transport only; the others are listed here so
# that a new transport ccld resolves cannot go unnoticed
NOT_MODELLED = {"COLLNET", "P2P", "SHM", "PROFILER"}
def hooks(o):
    return {h["symbol"]: h["elf_symbol"] for h in o["hooks"] if h["found"]}
rh, sh = hooks(real), hooks(sim)
for name, sym in sorted(rh.items()):
    if name in sh and sh[name] != sym:
        bad.append("hook %s: real %s, stand-in %s" % (name, sym, sh[name]))
    tier = [h["tier"] for h in real["hooks"] if h["symbol"] == name][0]
    # tier C (proxy) and W (NCCL's warnings): internal functions ccld hooks
    if tier in ("C", "W") and name not in sh:
        bad.append("tier %s hook %s (%s) missing in the stand-in" % (tier, name, sym))
def progress(o):
    return {(p["transport"], p["dir"]): p["elf_symbol"] for p in o["progress"]}
rp, sp = progress(real), progress(sim)
for k, sym in sorted(rp.items()):
    if k[0] in NOT_MODELLED:
        continue
    if sp.get(k) != sym:
        bad.append("progress %s %s: real %s, stand-in %s" % (k[0], k[1], sym, sp.get(k)))
for k in sp:
    if k not in rp:
        bad.append("progress %s %s only in the stand-in" % k)
for b in bad:
    print(b)
n = len([1 for k in rp if k[0] not in NOT_MODELLED])
print("compared %d hooks and %d progress functions" % (len(rh), n))
sys.exit(1 if bad else 0)
PY
echo "nccl symbols: ok"
