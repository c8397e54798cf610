#!/usr/bin/env bash
# The stand-in's DWARF names the struct fields ccld reads (pahole resolves
# each by name) at offsets that differ from the real NCCL 2.28.9 build's
# (docs/layouts.md), so a hard-coded offset cannot pass.
# Also checks the symbol shape ccld probes: weak ncclX + strong pncclX at one
# address, local ncclProfiler* hooks and progress functions in .symtab.
. "$(dirname "$0")/../lib.sh"
LIB=$SIMLIB/libnccl.so.2
[ -r "$LIB" ] || fail "stand-in not built (make sim)"
command -v pahole >/dev/null || fail "pahole (dwarves) not installed: make deps"

# struct field real-2.28.9-offset ("-" where only existence is checked)
FIELDS="
ncclComm startMagic -
ncclComm commHash 1066184
ncclComm rank 1066192
ncclComm nRanks 1066196
ncclComm cudaDev 1066200
ncclComm busId 1066224
ncclComm opCount 1066480
ncclComm collOpCount 1066488
ncclComm nChannels 1066496
ncclComm proxyState 1069312
ncclComm seqNumber 1075728
ncclComm endMagic 1082960
ncclProxyArgs progress 32768
ncclProxyArgs nsubs 32776
ncclProxyArgs done 32780
ncclProxyArgs opCount 32792
ncclProxyArgs sliceSteps 32800
ncclProxyArgs chunkSteps 32804
ncclProxyArgs chunkSize 32808
ncclProxyArgs state 32856
ncclProxyArgs nChannels 32960
ncclProxyArgs subs 0
ncclProxySubArgs channelId 72
ncclProxySubArgs nsteps 76
ncclProxySubArgs nbytes 80
ncclProxySubArgs peer 96
ncclProxySubArgs posted 128
ncclProxySubArgs received 136
ncclProxySubArgs flushed 144
ncclProxySubArgs transmitted 152
ncclProxySubArgs done 160
"
declare -A layout
for s in ncclComm ncclProxyArgs ncclProxySubArgs; do
	pahole -C "$s" "$LIB" >"$TMP/$s.txt" 2>&1 || fail "pahole -C $s: $(cat "$TMP/$s.txt")"
	[ -s "$TMP/$s.txt" ] || fail "no DWARF for struct $s in $LIB"
done
while read -r s f real; do
	[ -n "$s" ] || continue
	off=$(awk -v f="$f" '{
		for (i = 1; i <= NF; i++) if ($i == f ";" || index($i, f "[") == 1) {
			if (match($0, /\/\* *[0-9]+/)) { x = substr($0, RSTART + 2, RLENGTH - 2);
				gsub(/ /, "", x); print x; exit } } }' "$TMP/$s.txt")
	[ -n "$off" ] || fail "$s.$f does not resolve by name"
	if [ "$real" != - ] && [ "$off" = "$real" ]; then
		fail "$s.$f at offset $off, the same as the real 2.28.9 build"
	fi
	layout[$s.$f]=$off
	echo "$s.$f @ $off (real 2.28.9: $real)"
done <<<"$FIELDS"
[ "${layout[ncclComm.startMagic]}" = 0 ] || fail "startMagic must be the first field"
size=$(awk '/size:/ { sub(/,/, "", $3); print $3; exit }' "$TMP/ncclComm.txt")
[ $((layout[ncclComm.endMagic] + 8)) = "$size" ] || fail "endMagic must be the last field"
grep -q 'seqNumber\[5\]' "$TMP/ncclComm.txt" || fail "seqNumber is not uint64_t[5]"

# symbols: ncclX weak, pncclX strong, same address
nm -D "$LIB" >"$TMP/dyn"
for f in GetVersion GetUniqueId CommInitRank CommInitRankConfig CommInitAll CommSplit \
	 CommFinalize CommDestroy CommAbort CommCount CommUserRank CommCuDevice \
	 CommGetAsyncError GetErrorString GetLastError GroupStart GroupEnd AllReduce \
	 AllGather ReduceScatter Broadcast Bcast Reduce Send Recv; do
	w=$(awk -v s="nccl$f" '$3 == s && $2 == "W" { print $1 }' "$TMP/dyn")
	t=$(awk -v s="pnccl$f" '$3 == s && $2 == "T" { print $1 }' "$TMP/dyn")
	[ -n "$w" ] && [ "$w" = "$t" ] || fail "nccl$f: want W nccl$f and T pnccl$f at one address"
done
# ncclBcast reaches ncclBroadcast through the PLT (one hook sees both)
objdump -d --no-show-raw-insn "$LIB" | awk '/<pncclBcast>:/,/ret/' | grep -q 'call.*<ncclBroadcast@plt>' ||
	fail "ncclBcast does not call ncclBroadcast through the PLT"
# C++ names as in NCCL 2.28.9 (mangled): matched demangled, parameters follow
nm -C "$LIB" >"$TMP/sym"
for f in ncclProfilerStartProxyOpEvent ncclProfilerStopProxyOpEvent \
	 ncclProfilerStartSendProxyStepEvent ncclProfilerStartRecvProxyStepEvent \
	 ncclProfilerRecordProxyStepEventState ncclProfilerStopProxyStepEvent \
	 ncclProfilerRecordProxyOpEventState sendProxyProgress recvProxyProgress; do
	grep -Eq " [tT] $f\(" "$TMP/sym" || fail "$f missing from .symtab (or cloned/inlined)"
done
readelf -d "$LIB" | grep -q 'SONAME.*\[libnccl.so.2\]' || fail "SONAME is not libnccl.so.2"
readelf -d "$SIMLIB/libcudart.so.13" | grep -q 'SONAME.*\[libcudart.so.13\]' ||
	fail "SONAME is not libcudart.so.13"
echo "DWARF fields, symbols and sonames as ccld expects"
