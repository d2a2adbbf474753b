#!/usr/bin/env bash
# Twenty-sixth lease, call 4: `nofence` (ilp, the first fill of each s=3
# ring slot issued without the proxy fence) against `ilp`: the s=3 GPU
# tests with nofence's prelude, then the q4_0 and q4_K tokens, A B B A.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
(cd variants && GEMV_TEST_SPACE=sample timeout 100 ../.gpulead/bin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K|bf16)$|TestLateXOnGPU' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL|^    --- PASS" $R/vtest.txt | head -30
gunzip -kf .gpulead/ilp/autotune.gz .gpulead/nofence/autotune.gz
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
gunzip -c .gpulead/db/q4_K_k26.db.gz > /tmp/k.db
k=0
run() { k=$((k+1)); timeout 60 .gpulead/$1/autotune bench --chain --compile --cache $3 --model llama-3-8b --formats $2 > $R/chain_${2}_${k}_$1.txt 2>&1; el "chain $2 $k $1" $?; grep -E " tuned, PDL  |tuned, PDL: " $R/chain_${2}_${k}_$1.txt | cut -c1-160; }
run ilp q4_0 /tmp/q.db; run nofence q4_0 /tmp/q.db; run nofence q4_0 /tmp/q.db; run ilp q4_0 /tmp/q.db

tar -czf $OUT/x.tgz -C $OUT r
