#!/usr/bin/env bash
# Twenty-sixth lease, call 3. `fix`: HEAD plus the attribution's reads
# writing nonzero y; `ilp`: fix plus x's int8 quantization run over a
# thread's float4s together (gemv_xq_put<N>); `tl2`/`tl3`: fix / ilp plus
# the timeline probe (x's staging stamped too). The variants' GPU tests
# with ilp's prelude; SASS of q4_0's down and o winners, both preludes;
# tokens attributed on call 1's refined caches.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
(cd variants && GEMV_TEST_SPACE=sample timeout 200 ../.gpulead/bin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K|affine4|q8_0|q5_K|q6_K)$|TestLateXOnGPU' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL|^    --- PASS" $R/vtest.txt | head -30
for f in .gpulead/src/*.cu; do b=$(basename $f .cu); nvcc -arch=sm_90 -cubin -o /tmp/$b.cubin $f > $R/nvcc_$b.txt 2>&1 && cuobjdump -sass /tmp/$b.cubin > $R/sass_$b.txt 2>&1; done; el sass $?
gunzip -kf .gpulead/fix/autotune.gz .gpulead/head/autotune.gz .gpulead/ilp/autotune.gz .gpulead/tl2/autotune.gz .gpulead/tl3/autotune.gz
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
gunzip -c .gpulead/db/q4_K_k26.db.gz > /tmp/k.db
k=0
run() { # build format db [timeline dir]
  k=$((k+1))
  if [ $# -ge 4 ]; then mkdir -p $4; export GEMV_PROBE_TIMELINE_OUT=$4; else unset GEMV_PROBE_TIMELINE_OUT; fi
  timeout 80 .gpulead/$1/autotune bench --chain --compile --attribute --cache $3 --model llama-3-8b --formats $2 > $R/chain_${2}_${k}_$1.txt 2>&1; el "chain $2 $k $1" $?
  grep -E "tuned, PDL: |every shape" $R/chain_${2}_${k}_$1.txt
}
run head q4_0 /tmp/q.db; run fix q4_0 /tmp/q.db; run ilp q4_0 /tmp/q.db; run ilp q4_0 /tmp/q.db; run fix q4_0 /tmp/q.db
run tl2 q4_0 /tmp/q.db $R/tl2_q4_0; run tl3 q4_0 /tmp/q.db $R/tl3_q4_0
run fix q4_K /tmp/k.db; run ilp q4_K /tmp/k.db; run ilp q4_K /tmp/k.db; run fix q4_K /tmp/k.db
tar -czf $OUT/x.tgz -C $OUT r
