/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The analyzer's inputs as compact records (docs/fleet.md section 6): what a
 * node agent sends to the fleet analyzer instead of raw events.  The node
 * runs the state machines (identity, sequence numbers, tier B binding,
 * proxy mapping); each record is one call into the analyzer (an_rank,
 * an_op_enter, ..., an_clock) for one comm rank of that node.  The live
 * pipeline feeds its own analyzer through the same records, so local and
 * fleet analysis see the same inputs.
 *
 * Layout: little-endian, packed by hand (no struct padding on the wire):
 * u8 version (AN_WIRE_VERSION), u8 type, then the type's fields.  The host
 * is not in the record: the receiver knows which node sent it.
 */
#ifndef CCLD_AN_WIRE_H
#define CCLD_AN_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "analyzer.h"

/*
 * Version 2 added AW_LAUNCHED, AW_THREAD and the op arguments of proxy
 * subs; version 3 a flags byte after an op (1: seq counted from the
 * attach) and AW_OP_DONE; version 4 AW_LAUNCHED's flags 4 (hosts known)
 * and 8 (one host); version 5 AW_LOST; version 6 AW_THREAD's fd path and
 * AW_LABEL kinds 4 and 5 (the launcher's global and local rank); version 7
 * AW_THREAD's CUDA synchronize (u8 function, u64 entry); version 8 a u8
 * after it (1: found on the thread's stack, the entry is a bound); version 9
 * AW_NCCL_WARN, AW_SETUP and AW_LABEL kinds 6 to 8; version 10 AW_RANK's
 * split color (i32, -1: none) and comm name (text) after the parent, and
 * AW_SETUP's comm name (text) at its end, and AW_ENDPOINT; version 11
 * AW_SETUP's kind 3 (split) and its comm (u64) after the name; version 12
 * AW_SCHED; version 13 AW_SETUP's returned byte bit 2 (entered before the
 * record: found inside its init in memory); version 14 AW_THREAD's native
 * stack (text) at its end.  A decoder reads every older version (an agent not upgraded yet), an older
 * one refuses a newer record.
 */
#define AN_WIRE_VERSION		14
#define AN_OPF_SEQ_FROM_ATTACH	1	/* an op's flags (version 3) */
#define AN_WIRE_MAX_SUBS	256	/* proxy subs in one snapshot record */
#define AN_WIRE_MAX		(16 + 40 + 2 + AN_WIRE_MAX_SUBS * 84)

enum an_wire_type {
	AW_CLOCK = 1,		/* an_clock + the host's realtime offset */
	AW_RANK,		/* an_rank */
	AW_RANK_GONE,		/* an_rank_gone */
	AW_ENTER,		/* an_op_enter */
	AW_RETURN,		/* an_op_return */
	AW_COMPLETE_UPTO,	/* an_complete_upto */
	AW_PROGRESS,		/* an_progress */
	AW_SNAPSHOT,		/* an_snapshot */
	AW_PROC,		/* an_proc_state */
	AW_LABEL,		/* an_proc_label */
	AW_XID,			/* an_gpu_error */
	AW_TCP,			/* an_tcp_event */
	AW_RDMA,		/* an_nic_error */
	AW_LAUNCHED,		/* an_launched (version 2) */
	AW_THREAD,		/* an_thread_state (version 2) */
	AW_OP_DONE,		/* an_op_complete (version 3): a p2p op's GPU end */
	AW_LOST,		/* an_records_lost (version 5) */
	AW_NCCL_WARN,		/* an_nccl_warning (version 9) */
	AW_SETUP,		/* an_setup_call (version 9) */
	AW_ENDPOINT,		/* an_endpoint (version 10) */
	AW_SCHED,		/* an_sched (version 12) */
	AW_TYPE_MAX,
};

/* One decoded record; k.host is set by the receiver. */
struct an_wire {
	enum an_wire_type type;
	uint64_t t_ns;
	struct an_key k;	/* rank records; .pid alone for AW_PROC */
	uint64_t parent;	/* AW_RANK */
	int32_t color;		/* AW_RANK (version 10): split color where parent, -1 none */
	char comm_name[AN_LABEL_MAX];	/* AW_RANK (version 10): "" none */
	int64_t realtime_offset_ns;	/* AW_CLOCK */
	struct an_op op;	/* AW_ENTER, AW_RETURN, AW_OP_DONE (op.k == k) */
	int64_t ret;		/* AW_RETURN */
	int64_t upto;		/* AW_COMPLETE_UPTO */
	enum an_proc_state proc_state;	/* AW_PROC */
	int32_t exit_status;
	enum an_label label_kind;	/* AW_LABEL (k.pid) */
	char label[AN_LABEL_MAX];	/* AW_LABEL, AW_XID text, AW_TCP remote: NUL-terminated */
	uint64_t bus_id;		/* AW_XID */
	uint32_t xid;
	struct an_nic_event nic;	/* AW_RDMA */
	uint32_t peer_pid;		/* AW_TCP (k.pid: the socket's process) */
	enum an_tcp_kind tcp_kind;
	uint8_t tcp_old, tcp_new;	/* AW_TCP: TCP states (AN_TCP_STATE) */
	struct an_launch launch;	/* AW_LAUNCHED */
	struct an_thread thread;	/* AW_THREAD (k.pid: the process) */
	/*
	 * AW_LOST (k.pid): its records lost so far; k.pid 0: the host's
	 * step records shed so far (an_steps_shed)
	 */
	uint64_t lost;
	struct an_setup setup;		/* AW_SETUP (setup.pid) */
	uint16_t port;			/* AW_ENDPOINT (k.pid; label: the address) */
	bool gone;			/* AW_ENDPOINT: the process has none there any more */
	struct an_sched sched;		/* AW_SCHED (k.pid: the process) */
	uint32_t warn_line;		/* AW_NCCL_WARN (k.pid; label: the file) */
	char warn_msg[AN_WARN_MAX];
	uint32_t nsubs;		/* AW_PROGRESS: 1; AW_SNAPSHOT: 0..MAX */
	struct an_progress subs[AN_WIRE_MAX_SUBS];
};

/* Encodes W into BUF (at least AN_WIRE_MAX bytes): the length, or -EINVAL. */
int an_wire_encode(const struct an_wire *w, uint8_t *buf, size_t len);

/*
 * Decodes LEN bytes into W.  Returns 0, or -EINVAL with a reason in ERR for
 * anything malformed (bad version or type, short or long record, a value
 * out of range).  Never reads past LEN.
 */
int an_wire_decode(const uint8_t *buf, size_t len, struct an_wire *w,
		   char *err, size_t errlen);

/* Feeds the record to AN as coming from HOST (an_host id). */
void an_wire_apply(struct an *an, uint32_t host, const struct an_wire *w);

#endif
