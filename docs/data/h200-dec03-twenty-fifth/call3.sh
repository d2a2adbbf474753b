#!/usr/bin/env bash
# Twenty-fifth lease, call 3 (built, not run: the lease's device time ran
# out): the token with gate_up as an even split at the share of its row-
# group winner, the probe's case, which call 2's refinement did not try.
# `even` is 3c13a56, the tree with probe-even-split.patch (build it with
# `REV=3c13a56 scripts/ab-kernels.sh build even`); .gpulead/db/q4_0_b.db.gz
# is call 2's refined q4_0 cache (call2-tune_q4_0.txt; kept outside git).
# About 120 s.
set -u
mkdir -p $OUT/r; R=$OUT/r
export XDG_CACHE_HOME=/tmp/xdg
gunzip -kf .gpulead/even/autotune.gz
gunzip -c .gpulead/db/q4_0_b.db.gz > /tmp/q.db
T=q4_0:28672x4096:r1f0u2s3w16b264l2a1,q4_0:28672x4096:r2f0u2s3w16b264l2a1,q4_0:28672x4096:r4f0u2s3w8b264l2a1
timeout 300 .gpulead/even/autotune bench --chain --compile --refine --try $T --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/try.txt 2>&1; echo "try exit $?"
tail -25 $R/try.txt
tar -czf $OUT/x.tgz -C $OUT r
