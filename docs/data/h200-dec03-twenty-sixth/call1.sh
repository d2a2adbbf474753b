#!/usr/bin/env bash
# Twenty-sixth lease, call 1: the twenty-fifth lease's call 3 (the even
# split at gate_up's share; a cold q4_0 --refine tune by fb713a2 with its
# second round, its token attributed twice), then q4_K the same way.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 585 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/even/autotune.gz .gpulead/head/autotune.gz
gunzip -c .gpulead/db/q4_0_b.db.gz > /tmp/q.db
T=q4_0:28672x4096:r1f0u2s3w16b264l2a1,q4_0:28672x4096:r2f0u2s3w16b264l2a1,q4_0:28672x4096:r4f0u2s3w8b264l2a1
timeout 160 .gpulead/even/autotune bench --chain --compile --refine --try $T --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/try.txt 2>&1; el try $?
tail -12 $R/try.txt | cut -c1-200
timeout 170 .gpulead/head/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/h.db > $R/tune_head.txt 2>&1; el "tune head" $?
gzip -c /tmp/h.db > $R/h.db.gz
grep -E "refine|round|chosen in the" $R/tune_head.txt | cut -c1-220
for k in 1 2; do
  timeout 70 .gpulead/head/autotune bench --chain --compile --attribute --cache /tmp/h.db --model llama-3-8b --formats q4_0 > $R/chain_${k}_head.txt 2>&1; el "chain $k" $?
  grep -E "tuned, PDL: |every shape" $R/chain_${k}_head.txt
done
if [ $(left) -gt 200 ]; then
  timeout $(( $(left) - 60 )) .gpulead/head/autotune --arch sm_90 --model llama-3-8b --formats q4_K --refine --cache /tmp/k.db > $R/tune_k.txt 2>&1; el "tune k" $?
  gzip -c /tmp/k.db > $R/k.db.gz
  grep -E "refine|round|chosen in the" $R/tune_k.txt | cut -c1-220
  timeout $(( $(left) - 5 )) .gpulead/head/autotune bench --chain --compile --attribute --cache /tmp/k.db --model llama-3-8b --formats q4_K > $R/chain_k.txt 2>&1; el "chain k" $?
  grep -E "tuned, PDL: |every shape" $R/chain_k.txt
fi
tar -czf $OUT/x.tgz -C $OUT r
