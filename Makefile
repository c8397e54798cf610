# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# ccld build.  `make` builds everything; `make test` and `make demo` install
# missing Debian packages first.  V=1 shows the full commands.
#
# Layout of outputs (all under build/, ignored by git):
#   build/bpf/       BPF objects and skeleton headers
#   build/obj/       userspace objects (-MMD dependency files beside them),
#                    as the source tree: obj/user/probe/elfsym.o, and one
#                    library per folder beside them: obj/user/probe/libprobe.a
#   build/asan/      the same objects and libraries built with ASan+UBSan,
#                    for unit tests, and ccld-trace, ccld-analyzer built from
#                    them (hostile-input tests, CCLD_ASAN=1 e2e runs)
#   build/bin/       ccld-trace, ccld-analyzer, ccld-simjob
#   build/sim/lib/   GPU-less NCCL / CUDA runtime stand-ins (tests/sim)
#   build/tests/bin/ test programs (tests/run.sh runs every test_* there)
#   build/ccld-gpu-bundle.tar.gz  make gpu-bundle (docs/gpu.md)

OUT       := build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
ARCH      := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VMLINUX   := vmlinux/$(ARCH)/vmlinux.h
VERSION   := 0.1.0

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

WARN      := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS    ?= -O2 -g
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP $(INCS) \
	     -DCCLD_VERSION='"$(VERSION)"'
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=undefined
# what each program links: ccld-analyzer has no BPF, no ELF, no DWARF
LIBS_ANALYZER := -lhiredis -lmicrohttpd -lpthread -lm
LIBS      := -lbpf -lelf -ldw -liberty -lz $(LIBS_ANALYZER)

# Debian keeps asm/ under the multiarch dir; clang -target bpf needs it
CLANG_SYS_INCS := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	      -Ivmlinux/$(ARCH) -Ibpf $(CLANG_SYS_INCS)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/bpf/%.bpf.o)
SKELS      := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/bpf/%.skel.h)

# Userspace sources by stage, one static library per folder (as
# libbpf-tools keeps its common objects apart from its tools):
#   common/      pure code analyzer/ and user/ share
#   analyzer/    the analyzer library (pure C)
#   user/probe/  reading a process and its libraries: /proc, ELF, DWARF,
#                layouts, uprobe attach, comms in memory
#   user/kernel/ tier D: RDMA verbs programs, TCP watch, GPU Xid lines
#   user/record/ records -> state machines -> analyzer -> output; capture
#                files and their replay
#   user/live/   live tracing: the loop, proxy progress, memory snapshots
#   user/fleet/  Redis transport, node agent, fleet analyzer, metrics
#   user/cmd/    the programs: main.c and one file per ccld-trace
#                subcommand; analyzer_main.c is ccld-analyzer's
# Each folder sees only the headers of the folders it builds on: common/
# its own (and bpf/ccld.h), analyzer/ also common/'s, user/ all of them.
USER_DIRS  := probe kernel record live fleet cmd
INC_COMMON := -Ibpf -Iinclude -Icommon
INC_AN     := $(INC_COMMON) -Ianalyzer
INC_USER   := $(INC_AN) $(addprefix -Iuser/,$(USER_DIRS)) -I$(OUT)/bpf
INCS        = $(INC_USER)
$(OUT)/obj/common/%.o $(OUT)/asan/common/%.o: INCS = $(INC_COMMON)
$(OUT)/obj/analyzer/%.o $(OUT)/asan/analyzer/%.o: INCS = $(INC_AN)

