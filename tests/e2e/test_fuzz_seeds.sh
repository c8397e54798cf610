#!/usr/bin/env bash
# Regression seeds of the random jobs (docs/simjob.md, "Random jobs"): each
# seed below, drawn by ccld-simjob --random and traced live by
# tests/scenarios/fuzz.sh, must come out right (the fault's class, exactly
# its culprit, a hang within the stall threshold + 2 s).  A seed that led to
# a fix stays here (SEED:undetermined: a verdict listing the culprit among
# others passes too); make scenario-fuzz runs many more.
#   35  plain, 8 ranks, TP 1, PP 2, DP 4: rank 4's GPU 4.4x slower; each
#       DP comm's reduce-scatter and all-gather back to back: the step
#       sample counted the all-gathers' random last arrivers and named no
#       one; weighed by their lead it named rank 4, but as a cascade of its
#       own pipeline send/recv (fixes: arrivals weighed by lead; a rank that
#       entered its pipeline op after its peer made it late itself)
#   5   pytorch, 8 ranks, TP 1, PP 4, DP 2: rank 3 skips its DP
#       reduce-scatter and all-gather; named: rank 0 ("GPU not ready" in
#       the world all-reduce queued behind them), rank 3 only as a cascade
#   30  moe, 4 ranks: rank 1 skips its dense all-reduce; its next one pairs
#       with its peer's, so that round looked entered by both: H3 "GPU not
#       ready" naming rank 1 (its GPU is in the world's op), not the skip
#   19  pytorch, 16 ranks, TP 4, DP 4: rank 0 skips the world's loss
#       all-reduce and runs on into its next TP and DP ops: the three ranks
#       that never entered them were named
#       (fix for 5, 30, 19: the counts of a comm's ops before a round of
#       the world, an_locate_spmd.c)
#   45  moe, 4 ranks, PP 2 x DP 2, rank 2's GPU stalls: a false S2 1.7 s
#       before the stall from the comparable-group detector, the two DP
#       comms' medians of one all-reduce done twice a step in opposite
#       phase (11.2 against 3.0 ms; fix: the fast rounds must be deviant
#       too, an_slow_group.c)
#   24  moe, 4 ranks on hosts of 2, attached mid run: rank 3's network
#       stalls; its pipeline send to rank 1 left and never arrived, while
#       ranks 0 and 2 made nothing of their sends to the other host (their
#       GPUs wait for their host peers): they were named, as the ends of
#       the most stuck flows (fix: where data left and never arrived, only
#       the ends of such flows are candidates, an_locate_h3.c)
#   12  plain, 4 ranks, a 4-stage pipeline (TP 1, DP 1): rank 2's GPU
#       3.3x slower; every rank reaches the world all-reduce together (the
#       time goes in the pipeline send/recv before it, where rank 2 enters
#       its side 32 ms after its neighbours): silent (fix: the p2p
#       straggler, an_slow_nohist.c slow_p2p_straggler)
#   8   the same job as 12 (rank 2's GPU 3.6x slower), attached after the
#       fault: no baseline of the healthy job, and each side's p2p ops
#       counted from the attach, so they were never paired: silent (fix:
#       the counts lined up by the world all-reduces both ranks entered,
#       an_p2p_align.c; the survey asks the p2p straggler rule)
#   234 plain, 4 ranks, PP 2 x DP 2 on hosts of 2: rank 2's link 7.6x
#       slower, attached after the fault: the world comm's survey saw
#       rank 2's send steps at 4x the others' but looked only for a rank
#       arriving last: silent (fix: the survey asks for a slow link first,
#       an_slow_survey.c slow_survey_link)
#   16  plain, 8 ranks, TP 2 x DP 4: rank 5's link 6.1x slower, attached
#       late: rank 5, late in its DP comm straight from its long TP ops
#       (nobody waited there), was named S1 before the TP comm's
#       comparable-group sample named its link, in some runs (fix: a rank
#       whose holding comm's ops took the gap's half longer than the
#       others' holders' is a cascade, an_slow_nohist.c held_ops_longer)
#   299 pytorch, 8 ranks, TP 4 on hosts of 4, DP 2: rank 3's GPU stops;
#       the intra-node TP comm lists ranks 0-3, each of their DP comms
#       reads "GPU not ready" for its TP rank, and a cycle through one of
#       them named rank 2 as a definite root (fix: a comm with no located
#       cause is not the cascade of a GPU not ready that may be held in
#       it, an_cascade.c): undetermined (ranks 0-3) is all it can say.
#       Another run's path: the world comm, every TP rank waiting in it,
#       named ranks 1, 3 and 7 "GPU not ready", the DP comm {1,5} rank 1,
#       and a cycle's cut made {1,5} a definite root (fix: GPUs not ready
#       whose claims conflict, each GPU maybe held in the same unlocated
#       comm, point there and come last in a cut, an_cascade.c)
#   184 moe, 4 ranks, PP 2 x DP 2, attached after the fault: rank 1 left
#       out a step's loss all-reduce and its CPU ran on, so it launched
#       the round the others wait in too (queued behind a DP p2p op that
#       waits for rank 0's GPU, stuck in that round): H3 named rank 0
#       (fix: a rank one call of a comm short while its other comms'
#       counts match its peers' is H1, an_locate_coll.c loc_skipped_call)
#   185 moe, 8 ranks, PP 2 x DP 4 on hosts of 4, attached after the
#       fault: rank 3 left its pipeline send to rank 7 out; rank 7's GPU
#       waits in that receive while rank 3's data of the loss all-reduce
#       after it came, but the intra-node DP comms left both GPUs'
#       places unknown: H3 listed ranks 4-7 (fix: the crossing placed by
#       the flows alone, an_locate_h3.c p2p_crossing_unplaced)
#   61  pytorch, 8 ranks, TP 4 x PP 2 on hosts of 4, attached mid run:
#       rank 0's compute 4.9x slower; its TP group waits for it and
#       reaches the world op last together, but the world comm of 8 on
#       this VM is sampled 4 processes at a time, and each part saw its
#       ranks within jitter of each other: silent (fix: the parts' mean
#       waits together name the block 0-3, an_slow_block.c
#       slow_parts_block): undetermined is all the hooks can say
#   118 moe, 8 ranks, PP 4 x DP 2 on hosts of 4, attached mid run: rank
#       5's link 6.1x slower; only the world comm's network part rose, and
#       its sample was refused (too many processes on the VM): silent;
#       sampled by parts on arrivals alone, S1 naming rank 4 or ranks 2-3
#       (fix: the rise's parts judged as a whole comm is, a slow link
#       first, a block only across the parts, an_slow_nohist.c)
#   180 moe, 8 ranks, PP 4 x DP 2: rank 4's compute slower; the world
#       comm of 8, sampled 4 processes at a time, saw ranks 2-3 (the stage
#       before rank 4's, waiting for its gradients) reach its op last
#       together in part 1 and named them, while they themselves waited
#       8 ms in the op for ranks outside the part (fix: a part's block
#       waits under a quarter of the extra, and under a quarter of what
#       the part's other ranks wait, an_slow_block.c)
# Seed 27 (H2 redop attached mid run, a guard with no fix of its own) left
# for make scenario-fuzz, and seed 46 (moe, 4 ranks, rank 3's compute 4.1x
# slower: the rise's sample ended before its hooks were in; unit cases
# test_an_slow sample_hooks_late_onset/_rise) is there too: make test's
# time (about 20 minutes) has no room for more.
# CCLD_TEST_NAME: the scenarios are this test's (tests/quarantine.txt
# names them test_fuzz_seeds:seed-N), not fuzz.sh's
#   1340 plain, 8 ranks, TP 2 x PP 2 x DP 2, DDP's buffer broadcast each
#       step: rank 5 leaves the broadcast out and calls its reduce-scatter
#       in the broadcast's round of its 2-rank DP comm: an H2 of two op
#       types naming the other rank (the seen counts took the
#       reduce-scatter for the norm); fix: an op whose successor in the
#       comm's order was called in its round was left out, H1
#       (an_locate_h2.c)
#   1126 pytorch, 4 ranks, TP 2 x DP 2, DDP's broadcast, attached mid
#       run: rank 3 skips the world's loss all-reduce and runs on into its
#       next TP and DP ops; the pairs of each role count their own ops a
#       step (TP two, DP more), no reference count came and a pair has no
#       majority: the DP comm's H1 named rank 1, held by its GPU (fix: the
#       reference is the comms of C's role, an_locate_spmd.c)
#   1148 plain, a 4-stage pipeline, attached after rank 0 stopped in a
#       checkpoint write: beside the right H1, a second root, rank 1's
#       receive from rank 0 starving, naming rank 1 (fix: a receive whose
#       unseen sender is an H1's culprit stopped on its own is that H1's
#       cascade, an_cascade.c)
#   1336 pytorch, a 4-stage pipeline, attached 1.5 s after rank 0's GPU
#       stopped: its proxy held its pipeline send to rank 1 and the loss
#       all-reduce, nothing produced of either; placed in the all-reduce
#       by the lower op id (collectives and p2p ops are two sequences), it
#       "did not send" to rank 1, whose GPU waits in the receive: H1 (fix:
#       such a GPU is not placed, and the pair whose other end waits in it
#       counts, an_locate_gpu.c loc_mem_both_sequences, an_locate_h3.c)
# Seed 1183 (plain, 4 ranks, DP 4 beside the world: a skipped loss
# all-reduce, the DP comm's H1 named the three ranks that waited; fix: a
# comm of C's size holding the same processes is counted against,
# an_locate_spmd.c) is left for make scenario-fuzz, its unit case
# test_an_spmd ran_ahead_same_ranks here: no room in make test's time.
# Seed 1263 (moe, 8 ranks, rank 1 blocked in a checkpoint write after its
# step's cudaEventSynchronize returned: the stack scan found a stale
# return address into it and the H1 came out as H3 "its CPU waits for its
# GPU"; fix: the scan's answer checked against the unwound frames,
# user/probe/cudawait.c cudawait_confirm) likewise: its unit case is
# test_cudawait's planted stale return address.
# Seed 424 (moe, 8 ranks, a pipeline stage left one step's send out, its
# next step's send paired with the peer's earlier receive: three DP comms
# were H3 roots and the skip a cascade; fix: a peer that entered the
# comm's next round went past its side, an_locate_p2p.c
# unmatched_went_past) likewise: its unit case is test_an_spmd
# skipped_pipeline_send.
# Seeds 485 (moe, 8 ranks, a GPU 3x slower, attached mid run: the
# comparable group's sample weighed the straggler's lead against a median
# the run-ahead's two modes inflated; unit case test_an_slow
# group_fast_mode_extra), 577 (pytorch, 16 ranks, a skipped loss
# all-reduce: a p2p H1 read from the skipper's shifted rounds named its
# peer first; test_an_spmd ran_ahead_past_p2p) and 549 (moe, 4 ranks, a
# DP all-reduce left out, attached late: a pair's two counts; test_an_attach
# skip_in_pair_from_counts) likewise.
# Seed 702 (moe, 8 ranks, a GPU stalled, attached late: the GPUs that had
# sent their part of the expert all-to-all were not placed in it, and the
# world comm behind it named four ranks; test_an_attach
# gpu_stall_behind_exchange) and 808 (moe, 8 ranks, a network stalled:
# the sender's next send read as the lost receive's other end;
# test_an_cascade p2p_lost_next_send) likewise.
# Seeds 724 and 855 (pytorch, 16 and 8 ranks, TP 4 on hosts of 4: a rank
# computing 5-6x slower; each DP comm's sample found its own TP rank's GPU
# last, and the first verdict named a TP peer of the straggler; now the
# TP group, undetermined: no record shows which GPU the intra-node TP op
# waited for; test_an_chain unseen_intranode_wait) likewise.
# Seeds 888 and 894 (pytorch and plain, 16 ranks, attached late: a rank
# left a step's world loss all-reduce out and ran into the next step's DP
# or TP ops, where its peers, waiting for their GPUs at the step's host
# sync, "never entered": they were named H1; test_an_attach
# ran_past_alone) likewise.  Seed 878 (moe, 8 ranks, PP 2 x DP 4 on hosts
# of 4, a pipeline send left out, traced from mid run: the crossing of the
# two streams' orders was read from memory records only; test_an_attach
# send_never_posted NS_SKIP_LIVE) likewise.
CCLD_TEST_NAME=test_fuzz_seeds exec "$(dirname "$0")/../scenarios/fuzz.sh" 35 5 30 19 45 24 12 8 234 16 184 185 299:undetermined 61:undetermined 118 180 1340 1126 1148 1336
