#!/usr/bin/env bash
# Twenty-fourth lease, call 3: (1) do the reads lose what the GEMVs lose
# when they run on 128 SMs, as the GEMVs' grids do (28672/4096-row shapes
# split in 128 or 256 blocks)? `reads, PDL, x` with 132 (as built), 128 and
# 120 blocks, A B C C B A, on call 2's refined q4_0 cache
# (probe-read-blocks.patch). (2) a cold refined tune of q4_K and affine4 by
# HEAD with the attribution fix, their tokens attributed.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/base/autotune.gz .gpulead/rd/autotune.gz
gunzip -c .gpulead/db/q4_0_refined.db.gz > /tmp/q4.db
k=0
for n in 132 128 120 120 128 132; do
  k=$((k+1))
  GEMV_PROBE_READ_BLOCKS=$n timeout 60 .gpulead/rd/autotune bench --chain --compile --cache /tmp/q4.db --model llama-3-8b --formats q4_0 > $R/rd_${k}_$n.txt 2>&1; el "rd $k $n" $?
  grep -E "tuned, PDL  |reads" $R/rd_${k}_$n.txt | awk -v n=$n '{print n, $0}'
done
timeout 300 .gpulead/base/autotune --arch sm_90 --model llama-3-8b --formats q4_K,affine4 --refine --cache /tmp/k.db > $R/tune.txt 2>&1; el tune $?
grep -E "refine" $R/tune.txt
gzip -c /tmp/k.db > $R/k.db.gz
for k in 1 2; do
  timeout $(( 585 - ($(date +%s) - t0) )) .gpulead/base/autotune bench --chain --compile --attribute --cache /tmp/k.db --model llama-3-8b --formats q4_K,affine4 > $R/chain_$k.txt 2>&1; el "chain $k" $?
  grep -E "tuned, PDL |reads, PDL, x  |every shape" $R/chain_$k.txt
done
tar -czf $OUT/x.tgz -C $OUT r
