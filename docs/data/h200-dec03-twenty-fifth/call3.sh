#!/usr/bin/env bash
# Twenty-fifth lease, call 3 (built, not run: the lease's device time ran
# out). First the token with gate_up as an even split at the share of its
# row-group winner, the probe's case, which call 2's refinement did not
# try: `even` is 3c13a56, the tree with probe-even-split.patch
# (`REV=3c13a56 scripts/ab-kernels.sh build even`), and
# .gpulead/db/q4_0_b.db.gz call 2's refined q4_0 cache (kept outside
# git). Then the landed second refinement round: a cold `--refine` tune of
# q4_0 by `head` (fb713a2, `REV=fb713a2 scripts/ab-kernels.sh build head`)
# and its token attributed, twice. About 330 s.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
gunzip -kf .gpulead/even/autotune.gz .gpulead/head/autotune.gz
gunzip -c .gpulead/db/q4_0_b.db.gz > /tmp/q.db
T=q4_0:28672x4096:r1f0u2s3w16b264l2a1,q4_0:28672x4096:r2f0u2s3w16b264l2a1,q4_0:28672x4096:r4f0u2s3w8b264l2a1
timeout 200 .gpulead/even/autotune bench --chain --compile --refine --try $T --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/try.txt 2>&1; el try $?
tail -12 $R/try.txt
timeout 200 .gpulead/head/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/h.db > $R/tune_head.txt 2>&1; el "tune head" $?
grep -E "refine|chosen in the" $R/tune_head.txt | cut -c1-220
for k in 1 2; do
  timeout 80 .gpulead/head/autotune bench --chain --compile --attribute --cache /tmp/h.db --model llama-3-8b --formats q4_0 > $R/chain_${k}_head.txt 2>&1; el "chain $k" $?
  grep -E "tuned, PDL: |every shape" $R/chain_${k}_head.txt
done
tar -czf $OUT/x.tgz -C $OUT r
