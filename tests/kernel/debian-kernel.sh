#!/usr/bin/env bash
# The BTF of a kernel that has the RDMA stack and kprobes (Debian 12's 6.1),
# for tests/kernel/test_rdma_btf.sh: this machine's kernel has
# neither, so the RDMA programs are load-tested against that kernel's BTF.
#
#   tests/kernel/debian-kernel.sh fetch    apt-get download the image .deb
#                                          (about 70 MB) into the cache
#   tests/kernel/debian-kernel.sh extract  print the directory holding
#                                          vmlinux (ELF, with .BTF) and the
#                                          ib_core / ib_uverbs / rdma_rxe
#                                          modules, extracting once
#
# Cache: $CCLD_KERNEL_CACHE (default /var/cache/ccld/kernels).  `make test`
# never downloads: without a cached .deb the test is skipped.  Exit 3: no
# cached .deb.
set -eu
CACHE=${CCLD_KERNEL_CACHE:-/var/cache/ccld/kernels}

newest_deb() {
	ls -1 "$CACHE"/linux-image-6.1.0-*-amd64_*_amd64.deb 2>/dev/null | sort -V | tail -n 1
}

case ${1:-} in
fetch)
	mkdir -p "$CACHE"
	if [ -n "$(newest_deb)" ]; then newest_deb; exit 0; fi	# cached
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: \(linux-image-6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -n 1)
	[ -n "$pkg" ] || pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
		awk '{print $1}' | sort -V | tail -n 1)
	[ -n "$pkg" ] || { echo "no linux-image-6.1.0-*-amd64 in the apt sources" >&2; exit 1; }
	(cd "$CACHE" && apt-get download "$pkg")
	newest_deb
	;;
extract)
	deb=$(newest_deb)
	[ -n "$deb" ] || { echo "no Debian 6.1 kernel .deb in $CACHE" >&2; exit 3; }
	dir=${deb%.deb}.x
	if [ ! -s "$dir/vmlinux" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir.tmp" --wildcards \
			'./boot/vmlinuz-*' '*/infiniband/core/ib_core.ko*' \
			'*/infiniband/core/ib_uverbs.ko*' '*/infiniband/sw/rxe/rdma_rxe.ko*'
		find "$dir.tmp" -name '*.ko*' -exec mv {} "$dir.tmp" \;
		for z in "$dir.tmp"/*.ko.xz; do [ -e "$z" ] && xz -d "$z"; done
		# vmlinuz: a boot stub, then the compressed vmlinux ELF
		python3 - "$dir.tmp"/boot/vmlinuz-* "$dir.tmp/vmlinux" <<'PY'
import gzip, lzma, sys, zlib
d = open(sys.argv[1], 'rb').read()
for magic, dec in ((b'\xfd7zXZ\x00', lambda b: lzma.LZMADecompressor().decompress(b)),
                   (b'\x1f\x8b\x08\x00', lambda b: zlib.decompressobj(31).decompress(b))):
    i = d.find(magic)
    while i >= 0:
        try:
            out = dec(d[i:])
            if out[:4] == b'\x7fELF':
                open(sys.argv[2], 'wb').write(out)
                sys.exit(0)
        except Exception:
            pass
        i = d.find(magic, i + 1)
sys.exit("no compressed vmlinux ELF found in " + sys.argv[1])
PY
		rm -rf "$dir.tmp/boot" "$dir.tmp/lib" "$dir" && mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
	;;
*)
	echo "usage: $0 fetch|extract" >&2
	exit 2
	;;
esac
