# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fuzz targets (included by the top Makefile).  Each is built with clang's
# libFuzzer and ASan+UBSan from the few sources it needs, not the folders'
# libraries (ccld-trace's pull in libbpf).  tests/fuzz/test_*.sh run them
# for a bounded time.
# Without the libFuzzer runtime (Debian: libclang-rt-14-dev) there are none.

FUZZ_RT    := $(shell $(CLANG) -print-file-name=libclang_rt.fuzzer-$(shell uname -m).a 2>/dev/null)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
	      -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	      -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
	      $(WARN) -std=gnu11 -D_GNU_SOURCE $(INC_USER) \
	      -DCCLD_VERSION='"$(VERSION)"'

ifneq ($(wildcard $(FUZZ_RT)),)
FUZZ_BINS  := $(OUT)/tests/fuzz/fuzz_capture $(OUT)/tests/fuzz/fuzz_an_wire \
	      $(OUT)/tests/fuzz/fuzz_kmsg $(OUT)/tests/fuzz/fuzz_procnet \
	      $(OUT)/tests/fuzz/fuzz_procfs $(OUT)/tests/fuzz/fuzz_elfsym \
	      $(OUT)/tests/fuzz/fuzz_dwarf $(OUT)/tests/fuzz/fuzz_redis \
	      $(OUT)/tests/fuzz/fuzz_opts \
	      $(OUT)/tests/fuzz/fuzz_fleet_cred
endif

# command-line option values
$(OUT)/tests/fuzz/fuzz_opts: tests/fuzz/fuzz_opts.c common/optparse.c common/optparse.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_opts.c common/optparse.c -lm

# Redis URLs and replies (fs_consumer.c and fs_backlog.c, included by the
# target; the rest of the transport linked: hiredis)
$(OUT)/tests/fuzz/fuzz_redis: tests/fuzz/fuzz_redis.c $(wildcard user/fleet/fs_*.c) \
			      user/fleet/fs_int.h user/fleet/fleet_stream.h common/errbuf.h \
			      user/fleet/fleet_mac.c user/fleet/fleet_mac.h common/sha256.c common/sha256.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_redis.c user/fleet/fs_link.c \
		user/fleet/fleet_mac.c common/sha256.c \
		-lhiredis -lpthread

# ELF files: symbol index, build-id, DWARF layouts (libelf, libdw, libiberty)
$(OUT)/tests/fuzz/fuzz_elfsym: tests/fuzz/fuzz_elfsym.c tests/fuzz/fuzz_memfd.h user/probe/elfsym.c \
			       user/probe/elfsym.h user/probe/debuginfo.c user/probe/debuginfo.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_elfsym.c user/probe/elfsym.c \
		user/probe/debuginfo.c -lelf -liberty

$(OUT)/tests/fuzz/fuzz_dwarf: tests/fuzz/fuzz_dwarf.c tests/fuzz/fuzz_memfd.h user/probe/dwarf_layout.c \
			      user/probe/dwarf_layout.h user/probe/debuginfo.c user/probe/elfsym.c bpf/ccld.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_dwarf.c user/probe/dwarf_layout.c \
		user/probe/debuginfo.c user/probe/elfsym.c -ldw -lelf -liberty

# /proc text: maps, stat, syscall, cgroup, environ, mountinfo
$(OUT)/tests/fuzz/fuzz_procfs: tests/fuzz/fuzz_procfs.c user/probe/procmaps.c user/probe/procmaps.h \
			       user/probe/proclabels.c user/probe/proclabels.h user/probe/threads.c user/probe/threads.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_procfs.c user/probe/procmaps.c \
		user/probe/proclabels.c user/probe/threads.c

$(OUT)/tests/fuzz/fuzz_kmsg: tests/fuzz/fuzz_kmsg.c user/kernel/kmsg.c user/kernel/kmsg.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_kmsg.c user/kernel/kmsg.c

$(OUT)/tests/fuzz/fuzz_procnet: tests/fuzz/fuzz_procnet.c user/kernel/procnet.c user/kernel/procnet.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_procnet.c user/kernel/procnet.c

$(OUT)/tests/fuzz/fuzz_fleet_cred: tests/fuzz/fuzz_fleet_cred.c user/fleet/fleet_cred.c \
				   user/fleet/fleet_cred.h common/sha256.c common/sha256.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_fleet_cred.c user/fleet/fleet_cred.c \
		common/sha256.c

# the analyzer library and its hash map: no libbpf
$(OUT)/tests/fuzz/fuzz_an_wire: tests/fuzz/fuzz_an_wire.c $(wildcard analyzer/*.c) \
				$(wildcard analyzer/*.h) $(wildcard common/*.h) common/hmap.c common/hooks.c \
				common/names.c common/json.c common/optparse.c bpf/ccld.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -Ianalyzer -o $@ tests/fuzz/fuzz_an_wire.c \
		$(wildcard analyzer/*.c) common/hmap.c common/hooks.c common/names.c common/json.c \
		common/optparse.c -lm

$(OUT)/tests/fuzz/fuzz_capture: tests/fuzz/fuzz_capture.c user/record/capture.c \
				user/record/capture.h user/record/ncclwarn.c \
				user/record/ncclwarn.h user/record/stackasm.c \
				user/record/stackasm.h bpf/ccld.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_capture.c user/record/capture.c \
		user/record/ncclwarn.c user/record/stackasm.c -lz

# reader throughput (docs/formats.md): build/tests/bench/bench_capture
$(OUT)/tests/bench/bench_capture: tests/bench/bench_capture.c user/record/capture.c \
				  user/record/capture.h bpf/ccld.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 -g $(WARN) -std=gnu11 -D_GNU_SOURCE $(INC_USER) \
		-DCCLD_VERSION='"$(VERSION)"' -o $@ \
		tests/bench/bench_capture.c user/record/capture.c -lz

fuzz: $(FUZZ_BINS)
tests-build: $(FUZZ_BINS)
