#!/usr/bin/env bash
# Regression seeds of the random jobs (docs/simjob.md, "Random jobs"): each
# seed below, drawn by ccld-simjob --random and traced live by
# tests/scenarios/fuzz.sh, must come out right (the fault's class, exactly
# its culprit, a hang within the stall threshold + 2 s).  A seed that led to
# a fix stays here; make scenario-fuzz runs many more.
#   35  plain, 8 ranks, TP 1, PP 2, DP 4: rank 4's GPU 4.4x slower; each
#       DP comm's reduce-scatter and all-gather back to back: the step
#       sample counted the all-gathers' random last arrivers and named no
#       one; weighed by their lead it named rank 4, but as a cascade of its
#       own pipeline send/recv (fixes: arrivals weighed by lead; a rank that
#       entered its pipeline op after its peer made it late itself)
#   3   exit mid run (4 ranks), 27 H2 redop attached mid run (pytorch,
#       8 ranks), 45 GPU stall (moe, 4 ranks): one of each class right
#       at fuzz's start, kept as a guard
exec "$(dirname "$0")/../scenarios/fuzz.sh" 35 3 27 45
