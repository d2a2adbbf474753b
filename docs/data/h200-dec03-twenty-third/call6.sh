#!/usr/bin/env bash
# Twenty-third lease, call 6: the attribution's reads write their y (the
# next stage's x in L2, as after a GEMV): TestChainOnGPU, then call 1's
# q4_0 token attributed.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s)
export XDG_CACHE_HOME=/tmp/xdg
(cd tuner && timeout 100 ../.gpubin/tuner.test -test.run 'TestChainOnGPU$' -test.v) > $R/ttest.txt 2>&1
echo "test exit $? at $(( $(date +%s) - t0 )) s"; grep -E "^(--- |ok|PASS|FAIL)|as a read" $R/ttest.txt | head
gunzip -c .gpulead/db/q4_0.db.gz > /tmp/q4.db
timeout 100 .gpubin/autotune bench --chain --attribute --cache /tmp/q4.db --model llama-3-8b --formats q4_0 > $R/chain-attr.txt 2>&1
echo "chain exit $? at $(( $(date +%s) - t0 )) s"; tail -9 $R/chain-attr.txt
tar -czf $OUT/x.tgz -C $OUT r
