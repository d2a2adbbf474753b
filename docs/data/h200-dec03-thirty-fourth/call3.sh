#!/usr/bin/env bash
# Thirty-fourth lease, call 3: ChainResult.Spills on the GPU.
# TestChainOnGPU (a trial of r8f4u8s1w16, which spills, must be named and
# nothing else), then the q4_0 token of call 1 by build cvt (the probe
# patch on this tree, whose qkv winner spills as this build compiles it)
# with the note the bench now prints.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
(cd tuner && timeout 240 ../.gpubin/tuner.test -test.run 'TestChainOnGPU$' -test.v) > $OUT/call3-ttest.txt 2>&1
echo "== TestChainOnGPU rc $?"; grep -E "^(---|ok|FAIL|PASS)|spills|trial" $OUT/call3-ttest.txt | head -20
gunzip -c .gpulead/f4.db.gz > /tmp/f.db; gunzip -kf .gpulead/cvt/autotune.gz
timeout 150 .gpulead/cvt/autotune bench --chain --compile --model llama-3-8b --formats q4_0 --cache /tmp/f.db > $OUT/call3-chain-cvt.txt 2>&1
echo "== chain cvt rc $?"; grep -E "tuned|spills" $OUT/call3-chain-cvt.txt | cut -c1-200
