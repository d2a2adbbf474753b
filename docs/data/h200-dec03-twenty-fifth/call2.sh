#!/usr/bin/env bash
# Twenty-fifth lease, call 1: knob b (an even split of the rows over whole
# waves of the SMs, s=3). The variants' GPU tests with the b variants in the
# sample (-short), then a cold refined tune of q4_0 by this tree and its
# token attributed, twice; HEAD's build (88064c9, `base`) on the twenty-
# fourth lease's refined q4_0 cache for the same machine's comparison; then
# q4_K and affine4 the same way while time is left.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 585 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
(cd variants && GEMV_TEST_SPACE=sample timeout 120 ../.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K|affine4|q8_0)$|TestLateXOnGPU/(q4_0|q4_K|affine4|q8_0)$' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL|bit-identical" $R/vtest.txt | head -40
timeout 220 .gpubin/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/q.db > $R/tune_q4_0.txt 2>&1; el "tune q4_0" $?
gzip -c /tmp/q.db > $R/q4_0.db.gz
grep -E "chosen in the|28672x4096|b1[0-9][0-9]|b2[0-9][0-9]" $R/tune_q4_0.txt | head -20
gunzip -kf .gpulead/base/autotune.gz
[ -f .gpulead/db/q4_0_refined.db.gz ] && gunzip -c .gpulead/db/q4_0_refined.db.gz > /tmp/base.db
k=0
for b in new base new; do
  k=$((k+1)); db=/tmp/q.db; bin=.gpubin/autotune
  [ $b = base ] && db=/tmp/base.db && bin=.gpulead/base/autotune
  timeout 90 $bin bench --chain --compile --attribute --cache $db --model llama-3-8b --formats q4_0 > $R/chain_${k}_$b.txt 2>&1; el "chain $k $b" $?
  grep -E "tuned, PDL: |every shape" $R/chain_${k}_$b.txt
done
if [ $(left) -gt 230 ]; then
  timeout $(( $(left) - 75 )) .gpubin/autotune --arch sm_90 --model llama-3-8b --formats q4_K,affine4 --refine --cache /tmp/k.db > $R/tune_k.txt 2>&1; el "tune k" $?
  gzip -c /tmp/k.db > $R/k.db.gz
  timeout $(( $(left) - 5 )) .gpubin/autotune bench --chain --compile --attribute --cache /tmp/k.db --model llama-3-8b --formats q4_K,affine4 > $R/chain_k.txt 2>&1; el "chain k" $?
  grep -E "tuned, PDL: |every shape" $R/chain_k.txt
fi
tar -czf $OUT/x.tgz -C $OUT r
