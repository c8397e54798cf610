// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tier D: the RDMA verbs control path.  The data path bypasses
 * the kernel; its failures still cross ib_core / ib_uverbs:
 *
 *   ib_modify_qp_with_udata     a process moves one of its QPs to ERR/SQE
 *                               (process context: the caller is the owner)
 *   ib_dispatch_event           device / port async events: port active /
 *                               error, device fatal, ... (IRQ or workqueue;
 *                               recorded with pid 0, the loader attributes
 *                               them to the processes using the device)
 *   ib_uverbs_qp_event_handler  async events of a user QP (fatal, access
 *                               error, ...): owner from qp->res.task
 *   ib_uverbs_cq_event_handler  async CQ errors: owner from cq->res.task
 *
 * Each function has a kprobe and an fentry flavour; the loader enables
 * (bpf_program__set_autoload) the one that the kernel supports for the
 * functions that exist, nothing else.  There is no tracepoint for any of
 * these in 5.15-6.x (rdma_core's trace events cover kernel CQ polling and
 * MR allocation only).  Our vmlinux.h has no RDMA types: the ___ccld
 * flavours below carry only the fields read, relocated by CO-RE against
 * the ib_core module's BTF.  5.15+: ib_event.element.port_num and
 * ib_qp.port are u32 there.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "ccld.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "common.bpf.h"

/* shared with nccl_api.bpf.c's rare ring (the loader reuses its fd) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} rare_events SEC(".maps");

/* include/rdma/ib_verbs.h, values stable since 2.6 */
#define IB_QP_STATE	1
#define IB_QP_CUR_STATE	(1 << 1)
#define IB_QP_PORT	(1 << 5)

enum ib_qp_state___ccld {
	IB_QPS_SQE___ccld = 5,
	IB_QPS_ERR___ccld = 6,
};

enum ib_event_type___ccld {
	IB_EVENT_CQ_ERR___ccld = 0,
};

struct ib_device___ccld {
	char name[64];			/* IB_DEVICE_NAME_MAX */
} __attribute__((preserve_access_index));

struct rdma_restrack_entry___ccld {
	struct task_struct *task;	/* owner, NULL for kernel objects */
} __attribute__((preserve_access_index));

struct ib_qp___ccld {
	struct ib_device___ccld *device;
	__u32 qp_num;
	__u32 port;
	struct rdma_restrack_entry___ccld res;
} __attribute__((preserve_access_index));

struct ib_cq___ccld {
	struct ib_device___ccld *device;
	struct rdma_restrack_entry___ccld res;
} __attribute__((preserve_access_index));

struct ib_qp_attr___ccld {
	enum ib_qp_state___ccld qp_state;
	enum ib_qp_state___ccld cur_qp_state;
	__u32 port_num;
} __attribute__((preserve_access_index));

struct ib_event___ccld {
	struct ib_device___ccld *device;
	union {
		struct ib_cq___ccld *cq;
		struct ib_qp___ccld *qp;
		__u32 port_num;
	} element;
	enum ib_event_type___ccld event;
} __attribute__((preserve_access_index));

static __always_inline bool pid_traced(__u32 tgid)
{
	return !filter_pids || bpf_map_lookup_elem(&pid_filter, &tgid);
}

/* the tgid of an object's owner (rdma_restrack_entry.task), 0 unknown */
static __always_inline __u32 owner_tgid(struct rdma_restrack_entry___ccld *res)
{
	struct task_struct *task;

	if (!bpf_core_field_exists(res->task))
		return 0;
	task = BPF_CORE_READ(res, task);
	return task ? BPF_CORE_READ(task, tgid) : 0;
}

