# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# ccld build.  `make` builds everything; `make test` and `make demo` install
# missing Debian packages first.  V=1 shows the full commands.
#
# Layout of outputs (all under build/, ignored by git):
#   build/bpf/       BPF objects and skeleton headers
#   build/obj/       userspace objects (-MMD dependency files beside them)
#   build/asan/      the same objects built with ASan+UBSan, for unit tests
#   build/bin/       ccld-trace, ccld-analyzer, ccld-simjob
#   build/sim/lib/   GPU-less NCCL / CUDA runtime stand-ins (tests/sim)
#   build/tests/bin/ test programs (tests/run.sh runs every test_* there)

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
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	     -Ibpf -Iinclude -Iuser -Ianalyzer -I$(OUT)/bpf \
	     -DCCLD_VERSION='"$(VERSION)"'
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=undefined
LIBS      := -lbpf -lelf -ldw -lz -lhiredis -lmicrohttpd -lpthread -lm

# Debian keeps asm/ under the multiarch dir; clang -target bpf needs it
CLANG_SYS_INCS := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	      -Ivmlinux/$(ARCH) -Ibpf $(CLANG_SYS_INCS)

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/bpf/%.bpf.o)
SKELS      := $(BPF_SRCS:bpf/%.bpf.c=$(OUT)/bpf/%.skel.h)

# user/main.c is ccld-trace's entry, user/analyzer_main.c ccld-analyzer's
# (the fleet analyzer, built once it exists);
# every other user/ and analyzer/ file is a module linked into both.
USER_MAINS := user/main.c user/analyzer_main.c
USER_SRCS  := $(filter-out $(USER_MAINS),$(wildcard user/*.c))
AN_SRCS    := $(wildcard analyzer/*.c)
LIB_SRCS   := $(USER_SRCS) $(AN_SRCS)
LIB_OBJS   := $(LIB_SRCS:%.c=$(OUT)/obj/%.o)
SAN_OBJS   := $(LIB_SRCS:%.c=$(OUT)/asan/%.o)
LIBCCLD    := $(OUT)/obj/libccld.a
LIBCCLD_SAN:= $(OUT)/asan/libccld.a

TRACE      := $(OUT)/bin/ccld-trace
ANALYZER   := $(OUT)/bin/ccld-analyzer

# unit tests: tests/unit/test_X.c -> build/tests/bin/test_X, ASan+UBSan
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(UNIT_SRCS:tests/unit/%.c=$(OUT)/tests/bin/%)

.PHONY: all deps test demo bench bench-build clean fuzz tests-build sim kernel-proof
.DEFAULT_GOAL := all
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
$(OUT)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/asan/%.o: %.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(LIBCCLD): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBCCLD_SAN): $(SAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TRACE): $(OUT)/obj/user/main.o $(LIBCCLD) | $(OUT)/bin
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -rdynamic -o $@ $^ $(LIBS)

$(ANALYZER): $(OUT)/obj/user/analyzer_main.o $(LIBCCLD) | $(OUT)/bin
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBS)

$(OUT)/tests/bin/test_%: tests/unit/test_%.c $(LIBCCLD_SAN) | $(SKELS)
	$(call msg,TEST-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Itests/unit -o $@ $< $(LIBCCLD_SAN) $(LIBS)

$(OUT)/bpf $(OUT)/bin:
	$(Q)mkdir -p $@

# ---- stand-ins, workload and their tests (tests/sim/sim.mk) --------------
include tests/sim/sim.mk
# ---- fuzz targets (tests/fuzz/fuzz.mk) -----------------------------------
-include tests/fuzz/fuzz.mk

tests-build: $(UNIT_BINS)

# fleet transport test driver (tests/fleet/test_fleet_stream.sh), built from
# the sources it needs like the fuzz targets; metrics.o needs libmicrohttpd
FLEET_DRV  := $(OUT)/tests/fleet/fleet_stream_drv
$(FLEET_DRV): tests/fleet/fleet_stream_drv.c user/fleet_stream.c \
	      user/fleet_stream.h user/metrics.c user/metrics.h user/errbuf.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iuser -o $@ \
		$(filter %.c,$^) -lhiredis -lmicrohttpd -lpthread -lm
$(OUT)/tests/bin/test_metrics_format: LIBS += -lmicrohttpd
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
$(OUT)/tests/bench/fleet_load: tests/bench/fleet_load.c $(LIBCCLD)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBCCLD) $(LIBS)
bench-build: $(OUT)/tests/bench/fleet_load

# ---- top-level jobs -----------------------------------------------------
deps:
	$(Q)deploy/install-deps.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/demo.sh

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
