#!/usr/bin/env bash
# Twenty-fourth lease, call 1: merged bulk copies (an s=3 item that covers
# whole rows goes as one copy of its r rows) and the attribution's reads
# writing their y. A cold q4_0 tune by each build (base: HEAD with the
# attribution fix; merge: also the merged copies), the token of each
# build's own winners attributed, A B B A; the GPU tests; an isolated A/B.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in base merge; do gunzip -kf .gpulead/$b/autotune.gz; done
gunzip -c .gpulead/db/q4_0.db.gz > /tmp/base.db
timeout 150 .gpulead/merge/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --cache /tmp/merge.db > $R/tune_merge.txt 2>&1; el tune $?
gzip -c /tmp/merge.db > $R/merge.db.gz
k=0
for b in base merge merge base; do
  k=$((k+1))
  timeout 100 .gpulead/$b/autotune bench --chain --compile --attribute --cache /tmp/$b.db --model llama-3-8b --formats q4_0 > $R/chain_${k}_$b.txt 2>&1; el "chain $k $b" $?
  grep -E "tuned, PDL|reads, PDL, x  " $R/chain_${k}_$b.txt | head -2; grep -E "every shape" $R/chain_${k}_$b.txt
done
(cd variants && GEMV_TEST_SPACE=sample timeout 130 ../.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K|bf16)$|TestLateXOnGPU/q4_0$' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|FAIL|PASS)|--- FAIL" $R/vtest.txt | tail -8
(cd tuner && timeout 90 ../.gpubin/tuner.test -test.run 'TestChainOnGPU$' -test.v) > $R/ttest.txt 2>&1; el ttest $?
grep -E "^(--- |ok|PASS|FAIL)" $R/ttest.txt | head
OUT=$R timeout $(( 585 - ($(date +%s) - t0) )) scripts/ab-kernels.sh run q4_0 4096x4096,28672x4096 r2f0u4s3w16l2a1,r4f0u4s3w8g7l2a1,r4f0u2s3w8g7l2a1,r2f0u2s3w16l2a1 base merge; el ab $?
tar -czf $OUT/x.tgz -C $OUT r
