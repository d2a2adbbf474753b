#!/usr/bin/env bash
# Twenty-seventh lease, call 1: when an s=3 warp's first ring copies go
# out. `land`: once the warp's own x loads have landed (the change);
# `xd` with GEMV_PROBE_XDEP=2: after x is staged; `head`: right after the
# x loads are issued. q4_0 and q4_K tokens on the twenty-sixth lease's
# refined caches, A B C C B A / A B B A; the q4_0 block timeline with the
# probe build at 0 and 1 (= head, land); then land's s=3 GPU tests.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in head land xd tlx; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
gunzip -c .gpulead/db/q4_K_k26.db.gz > /tmp/k.db
k=0
run() { k=$((k+1)); env $4 timeout 60 .gpulead/$1/autotune bench --chain --compile --cache $3 --model llama-3-8b --formats $2 > $R/chain_${2}_${k}_$1_$4.txt 2>&1; el "chain $2 $k $1 $4" $?; grep -E "tuned, PDL: " $R/chain_${2}_${k}_$1_$4.txt | cut -c1-120; }
run head q4_0 /tmp/q.db X=0; run land q4_0 /tmp/q.db X=0; run xd q4_0 /tmp/q.db GEMV_PROBE_XDEP=2
run xd q4_0 /tmp/q.db GEMV_PROBE_XDEP=2; run land q4_0 /tmp/q.db X=0; run head q4_0 /tmp/q.db X=0
run head q4_K /tmp/k.db X=0; run land q4_K /tmp/k.db X=0; run land q4_K /tmp/k.db X=0; run head q4_K /tmp/k.db X=0
for v in 0 1; do mkdir -p $R/tl$v; GEMV_PROBE_XDEP=$v GEMV_PROBE_TIMELINE_OUT=$R/tl$v timeout 45 .gpulead/tlx/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl$v.txt 2>&1; el "tl $v" $?; done
python3 docs/data/h200-dec03-twenty-sixth/timeline.py $R/tl0/tl_pdl.csv $R/tl1/tl_pdl.csv > $R/timeline.txt 2>&1
python3 .gpulead/pairs.py $R/tl0/tl_pdl.csv $R/tl1/tl_pdl.csv >> $R/timeline.txt 2>&1; cat $R/timeline.txt
tar -czf $OUT/x.tgz -C $OUT r
left=$(( 560 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
(cd variants && GEMV_TEST_SPACE=sample timeout $left ../.gpulead/bin/variants_land.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K|bf16)$|TestLateXOnGPU' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL" $R/vtest.txt | head -20
tar -czf $OUT/x.tgz -C $OUT r
fi
