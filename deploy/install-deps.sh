#!/bin/sh
# Installs the Debian 12 packages ccld needs to build and test, only those
# that are missing.  Used by `make deps` (and so `make test`, `make demo`),
# .ci/run and the Dockerfile.
set -e
PKGS="gcc make clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev
pkg-config python3 iproute2 procps libclang-rt-14-dev dwarves
libhiredis-dev libmicrohttpd-dev redis-server curl nftables libiberty-dev
libcap2-bin"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "ccld: missing Debian packages:$missing (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "ccld: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
