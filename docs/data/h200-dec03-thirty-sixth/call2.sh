#!/usr/bin/env bash
# Thirty-sixth lease, call 2: the driver tests of HEAD (TestGEMVKernel
# changed: its first launch's y is no longer kept), then the 4-bit tokens
# on a second machine, 5-token and 100-token batches.
export XDG_CACHE_HOME=/tmp/xdg
A=.gpubin/autotune
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/call2-gpu.txt
(cd internal/gpu && timeout 150 ../../.gpubin/internal_gpu.test -test.v > $OUT/call2-gtest.txt 2>&1; echo "internal_gpu.test exit $?")
grep -E "^(--- FAIL|ok|PASS|FAIL)|--- (PASS|SKIP): TestGEMVKernel|gemv_f32 " $OUT/call2-gtest.txt | head
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for bt in 5 100; do
	s=$(date +%s)
	timeout 200 $A bench --chain --model llama-3-8b --formats q4_0,q4_K,affine4 --batch-tokens $bt --cache /tmp/f.db > $OUT/call2-chain-b$bt.txt 2>&1
	echo "chain b$bt rc $? $(( $(date +%s) - s )) s"
	grep -E "tuned, PDL |reads, PDL, x |of the speed" $OUT/call2-chain-b$bt.txt | cut -c1-160
done