# the libraries each program links, in link order (each after its users)
AN_LIBDIRS    := user/fleet analyzer common
TRACE_LIBDIRS := user/live user/fleet user/record user/kernel user/probe analyzer common
LIB_DIRS      := $(TRACE_LIBDIRS)
# $(1): obj or asan, $(2): a folder: the folder's library
lib_a       = $(OUT)/$(1)/$(2)/lib$(notdir $(2)).a
libs_of     = $(foreach d,$(2),$(call lib_a,$(1),$(d)))
AN_MAIN    := user/cmd/analyzer_main.c
TRACE_CMDS := $(filter-out $(AN_MAIN),$(wildcard user/cmd/*.c))

TRACE      := $(OUT)/bin/ccld-trace
ANALYZER   := $(OUT)/bin/ccld-analyzer

# unit tests: tests/unit/test_X.c -> build/tests/bin/test_X, ASan+UBSan
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(OUT)/tests/bin/%)

.PHONY: all deps test demo bench bench-build flake scenario-fuzz clean fuzz tests-build sim kernel-proof gpu-bundle soak \
	manifests
.DEFAULT_GOAL := all
# a recipe that fails leaves no half-written target behind
.DELETE_ON_ERROR:
# keep BPF objects: probe-check and tests load them directly
.SECONDARY: $(BPF_OBJS) $(SKELS)

all: $(TRACE) $(ANALYZER) sim tests-build

# ---- BPF ----------------------------------------------------------------
$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c bpf/ccld.h bpf/common.bpf.h $(VMLINUX) | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bpf/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# ---- userspace ----------------------------------------------------------
# one pattern rule per build kind; the folder picks INCS (above)
$(OUT)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/asan/%.o: %.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@

# a folder's library: every .c of the folder
define lib_rule
$(call lib_a,$(1),$(2)): $(patsubst %.c,$(OUT)/$(1)/%.o,$(wildcard $(2)/*.c))
	$$(call msg,AR,$$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach k,obj asan,$(foreach d,$(LIB_DIRS),$(eval $(call lib_rule,$(k),$(d)))))

$(TRACE): $(TRACE_CMDS:%.c=$(OUT)/obj/%.o) $(call libs_of,obj,$(TRACE_LIBDIRS)) | $(OUT)/bin
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -rdynamic -o $@ $^ $(LIBS)

$(ANALYZER): $(AN_MAIN:%.c=$(OUT)/obj/%.o) $(call libs_of,obj,$(AN_LIBDIRS)) | $(OUT)/bin
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBS_ANALYZER)

# ccld-trace and ccld-analyzer built with ASan+UBSan: hostile-input e2e
# tests and CCLD_ASAN=1 runs of the e2e scripts (tests/lib.sh) use them
TRACE_SAN  := $(OUT)/asan/ccld-trace
ANALYZER_SAN := $(OUT)/asan/ccld-analyzer
$(TRACE_SAN): $(TRACE_CMDS:%.c=$(OUT)/asan/%.o) $(call libs_of,asan,$(TRACE_LIBDIRS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) -rdynamic -o $@ $^ $(LIBS)

$(ANALYZER_SAN): $(AN_MAIN:%.c=$(OUT)/asan/%.o) $(call libs_of,asan,$(AN_LIBDIRS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(LIBS_ANALYZER)

# a unit test links every library (only what it uses is taken from them)
$(OUT)/tests/bin/test_%: tests/unit/test_%.c $(call libs_of,asan,$(LIB_DIRS)) | $(SKELS)
	$(call msg,TEST-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Itests/unit -o $@ $< \
		$(call libs_of,asan,$(LIB_DIRS)) $(LIBS)

$(OUT)/bpf $(OUT)/bin:
	$(Q)mkdir -p $@

# ---- stand-ins, workload and their tests (tests/sim/sim.mk) --------------
include tests/sim/sim.mk
# ---- fuzz targets (tests/fuzz/fuzz.mk) -----------------------------------
-include tests/fuzz/fuzz.mk

tests-build: $(UNIT_BINS) $(TRACE_SAN) $(ANALYZER_SAN)
# the benchmarks are built (not run) with every build, so that make bench
# cannot rot unseen
tests-build: bench-build

# fleet transport test driver (tests/fleet/test_fleet_stream.sh), built from
# the sources it needs like the fuzz targets; metrics.o needs libmicrohttpd
FLEET_DRV  := $(OUT)/tests/fleet/fleet_stream_drv
$(FLEET_DRV): tests/fleet/fleet_stream_drv.c $(wildcard user/fleet/fs_*.c) \
	      user/fleet/fs_int.h user/fleet/fleet_stream.h user/fleet/metrics.c \
	      user/fleet/metrics.h common/errbuf.h user/fleet/fleet_cred.c \
	      user/fleet/fleet_cred.h user/fleet/fleet_mac.c user/fleet/fleet_mac.h \
	      common/sha256.c common/sha256.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(INC_USER) -o $@ \
		$(filter %.c,$^) -lhiredis -lmicrohttpd -lpthread -lm
tests-build: $(FLEET_DRV)

# RDMA programs vs. another kernel's BTF (tests/kernel/test_rdma_btf.sh)
RDMA_BTF_LOAD := $(OUT)/tests/kernel/rdma_btf_load
$(RDMA_BTF_LOAD): tests/kernel/rdma_btf_load.c | $(OUT)/bpf/rdma.bpf.o
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -o $@ $< -lbpf -lelf -lz
tests-build: $(RDMA_BTF_LOAD)

# ---- benchmarks (make bench) ---------------------------------------------
REAL_CUDA ?= /usr/local/cuda
BENCH_BINS := $(OUT)/tests/bench/bench_calls
ifneq ($(wildcard $(REAL_CUDA)/lib/libnccl.so.2),)
BENCH_BINS += $(OUT)/tests/bench/bench_calls_real
endif

$(OUT)/tests/bench/bench_calls: tests/bench/bench_calls.c | sim
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 $(WARN) -Iinclude -o $@ $< -L$(OUT)/sim/lib -lnccl -lcudart \
		-Wl,-rpath,$(abspath $(OUT)/sim/lib)

$(OUT)/tests/bench/bench_calls_real: tests/bench/bench_calls.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 $(WARN) -I$(REAL_CUDA)/include -o $@ $< -L$(REAL_CUDA)/lib \
		-lnccl -Wl,-rpath,$(REAL_CUDA)/lib

bench-build: $(BENCH_BINS) $(OUT)/tests/bench/bench_capture

# slow detector + locator per window (docs/slow.md), from its pure sources
$(OUT)/tests/bench/bench_locator: tests/bench/bench_locator.c tests/unit/splitmix.h analyzer/slow_detect.c \
				  analyzer/slow_stats.c analyzer/slow.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 -g $(WARN) -std=gnu11 -D_GNU_SOURCE -Ianalyzer -o $@ $(filter %.c,$^) -lm
bench-build: $(OUT)/tests/bench/bench_locator

# fleet load generator (tests/bench/fleet_load.sh): synthetic agents
$(OUT)/tests/bench/fleet_load: tests/bench/fleet_load.c $(call libs_of,obj,$(AN_LIBDIRS))
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(call libs_of,obj,$(AN_LIBDIRS)) $(LIBS_ANALYZER)
bench-build: $(OUT)/tests/bench/fleet_load

# ---- real-GPU acceptance (docs/gpu.md) -------------------------------------
# ccld-trace with the libraries a GPU machine may lack, and tests/gpu/
GPU_BUNDLE := $(OUT)/ccld-gpu-bundle.tar.gz
# deploy/k8s is generated from the Helm chart, the one source of both
# (test_manifests.sh fails when they differ)
manifests:
	$(Q)deploy/render.py --out deploy/k8s

gpu-bundle: $(GPU_BUNDLE)
$(GPU_BUNDLE): $(TRACE) $(wildcard tests/gpu/*.sh tests/gpu/*.py) docs/gpu.md
	$(call msg,BUNDLE,$@)
	$(Q)tests/gpu/bundle.sh $@ $(TRACE)

# ---- top-level jobs -----------------------------------------------------
deps:
	$(Q)deploy/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory -j$(shell nproc) all
	$(Q)tests/run.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/demo.sh

# the node agent under 30 minutes of job churn (CCLD_SOAK_S), memory sampled
# into build/soak.csv, the long clean run of test_hang_nofalse and every
# fuzzer for 120 s (make test: 10); not part of make test
soak: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/soak.sh
	$(Q)CCLD_NOFALSE_SECS=300 CCLD_NOFALSE_PAUSE=300:20 CCLD_NOFALSE_BARRIER_S=60 tests/e2e/test_hang_nofalse.sh
	$(Q)CCLD_FUZZ_SECONDS=120 tests/run.sh tests/fuzz/test_fuzz_

# every e2e scenario 5 times plain and 3 times under a bounded CPU load
# (tests/repeat.sh; hours on 2 cores: FLAKE_TESTS picks a part), rows
# appended to build/tests/flake.md; not part of make test
FLAKE_TESTS ?= $(sort $(notdir $(wildcard tests/e2e/test_*.sh tests/fleet/test_*.sh)))
flake: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/repeat.sh -n 5 --table $(OUT)/tests/flake.md $(FLAKE_TESTS); \
	  tests/repeat.sh -n 3 --noise --table $(OUT)/tests/flake.md $(FLAKE_TESTS)

# random jobs and faults scored against the injected fault (docs/simjob.md,
# "Random jobs"): FUZZ_SEEDS (default 1-200, about an hour on 2 cores), the
# accuracy table appended to build/tests/fuzz.md; not part of make test
FUZZ_SEEDS ?= 1-200
scenario-fuzz: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)mkdir -p $(OUT)/tests && rm -f $(OUT)/tests/fuzz.tsv
	$(Q)tests/scenarios/fuzz.sh --results $(OUT)/tests/fuzz.tsv --table $(OUT)/tests/fuzz.md \
	  $(FUZZ_SEEDS)

bench: deps
	$(Q)$(MAKE) --no-print-directory all bench-build
	$(Q)$(OUT)/tests/bench/bench_locator
	$(Q)tests/bench.sh

# the RDMA programs attach and fire on a kernel that has RDMA (Debian 6.1
# under QEMU, ~5 min; needs tests/kernel/debian-kernel.sh fetch): .ci/run
kernel-proof: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/kernel/check_qemu_rdma.sh

clean:
	$(Q)rm -rf $(OUT)

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
