#!/usr/bin/env bash
# Twenty-seventh lease, call 2: why the second block on an SM stages x
# about 0.95 µs after the first. Probe GEMV_PROBE_B (build pb): 1 x loads
# with ld.global.cg, 2 a 32 ns back-off after a failed ring-slot try_wait,
# 3 try_wait with a 1 ms suspend hint. q4_0 tokens on the twenty-sixth
# lease's refined cache, A B C D D C B A; then the block timeline (tlb:
# the same plus probe-timeline, stamp 4 = thread 0's x loads landed) for
# 0..3; then the s=3 GPU tests with each probe.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in head pb tlb; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
k=0
run() { k=$((k+1)); f=$R/chain_${k}_$1_b$2.txt; GEMV_PROBE_B=$2 timeout 60 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $f 2>&1; el "chain $k $1 $2" $?; grep -E "tuned, PDL  " $f | cut -c1-150; }
run head 0; run pb 1; run pb 2; run pb 3; run pb 3; run pb 2; run pb 1; run head 0
for v in 0 1 2 3; do mkdir -p $R/tl$v; GEMV_PROBE_B=$v GEMV_PROBE_TIMELINE_OUT=$R/tl$v timeout 45 .gpulead/tlb/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl$v.txt 2>&1; el "tl $v" $?; rm -f $R/tl$v/tl_plain.csv; done
python3 docs/data/h200-dec03-twenty-sixth/timeline.py $R/tl*/tl_pdl.csv > $R/timeline.txt 2>&1
python3 .gpulead/pairs.py $R/tl*/tl_pdl.csv >> $R/timeline.txt 2>&1; cat $R/timeline.txt
tar -czf $OUT/x.tgz -C $OUT r
for v in 1 2 3; do
left=$(( 540 - ($(date +%s) - t0) )); [ $left -gt 30 ] || break
(cd variants && GEMV_PROBE_B=$v GEMV_TEST_SPACE=sample timeout $left ../.gpulead/bin/variants_pb.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K)$|TestLateXOnGPU' -test.v) > $R/vtest_b$v.txt 2>&1; el "vtest $v" $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL" $R/vtest_b$v.txt | head -5
done
tar -czf $OUT/x.tgz -C $OUT r
