#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Generates user/probe/nccl_layout_table.c: the offsets of every struct member
# ccld reads (user/probe/dwarf_layout.c, layout_fields[]) for each NCCL release,
# from NCCL's own headers at the release's git tag.  For each tag, src/ is
# extracted into a temporary directory, nccl.h is made from nccl.h.in as
# NCCL's Makefile makes it, and a small C++ program that includes comm.h,
# proxy.h and transport.h prints offsetof()/sizeof() of each member (-1
# where the release has no such member).  The result is checked in; ccld
# does not need NCCL, CUDA or a C++ compiler to build.
#
# Usage: tools/gen-layout-table.sh [-o OUT] [-c CUDA_INCLUDE] NCCL_GIT [TAG...]
#   NCCL_GIT      a clone (or bare mirror) of NVIDIA's NCCL git repository
#   TAG...        release tags (default: every vX.Y.Z-1 from 2.18 to 2.30)
#   -o OUT        output file (default user/probe/nccl_layout_table.c; - for stdout)
#   -c DIR        CUDA's include directory (default /usr/local/cuda/include)
# Needs g++ (C++17), tar and git.  CXX overrides the compiler.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/user/probe/nccl_layout_table.c
cuda=/usr/local/cuda/include
cxx=${CXX:-g++}

usage() { sed -n '/^# Usage:/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "gen-layout-table: $*" >&2; exit 1; }

while getopts "o:c:h" opt; do
	case $opt in
	o) out=$OPTARG ;;
	c) cuda=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
git=$1
shift
git -C "$git" rev-parse --git-dir >/dev/null 2>&1 || die "$git: not a git repository"
[ -r "$cuda/cuda_runtime_api.h" ] || die "no cuda_runtime_api.h in $cuda (-c DIR)"
command -v "$cxx" >/dev/null || die "no C++ compiler ($cxx)"

