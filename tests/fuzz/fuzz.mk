# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fuzz targets (included by the top Makefile).  Each is built with clang's
# libFuzzer and ASan+UBSan from the few sources it needs, not libccld.a
# (which pulls in libbpf).  tests/fuzz/test_*.sh run them for a bounded time.
# Without the libFuzzer runtime (Debian: libclang-rt-14-dev) there are none.

FUZZ_RT    := $(shell $(CLANG) -print-file-name=libclang_rt.fuzzer-$(shell uname -m).a 2>/dev/null)
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined \
	      -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
	      -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
	      $(WARN) -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser \
	      -DCCLD_VERSION='"$(VERSION)"'

ifneq ($(wildcard $(FUZZ_RT)),)
FUZZ_BINS  := $(OUT)/tests/fuzz/fuzz_capture $(OUT)/tests/fuzz/fuzz_an_wire \
	      $(OUT)/tests/fuzz/fuzz_kmsg $(OUT)/tests/fuzz/fuzz_procnet
endif

$(OUT)/tests/fuzz/fuzz_kmsg: tests/fuzz/fuzz_kmsg.c user/kmsg.c user/kmsg.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_kmsg.c user/kmsg.c

$(OUT)/tests/fuzz/fuzz_procnet: tests/fuzz/fuzz_procnet.c user/procnet.c user/procnet.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_procnet.c user/procnet.c

# the analyzer library and its hash map: no libbpf
$(OUT)/tests/fuzz/fuzz_an_wire: tests/fuzz/fuzz_an_wire.c $(wildcard analyzer/*.c) \
				$(wildcard analyzer/*.h) user/hmap.c user/hooks.c user/names.c bpf/ccld.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -Ianalyzer -o $@ tests/fuzz/fuzz_an_wire.c \
		$(wildcard analyzer/*.c) user/hmap.c user/hooks.c user/names.c -lm

$(OUT)/tests/fuzz/fuzz_capture: tests/fuzz/fuzz_capture.c user/capture.c \
				user/capture.h bpf/ccld.h
	$(call msg,FUZZ-CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_capture.c user/capture.c -lz

# reader throughput (docs/formats.md): build/tests/bench/bench_capture
$(OUT)/tests/bench/bench_capture: tests/bench/bench_capture.c user/capture.c \
				  user/capture.h bpf/ccld.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -O2 -g $(WARN) -std=gnu11 -D_GNU_SOURCE -Ibpf -Iuser \
		-DCCLD_VERSION='"$(VERSION)"' -o $@ \
		tests/bench/bench_capture.c user/capture.c -lz

fuzz: $(FUZZ_BINS)
tests-build: $(FUZZ_BINS)
