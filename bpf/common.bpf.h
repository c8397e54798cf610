/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every ccld BPF object shares: the main ring buffer, drop counters,
 * the PID filter and the per-thread entry state.  Each object declares them
 * from here; the loader makes them one set of maps (bpf_map__reuse_fd), so
 * all records reach userspace through one ring buffer.
 */
#ifndef CCLD_COMMON_BPF_H
#define CCLD_COMMON_BPF_H

/* set by the loader before load: trace only the PIDs in pid_filter */
const volatile bool filter_pids = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/*
 * [CCLD_DROP_MAIN] main ring reserve failures, [CCLD_DROP_RARE] rare ring
 * reserve failures, [CCLD_DROP_STEPS_SHED] step records shed (ring_crowded)
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* the same per process (struct ccld_pid_drops): whose records were lost */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CCLD_MAX_DROP_PIDS);
	__type(key, __u32);
	__type(value, struct ccld_pid_drops);
} pid_drops SEC(".maps");

/* tgids to trace when filter_pids is set */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/* entry state for the uretprobes, per thread and function (ccld.h) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ccld_entry_key);
	__type(value, struct ccld_entry_val);
} entries SEC(".maps");

static __always_inline bool traced(void)
{
	__u32 tgid;

	if (!filter_pids)
		return true;
	tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&pid_filter, &tgid) != NULL;
}

/*
 * A record of process PID found ring WHICH (0 main, 1 rare) full.  The
 * per-CPU total always counts it; the per-process count does unless the
 * map is full (CCLD_MAX_DROP_PIDS processes with losses, the loader
 * deletes those that exit).
 */
static __always_inline void count_drop(__u32 which, __u32 pid)
{
	struct ccld_pid_drops *d, zero = {};
	__u64 *cnt = bpf_map_lookup_elem(&drops, &which);

	if (cnt)
		(*cnt)++;
	d = bpf_map_lookup_elem(&pid_drops, &pid);
	if (!d) {
		bpf_map_update_elem(&pid_drops, &pid, &zero, BPF_NOEXIST);
		d = bpf_map_lookup_elem(&pid_drops, &pid);
		if (!d)
			return;
	}
	/* two constant indexes: the verifier loses a spilled index's bounds */
	if (which)
		__sync_fetch_and_add(&d->drops[1], 1);
	else
		__sync_fetch_and_add(&d->drops[0], 1);
	d->last_ns = bpf_ktime_get_ns();
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

#endif
