#!/usr/bin/env bash
# make gpu-bundle: ccld-trace, the shared libraries it needs that a machine
# with only a C library may lack, and tests/gpu/, in one tarball to take to a
# GPU machine where nothing can be installed (docs/gpu.md).  glibc's own
# libraries (libc, libm, the loader...) must come from that machine: they are
# left out, and MANIFEST says which glibc version the binaries need.
# usage: bundle.sh OUT.tar.gz CCLD-TRACE
set -euo pipefail
out=$1
trace=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/ccld-gpu-bundle
mkdir -p "$b/bin" "$b/lib" "$b/tests/gpu"
cp "$trace" "$b/bin/ccld-trace"

# glibc's libraries, which the target has (and must match its loader)
is_glibc() {
	case $1 in
	linux-vdso.so* | ld-linux* | libc.so* | libm.so* | libmvec.so* | libpthread.so* | \
		libdl.so* | librt.so* | libresolv.so* | libutil.so* | libanl.so* | libnss_* | \
		libBrokenLocale.so* | libc_malloc_debug.so* | libthread_db.so*) return 0 ;;
	esac
	return 1
}
# ldd lists the whole closure; each library under its soname
ldd "$trace" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | while read -r name path; do
	is_glibc "$name" && continue
	cp -L "$path" "$b/lib/$name"
done
if ldd "$trace" | grep -q 'not found'; then
	echo "bundle.sh: $trace has unresolved libraries" >&2
	exit 1
fi

# the newest glibc symbol version any of them needs from the target
need=$(for f in "$b/bin/ccld-trace" "$b"/lib/*; do objdump -T "$f"; done |
	awk '/\*UND\*/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_[0-9.]+\)?$/) print $i }' |
	tr -d '()' | sed 's/GLIBC_//' | sort -uV | tail -1)

cat >"$b/ccld-trace" <<'EOF'
#!/bin/sh
# ccld-trace with this bundle's libraries first; glibc from this machine
r=$(readlink -f "$0" 2>/dev/null) || r=$0
d=${r%/*}
LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$d/bin/ccld-trace" "$@"
EOF
chmod 755 "$b/ccld-trace"
cp "$top"/tests/gpu/run_acceptance.sh "$top"/tests/gpu/workload.py \
	"$top"/tests/gpu/check_gpu.py "$b/tests/gpu/"
cp "$top/docs/gpu.md" "$b/README.md"

version=$(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown)
{
	echo "ccld $version, bundled $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
	echo "needs glibc >= $need (this machine's: $(getconf GNU_LIBC_VERSION 2>/dev/null))"
	echo "run: ./ccld-trace ... or tests/gpu/run_acceptance.sh --out DIR"
	echo
	(cd "$b" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
} >"$b/MANIFEST"
tar -C "$stage" -czf "$out.tmp" ccld-gpu-bundle
mv "$out.tmp" "$out"
