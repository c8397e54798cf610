/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Detection's own: an_detect.c (thresholds, the verdict stream) and
 * an_cascade.c (root vs cascade) share the stalled comms of one evaluation.
 */
#ifndef CCLD_AN_DETECT_INT_H
#define CCLD_AN_DETECT_INT_H

#include "an_int.h"

/* a comm in or near an incident, in one evaluation */
struct node {
	struct an_comm *c;
	double quiet;		/* seconds since the comm's last progress */
	uint32_t qhost;		/* on this host's clock */
	uint64_t qlast;
	bool cand;		/* past its threshold */
	bool closed;		/* its open ranks' GPUs all execute it */
	bool held;		/* edge from the GPU hold graph */
	bool held_loose;	/* ... there its culprits are named too, its located rank's GPU not placed here */
	bool gpu_stuck;		/* H1 held where the culprit's own GPU is the located cause */
	bool lost;		/* waits: a rank's records were lost (an_lost.c) */
	bool gpu_lost;		/* as a root it would: its GPU's holder may be lost */
	bool gpu_maybe_held;	/* a GPU not ready that may be held in another node */
	int edge;		/* the node that blocks this one, -1 */
};

/*
 * Relates the NN stalled comms: each node's edge is the node that blocks it
 * (-1: a root).  The network culprit across comms may locate some of them
 * again first (an_locate_net).  CCLD_AN_DEBUG: the picture, on stderr.
 */
void cascade_link(struct an *an, struct node *nodes, int nn);

#endif