if [ $# -gt 0 ]; then
	tags=("$@")
else
	mapfile -t tags < <(git -C "$git" tag -l 'v2.*' |
		grep -E '^v2\.(1[89]|2[0-9]|30)\.[0-9]+-1$' | sort -V)
fi
[ ${#tags[@]} -gt 0 ] || die "no release tags in $git"

# the (struct, member) pairs ccld reads, in layout_fields[] order
mapfile -t fields < <(awk '
	/^const struct layout_field layout_fields\[\] = \{/ { on = 1; next }
	on && /^\};/ { exit }
	on && /\{ *"/ { split($0, q, "\""); print q[2] "." q[4] }' \
	"$top/user/probe/dwarf_layout.c")
[ ${#fields[@]} -gt 0 ] || die "no layout_fields[] in user/probe/dwarf_layout.c"

cuda_ver=$(awk '$1 == "#define" && $2 == "CUDART_VERSION" { print $3 }' \
	"$cuda/cuda_runtime_api.h")
[ -n "$cuda_ver" ] || die "no CUDART_VERSION in $cuda/cuda_runtime_api.h"
cuda_major=$((cuda_ver / 1000))
cuda_minor=$((cuda_ver % 1000 / 10))

tmp=$(mktemp -d /tmp/ccld-layouts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# CUDA 13 dropped the unversioned PFN_cuX names (PFN_cuX_vN only) that NCCL
# before 2.27 declares its driver entry points with: define each as its
# newest version.  Function pointer types change no struct layout.
mkdir -p "$tmp/compat"
{
	echo '#include_next <cudaTypedefs.h>'
	grep -o '\*PFN_[A-Za-z0-9_]*_v[0-9][0-9]*)' "$cuda/cudaTypedefs.h" |
		sed 's/^\*\(PFN_.*\)_v\([0-9]*\))$/\1 \2/' | sort -k1,1 -k2,2n |
		awk '{ v[$1] = $2 } END { for (s in v) print s, v[s] }' | sort |
		while read -r s v; do
			printf '#ifndef %s\n#define %s %s_v%s\n#endif\n' "$s" "$s" "$s" "$v"
		done
} >"$tmp/compat/cudaTypedefs.h"

# The probe: for each member a pair of templates, so that a member a
# release lacks prints -1 instead of failing the compile.
{
	cat <<'EOF'
#include "comm.h"
#include "proxy.h"
#include "transport.h"
#include <cstddef>
#include <cstdio>
#include <type_traits>

#define MEMBER(S, M)							\
	template <typename T, typename = void>				\
	struct has_##S##_##M : std::false_type {};			\
	template <typename T>						\
	struct has_##S##_##M<T, std::void_t<decltype(&T::M)>>		\
		: std::true_type {};					\
	template <typename T> static long off_##S##_##M()		\
	{								\
		if constexpr (has_##S##_##M<T>::value)			\
			return (long)offsetof(T, M);			\
		else							\
			return -1;					\
	}

template <typename T, typename = void>
struct has_seq : std::false_type {};
template <typename T>
struct has_seq<T, std::void_t<decltype(&T::seqNumber)>> : std::true_type {};
template <typename T> static long seq_count()
{
	if constexpr (has_seq<T>::value)
		return (long)(sizeof(T::seqNumber) / sizeof(T::seqNumber[0]));
	else
		return 0;
}
EOF
	for f in "${fields[@]}"; do
		echo "MEMBER(${f%%.*}, ${f#*.})"
	done
	echo 'int main(void)'
	echo '{'
	echo '	printf("comm_size %zu\n", sizeof(struct ncclComm));'
	echo '	printf("sub_size %zu\n", sizeof(struct ncclProxySubArgs));'
	echo '	printf("peer_size %zu\n", sizeof(struct ncclPeerInfo));'
	echo '	printf("seq_number_n %ld\n", seq_count<struct ncclComm>());'
	for f in "${fields[@]}"; do
		s=${f%%.*} m=${f#*.}
		echo "	printf(\"$f %ld\\n\", off_${s}_${m}<struct $s>());"
	done
	echo '	return 0;'
	echo '}'
} >"$tmp/probe.cc"

# one release: "version" line, then "key value" lines
probe_tag() {
	local tag=$1 dir=$tmp/$1 major minor patch d inc
	mkdir -p "$dir/gen"
	git -C "$git" archive "$tag" src makefiles | tar -x -C "$dir" ||
		die "$tag: cannot extract src/"
	major=$(awk '$1 == "NCCL_MAJOR" { print $3 }' "$dir/makefiles/version.mk")
	minor=$(awk '$1 == "NCCL_MINOR" { print $3 }' "$dir/makefiles/version.mk")
	patch=$(awk '$1 == "NCCL_PATCH" { print $3 }' "$dir/makefiles/version.mk")
	[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] ||
		die "$tag: no version in makefiles/version.mk"
	# as src/Makefile makes $(INCDIR)/nccl.h
	sed -e "s/\${nccl:Major}/$major/g" -e "s/\${nccl:Minor}/$minor/g" \
	    -e "s/\${nccl:Patch}/$patch/g" -e "s/\${nccl:Suffix}//g" \
	    -e "s/\${nccl:Version}/$(printf '%d%02d%02d' "$major" "$minor" "$patch")/g" \
	    "$dir/src/nccl.h.in" >"$dir/gen/nccl.h"
	# src/Makefile's include directories (include/os from 2.29 on)
	inc=(-I"$dir/src" -I"$dir/gen" -I"$dir/src/include")
	for d in os plugin; do
		[ -d "$dir/src/include/$d" ] && inc+=(-I"$dir/src/include/$d")
	done
	# NCCL's own flags that can change a struct (makefiles/common.mk defaults)
	"$cxx" -std=c++17 -O1 -w -DCUDA_MAJOR="$cuda_major" -DCUDA_MINOR="$cuda_minor" \
		-DPROFAPI -DNCCL_OS_LINUX -DNCCL_GIN_PROXY_ENABLE=1 \
		-DDOCA_VERBS_USE_CUDA_WRAPPER -DDOCA_VERBS_USE_NET_WRAPPER "${inc[@]}" -I"$tmp/compat" -I"$cuda" -I"$cuda/cccl" \
		"$tmp/probe.cc" -o "$dir/probe" 2>"$dir/cc.log" ||
		die "$tag: the probe does not compile: $(head -n 20 "$dir/cc.log")"
	echo "version $major.$minor.$patch"
	"$dir/probe" || die "$tag: the probe failed"
	rm -rf "$dir"
}

# C identifier of a version: 2.28.9 -> v2_28_9
ident() { echo "v${1//./_}"; }

{
	cat <<EOF
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Generated by tools/gen-layout-table.sh from NCCL's headers at each
 * release tag (CUDA $cuda_major.$cuda_minor headers, $cxx); do not edit.
 * Offsets in bytes, -1: the release has no such member.
 *
 * A data table, one entry per NCCL release: the one .c file allowed past
 * 900 lines (it grows with releases; the code reading it is
 * layout_table.c).
 */
#include "layout_table.h"

const char *const layout_table_fields[] = {
EOF
	for f in "${fields[@]}"; do
		echo "	\"$f\","
	done
	echo "};"
	echo
	echo "const int layout_table_nfields = ${#fields[@]};"
	entries=()
	for tag in "${tags[@]}"; do
		echo "gen-layout-table: $tag" >&2
		probe_tag "$tag" >"$tmp/out.txt"
		ver=$(awk '$1 == "version" { print $2 }' "$tmp/out.txt")
		declare -A kv=()
		while read -r k v; do kv[$k]=$v; done <"$tmp/out.txt"
		echo
		echo "static const __s32 $(ident "$ver")[] = {"
		for f in "${fields[@]}"; do
			echo "	${kv[$f]},	/* $f */"
		done
		echo "};"
		entries+=("	{ \"$ver\", ${kv[comm_size]}, ${kv[sub_size]}, ${kv[peer_size]}, ${kv[seq_number_n]}, $(ident "$ver") },")
		unset kv
	done
	echo
	echo "/* version, sizeof ncclComm, ncclProxySubArgs, ncclPeerInfo, seqNumber[] elements */"
	echo "const struct layout_table_entry layout_table[] = {"
	printf '%s\n' "${entries[@]}"
	echo "};"
	echo
	echo "const int layout_table_n = ${#entries[@]};"
} >"$tmp/table.c"

if [ "$out" = - ]; then
	cat "$tmp/table.c"
else
	mv "$tmp/table.c" "$out"
	echo "gen-layout-table: wrote $out (${#tags[@]} releases, ${#fields[@]} members)" >&2
fi
