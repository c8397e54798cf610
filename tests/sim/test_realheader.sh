#!/usr/bin/env bash
# A plain NCCL program (tests/sim/realheader_prog.c) compiled against
# NVIDIA's nccl.h / cuda_runtime_api.h and against ccld's include/, linked
# with -lnccl -lcudart on the stand-in, run with 2, 4 and 8 ranks: every
# collective x datatype x reduction result is checked by the program.
. "$(dirname "$0")/../lib.sh"
REAL_INC=${CCLD_REAL_CUDA_INCLUDE:-/usr/local/cuda/include}
[ -r "$SIMLIB/libnccl.so" ] || fail "stand-in not built (make sim)"
SRC=$TOP/tests/sim/realheader_prog.c
LINK=(-L"$SIMLIB" -lnccl -lcudart -Wl,-rpath,"$SIMLIB" -lm)

variants=(own)
gcc -O1 -g -Wall -Wextra -Werror -I"$TOP/include" "$SRC" -o "$TMP/prog-own" "${LINK[@]}" ||
	fail "cannot build against include/"
if [ -r "$REAL_INC/nccl.h" ] && [ -r "$REAL_INC/cuda_runtime_api.h" ]; then
	gcc -O1 -g -Wall -Wextra -Werror -I"$REAL_INC" "$SRC" -o "$TMP/prog-real" "${LINK[@]}" ||
		fail "cannot build against $REAL_INC"
	variants+=(real)
	# the binary built with the real headers needs only the stand-in's sonames
	readelf -d "$TMP/prog-real" | grep -q 'NEEDED.*libnccl.so.2' || fail "no libnccl.so.2 NEEDED"
	readelf -d "$TMP/prog-real" | grep -q 'NEEDED.*libcudart.so.13' || fail "no libcudart.so.13 NEEDED"
else
	echo "note: no real headers at $REAL_INC: own headers only"
fi
for v in "${variants[@]}"; do
	for n in 2 4 8; do
		out=$(timeout 60 "$TMP/prog-$v" "$n" 2>&1) || { echo "$out"; fail "$v headers, $n ranks"; }
		ok=$(grep -c "checked, ok" <<<"$out")
		[ "$ok" = "$n" ] || { echo "$out"; fail "$v headers, $n ranks: $ok ranks ok"; }
		echo "$v headers, $n ranks: all results correct"
	done
done
[ "${#variants[@]}" = 2 ] || skip "real headers absent (own headers passed)"
