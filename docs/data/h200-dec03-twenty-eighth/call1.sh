#!/usr/bin/env bash
# Twenty-eighth lease, call 1: the twenty-seventh lease's call4.sh on a
# fresh cold refined q4_0 tune by head (HEAD 38ab689), whose cache the
# probes then share. Builds: head; tld = head + probe-timeline-issue.patch;
# pe = head + probe-e.patch; tle = head + probe-timeline-issue-e.patch.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 585 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
for b in head tld pe tle; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
timeout 150 .gpulead/head/autotune --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/q.db > $R/tune.txt 2>&1; el tune $?
gzip -c /tmp/q.db > $R/q4_0_h28.db.gz
.gpulead/head/autotune show --cache /tmp/q.db > $R/show.txt 2>&1
grep -E "refine|round" $R/tune.txt | cut -c1-200
tl() { mkdir -p $R/tl_$1$2; GEMV_PROBE_E=$2 GEMV_PROBE_TIMELINE_OUT=$R/tl_$1$2 timeout 45 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl_$1$2.txt 2>&1; el "tl $1 $2" $?; rm -f $R/tl_$1$2/tl_plain.csv; }
tl tld 0; tl tle 1
python3 .gpulead/pairs.py $R/tl_*/tl_pdl.csv > $R/pairs.txt 2>&1; grep -E "==|28672" $R/pairs.txt | cut -c1-400
tar -czf $OUT/x.tgz -C $OUT r
k=0
run() { k=$((k+1)); f=$R/chain_${k}_$1_e$2.txt; GEMV_PROBE_E=$2 timeout 50 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $f 2>&1; el "chain $k $1 $2" $?; grep -E "tuned, PDL  " $f | cut -c1-150; }
run head 0; run pe 1; run pe 2; run pe 2; run pe 1; run head 0
tar -czf $OUT/x.tgz -C $OUT r
if [ $(left) -gt 150 ]; then
timeout 120 .gpulead/head/autotune bench --chain --compile --refine --cache /tmp/q.db --model llama-3-8b --formats q4_0 \
  --try q4_0:28672x4096:r1f0u4s3w16g7l2a1,q4_0:128256x4096:r1f0u4s3w16g31l2a1 > $R/try.txt 2>&1; el try $?
tail -12 $R/try.txt | cut -c1-200
tar -czf $OUT/x.tgz -C $OUT r
fi
if [ $(left) -gt 60 ]; then
(cd variants && GEMV_PROBE_E=2 GEMV_TEST_SPACE=sample timeout $(( $(left) - 10 )) ../.gpulead/bin/variants_pe.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K)$|TestLateXOnGPU' -test.v) > $R/vtest_e2.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL" $R/vtest_e2.txt | head -8
tar -czf $OUT/x.tgz -C $OUT r
fi
