# Sourced by the ELF and DWARF fuzz tests and the hostile-library test.
# elf_seeds DIR: compiles small real ELF files into DIR, shaped like what
# ccld reads in libnccl.so: NCCL API symbols, a C++ (mangled) proxy
# function, the objects elfsym.c indexes (ncclComms, a transport table of
# function pointers, as RELATIVE relocations in a .so and as raw words in
# a non-PIE executable), a version string, a build-id, and DWARF 4 and 5
# of the structs dwarf_layout.c reads (members in anonymous structs and
# unions, typedefs, arrays).  Small: no libc, 4 KiB pages.
elf_seeds() {
	local d=$1 cc=${CC:-cc} flags="-O1 -nostdlib -Wl,--build-id -Wl,-z,max-page-size=4096 -Wl,-z,noseparate-code"
	cat >"$d/syms.c" <<'SRC'
typedef int (*fn_t)(void *);
static int proxy(void *a) { return a != 0; }
int ncclAllReduce(void *c) { return proxy(c); }
int ncclCommInitRank(void *c) { return proxy(c) + 1; }
int pncclAllReduce(void *c) { return proxy(c) + 2; }
__attribute__((noinline)) int sendProxyProgress(void *s, void *a)
	__asm__("_ZL17sendProxyProgressP14ncclProxyStateP13ncclProxyArgs");
__attribute__((noinline)) int sendProxyProgress(void *s, void *a) { return s != a; }
int sendProxyProgress2(void *s, void *a)
	__asm__("_ZL17sendProxyProgressP14ncclProxyStateP15ncclProxySubArgs");
int sendProxyProgress2(void *s, void *a) { return s == a; }
fn_t netTransport[4] = { proxy, ncclAllReduce, ncclCommInitRank, pncclAllReduce };
void *ncclComms[64];
int nNcclComms;
const char banner[] = "NCCL version 2.28.9+cuda13.0";
int _start(void) { return netTransport[0]((void *)banner) + nNcclComms; }
SRC
	cat >"$d/layout.c" <<'SRC'
typedef unsigned long u64_t;
struct ncclProxySubArgs {
	char pad0[40]; int channelId; int nsteps; long nbytes; int peer; int rank;
	u64_t base, posted, received, flushed, transmitted, done;
};
struct ncclProxyArgs {
	struct ncclProxySubArgs subs[4]; void *progress; int nsubs; int done;
	u64_t opCount; int sliceSteps, chunkSteps; unsigned char dtype, coll, protocol, redOp;
	struct ncclProxyArgs *next;
};
struct ncclProxyProgressState { unsigned long thread; struct ncclProxyArgs *active; };
struct ncclProxyState { int refCount; struct ncclProxyProgressState progressState; };
struct ncclPeerInfo { int rank; int cudaDev; u64_t busId; u64_t hostHash, pidHash; };
struct ncclComm {
	u64_t startMagic;
	union { struct { u64_t commHash; int rank; int nRanks; }; char raw[40]; };
	int cudaDev; long busId; const volatile u64_t seqNumber[7];
	struct { u64_t opCount; u64_t collOpCount; }; int nChannels;
	struct ncclProxyState *proxyState; struct ncclPeerInfo *peerInfo;
	u64_t endMagic;
};
struct ncclComm *fixture_comm(struct ncclProxyArgs *a, struct ncclPeerInfo *p)
{ static struct ncclComm c; return a && p ? &c : 0; }
SRC
	$cc $flags -shared -fPIC -o "$d/syms.so" "$d/syms.c" &&
	$cc $flags -no-pie -fno-pic -static -o "$d/syms.exe" "$d/syms.c" &&
	$cc $flags -shared -fPIC -g -gdwarf-4 -o "$d/layout4.so" "$d/layout.c" &&
	$cc $flags -shared -fPIC -g -gdwarf-5 -o "$d/layout5.so" "$d/layout.c" &&
	rm -f "$d/syms.c" "$d/layout.c"
}

# elf_corpus DIR: the seed corpus of the ELF fuzz tests: elf_seeds, and the
# stand-in libnccl.so.2 when built (and small enough for -max_len)
elf_corpus() {
	command -v "${CC:-cc}" >/dev/null || skip "a C compiler is needed for the seed corpus"
	mkdir -p "$1"
	elf_seeds "$1" || fail "cannot compile the seed ELF files"
	[ -r "$SIMLIB/libnccl.so.2" ] && [ "$(stat -c %s "$SIMLIB/libnccl.so.2")" -le 262144 ] &&
		cp "$SIMLIB/libnccl.so.2" "$1/sim-libnccl.so.2"
	return 0
}
