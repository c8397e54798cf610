# GPU-less NCCL / CUDA runtime stand-ins, the ccld-simjob workload and their
# tests (docs/standin.md, docs/simjob.md).  Included by the top Makefile.
#
#   build/sim/lib/libnccl.so.2 (+ libnccl.so)      NCCL 2.28 ABI, DWARF
#   build/sim/lib/libcudart.so.13 (+ libcudart.so) CUDA 13 runtime subset
#   build/bin/ccld-simjob                          launcher (no NCCL linked)
#   build/sim/bin/ccld-simjob-rank                 one rank of the workload

SIM_DIR    := $(OUT)/sim
SIM_LIBDIR := $(SIM_DIR)/lib
SIM_OBJDIR := $(SIM_DIR)/obj
SIM_CFLAGS := -g -O2 -fPIC -fvisibility=hidden $(WARN) -std=gnu11 -D_GNU_SOURCE -MMD -MP \
	      -Iinclude -Itests/sim
SIM_NCCL_SRCS := api.c shm.c proxy.c intra.c kernel.c reduce.c fault.c calllog.c socket.c ras.c
SIM_NCCL_OBJS := $(SIM_NCCL_SRCS:%.c=$(SIM_OBJDIR)/%.o)
SIM_NCCL   := $(SIM_LIBDIR)/libnccl.so.2
SIM_CUDART := $(SIM_LIBDIR)/libcudart.so.13
SIMJOB     := $(OUT)/bin/ccld-simjob
SIMJOB_RANK:= $(SIM_DIR)/bin/ccld-simjob-rank

.PHONY: sim
sim: $(SIM_NCCL) $(SIM_LIBDIR)/libnccl.so $(SIM_CUDART) $(SIM_LIBDIR)/libcudart.so \
     $(SIMJOB) $(SIMJOB_RANK)

$(SIM_OBJDIR)/%.o: tests/sim/%.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(SIM_CFLAGS) -c $< -o $@

$(SIM_CUDART): $(SIM_OBJDIR)/cudart.o
	$(call msg,LINK,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared -g -Wl,-soname,libcudart.so.13 -o $@ $^ -lpthread

$(SIM_LIBDIR)/libcudart.so: | $(SIM_CUDART)
	$(Q)ln -sf libcudart.so.13 $@

$(SIM_NCCL): $(SIM_NCCL_OBJS) $(SIM_CUDART)
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -g -Wl,-soname,libnccl.so.2 -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(SIM_NCCL_OBJS) -L$(SIM_LIBDIR) -l:libcudart.so.13 -lpthread -lm

$(SIM_LIBDIR)/libnccl.so: | $(SIM_NCCL)
	$(Q)ln -sf libnccl.so.2 $@

$(SIMJOB): $(SIM_OBJDIR)/simjob.o $(SIM_OBJDIR)/simjob_random.o | $(OUT)/bin
	$(call msg,LINK,$@)
	$(Q)$(CC) -g -o $@ $^

$(SIMJOB_RANK): $(SIM_OBJDIR)/simjob_rank.o $(SIM_NCCL) $(SIM_CUDART)
	$(call msg,LINK,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -g -o $@ $< -L$(SIM_LIBDIR) -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,-rpath,'$$ORIGIN/../lib' -lm
