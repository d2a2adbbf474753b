#!/usr/bin/env bash
# For the next lease (built, not run; about 330 s). Why an SM's second
# block starts late, and whether the two blocks' first fills shared fairly
# end them together. Builds (carry .gpulead): head (f192034's kernels);
# tld = head + probe-timeline-issue.patch (stamp 3: warp 0's first copies
# issued; stamp 4: thread 0's first x load landed); pe = head +
# probe-e.patch (GEMV_PROBE_E=1: a warp's first fill of slot 1 after x is
# staged when the grid has more blocks than SM ids, 2: always); tle =
# head + probe-timeline-issue-e.patch (both). All on the twenty-sixth
# lease's refined q4_0 cache.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in head tld pe tle; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
tl() { mkdir -p $R/tl_$1$2; GEMV_PROBE_E=$2 GEMV_PROBE_TIMELINE_OUT=$R/tl_$1$2 timeout 45 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl_$1$2.txt 2>&1; el "tl $1 $2" $?; rm -f $R/tl_$1$2/tl_plain.csv; }
tl tld 0; tl tle 1
python3 .gpulead/pairs.py $R/tl_*/tl_pdl.csv > $R/pairs.txt 2>&1; grep -E "==|28672" $R/pairs.txt | cut -c1-400
k=0
run() { k=$((k+1)); f=$R/chain_${k}_$1_e$2.txt; GEMV_PROBE_E=$2 timeout 50 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $f 2>&1; el "chain $k $1 $2" $?; grep -E "tuned, PDL  " $f | cut -c1-150; }
run head 0; run pe 1; run pe 2; run pe 2; run pe 1; run head 0
timeout 120 .gpulead/head/autotune bench --chain --compile --refine --cache /tmp/q.db --model llama-3-8b --formats q4_0 \
  --try q4_0:28672x4096:r1f0u4s3w16g7l2a1,q4_0:128256x4096:r1f0u4s3w16g31l2a1 > $R/try.txt 2>&1; el try $?
tail -20 $R/try.txt
tar -czf $OUT/x.tgz -C $OUT r
left=$(( 560 - ($(date +%s) - t0) ))
if [ $left -gt 60 ]; then
(cd variants && GEMV_PROBE_E=2 GEMV_TEST_SPACE=sample timeout $left ../.gpulead/bin/variants_pe.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K)$|TestLateXOnGPU' -test.v) > $R/vtest_e2.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL" $R/vtest_e2.txt | head -5
tar -czf $OUT/x.tgz -C $OUT r
fi