static __always_inline struct ccld_event *
reserve(__u32 pid, __u8 source, struct ib_device___ccld *dev)
{
	struct ccld_event *e;

	e = bpf_ringbuf_reserve(&rare_events, sizeof(*e), 0);
	if (!e) {
		count_drop(1, pid);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = CCLD_EV_RDMA;
	e->version = CCLD_ABI_VERSION;
	e->pid = pid;
	e->tid = pid == bpf_get_current_pid_tgid() >> 32 ?
		 (__u32)bpf_get_current_pid_tgid() : pid;
	e->ts_ns = bpf_ktime_get_ns();
	e->id.rank = -1;
	e->id.nranks = -1;
	e->u.rdma.source = source;
	e->u.rdma.event = CCLD_RDMA_NONE;
	e->u.rdma.old_state = CCLD_RDMA_NONE;
	e->u.rdma.new_state = CCLD_RDMA_NONE;
	if (dev)
		bpf_probe_read_kernel_str(e->u.rdma.dev, sizeof(e->u.rdma.dev),
					  dev->name);
	return e;
}

static __always_inline int on_modify_qp(struct ib_qp___ccld *qp,
					struct ib_qp_attr___ccld *attr,
					int mask)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ccld_event *e;
	int state;

	if (!(mask & IB_QP_STATE) || !traced())
		return 0;
	state = BPF_CORE_READ(attr, qp_state);
	if (state != IB_QPS_ERR___ccld && state != IB_QPS_SQE___ccld)
		return 0;
	e = reserve(tgid, CCLD_RDMA_MODIFY_QP, BPF_CORE_READ(qp, device));
	if (!e)
		return 0;
	e->u.rdma.qp_num = BPF_CORE_READ(qp, qp_num);
	e->u.rdma.new_state = state;
	if (mask & IB_QP_CUR_STATE)
		e->u.rdma.old_state = BPF_CORE_READ(attr, cur_qp_state);
	if (mask & IB_QP_PORT)
		e->u.rdma.port = BPF_CORE_READ(attr, port_num);
	else if (bpf_core_field_exists(qp->port))
		e->u.rdma.port = BPF_CORE_READ(qp, port);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* port / device events: not a process's; the loader attributes them */
static __always_inline int on_dispatch(struct ib_event___ccld *ev)
{
	int type = BPF_CORE_READ(ev, event);
	struct ccld_event *e;

	e = reserve(0, CCLD_RDMA_DEV_EVENT, BPF_CORE_READ(ev, device));
	if (!e)
		return 0;
	e->u.rdma.event = type;
	/* IB_EVENT_PORT_ACTIVE .. GID_CHANGE except SRQ/QP ones carry a port */
	if (type >= 9 && type <= 18 && type != 14 && type != 15 && type != 16)
		e->u.rdma.port = BPF_CORE_READ(ev, element.port_num);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int on_qp_event(struct ib_event___ccld *ev)
{
	struct ib_qp___ccld *qp = BPF_CORE_READ(ev, element.qp);
	struct ccld_event *e;
	__u32 tgid;

	if (!qp)
		return 0;
	tgid = owner_tgid(&qp->res);
	if (!tgid || !pid_traced(tgid))
		return 0;
	e = reserve(tgid, CCLD_RDMA_QP_EVENT, BPF_CORE_READ(qp, device));
	if (!e)
		return 0;
	e->u.rdma.event = BPF_CORE_READ(ev, event);
	e->u.rdma.qp_num = BPF_CORE_READ(qp, qp_num);
	if (bpf_core_field_exists(qp->port))
		e->u.rdma.port = BPF_CORE_READ(qp, port);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

static __always_inline int on_cq_event(struct ib_event___ccld *ev)
{
	struct ib_cq___ccld *cq = BPF_CORE_READ(ev, element.cq);
	struct ccld_event *e;
	__u32 tgid;

	if (!cq)
		return 0;
	tgid = owner_tgid(&cq->res);
	if (!tgid || !pid_traced(tgid))
		return 0;
	e = reserve(tgid, CCLD_RDMA_CQ_EVENT, BPF_CORE_READ(cq, device));
	if (!e)
		return 0;
	e->u.rdma.event = BPF_CORE_READ(ev, event);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* kprobes (the loader sets none of these to autoload unless usable) */
SEC("kprobe/ib_modify_qp_with_udata")
int BPF_KPROBE(kp_modify_qp, struct ib_qp___ccld *qp,
	       struct ib_qp_attr___ccld *attr, int mask)
{
	return on_modify_qp(qp, attr, mask);
}

SEC("kprobe/ib_dispatch_event")
int BPF_KPROBE(kp_dispatch_event, struct ib_event___ccld *ev)
{
	return on_dispatch(ev);
}

SEC("kprobe/ib_uverbs_qp_event_handler")
int BPF_KPROBE(kp_qp_event, struct ib_event___ccld *ev)
{
	return on_qp_event(ev);
}

SEC("kprobe/ib_uverbs_cq_event_handler")
int BPF_KPROBE(kp_cq_event, struct ib_event___ccld *ev)
{
	return on_cq_event(ev);
}

/* fentry: the same functions, found in the modules' BTF */
SEC("fentry/ib_modify_qp_with_udata")
int BPF_PROG(fe_modify_qp, struct ib_qp___ccld *qp,
	     struct ib_qp_attr___ccld *attr, int mask)
{
	return on_modify_qp(qp, attr, mask);
}

SEC("fentry/ib_dispatch_event")
int BPF_PROG(fe_dispatch_event, struct ib_event___ccld *ev)
{
	return on_dispatch(ev);
}

SEC("fentry/ib_uverbs_qp_event_handler")
int BPF_PROG(fe_qp_event, struct ib_event___ccld *ev)
{
	return on_qp_event(ev);
}

SEC("fentry/ib_uverbs_cq_event_handler")
int BPF_PROG(fe_cq_event, struct ib_event___ccld *ev)
{
	return on_cq_event(ev);
}
