#!/usr/bin/env bash
# Thirty-first lease, call 7: `autotune bench --chain` of this tree, which
# now reads NVML after every timed batch and prints, per mode, the share of
# batches at a clock-lowering reason (the power cap) and the lowest SM
# clock, on the twenty-ninth lease's refined cache.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
timeout 270 .gpulead/autotune bench --chain --model llama-3-8b --formats q4_0,q4_K,q8_0,bf16 --cache /tmp/f.db > $OUT/call7-chain.txt 2> $OUT/call7-chain.err
echo "chain rc $?"; cat $OUT/call7-chain.txt; tail -3 $OUT/call7-chain.err
