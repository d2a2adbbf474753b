#!/usr/bin/env bash
# Twenty-fourth lease, call 2: merged bulk copies against HEAD's kernels
# (with the attribution fix) on refined tunes: a cold `autotune --refine`
# of q4_0 by each build, each build's token on its own cache attributed,
# A B B A; then merged variants put to the token's test on merge's cache.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in base merge; do gunzip -kf .gpulead/$b/autotune.gz; done
for b in base merge; do
  timeout 170 .gpulead/$b/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/$b.db > $R/tune_$b.txt 2>&1; el "tune $b" $?
  gzip -c /tmp/$b.db > $R/$b.db.gz
done
k=0
for b in base merge merge base; do
  k=$((k+1))
  timeout 90 .gpulead/$b/autotune bench --chain --compile --attribute --cache /tmp/$b.db --model llama-3-8b --formats q4_0 > $R/chain_${k}_$b.txt 2>&1; el "chain $k $b" $?
  grep -E "tuned, PDL|reads, PDL, x  " $R/chain_${k}_$b.txt | head -2; grep -E "every shape" $R/chain_${k}_$b.txt
done
T=q4_0:28672x4096:r4f0u4s3w8g7l2a1,q4_0:28672x4096:r4f0u2s3w8g7l2a1,q4_0:28672x4096:r2f0u4s3w16g7l2a1,q4_0:4096x4096:r2f0u4s3w16l2a1,q4_0:4096x4096:r4f0u4s3w8l2a1,q4_0:6144x4096:r2f0u4s3w16l2a1,q4_0:6144x4096:r4f0u4s3w8g2l2a1
timeout $(( 585 - ($(date +%s) - t0) )) .gpulead/merge/autotune bench --chain --compile --refine --try $T --cache /tmp/merge.db --model llama-3-8b --formats q4_0 > $R/try_merge.txt 2>&1; el try $?
tail -25 $R/try_merge.txt
tar -czf $OUT/x.tgz -C $OUT r
