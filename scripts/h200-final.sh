#!/bin/bash
# The second session's final measurements (docs/results.md, "Kernels v3"), in one
# device call from the repository root after `GPU_TEST_PKGS="./variants ./tuner"
# scripts/gpu-test.sh build` (carry .gpubin; $OUT is where files go back):
# the kernel families on the GPU (sampled), the planted-variant tuner test, a
# cold full tune of llama-3-8b (timed), autotune bench at 28672x8192 and
# 4096x14336, and bf16 at 8064x8192 (as many bytes as q4_0 28672x8192).
export XDG_CACHE_HOME=/tmp/xdg
R=$(pwd)
A=$R/.gpubin/autotune
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
(cd variants && GEMV_TEST_SPACE=sample timeout 120 $R/.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU' -test.v > $OUT/vtest.log 2>&1); rc=$?
echo "variants.test exit $rc"; grep "^--- \|^ok\|^PASS\|^FAIL" $OUT/vtest.log | head -3
[ $rc -eq 0 ] || { grep -B3 -A3 "FAIL\|Error" $OUT/vtest.log | head -40; exit 1; }
(cd tuner && timeout 70 $R/.gpubin/tuner.test -test.run 'TestPlanted' -test.v > $OUT/ttest.log 2>&1; echo "tuner.test exit $?"; grep "^--- \|^PASS\|^FAIL" $OUT/ttest.log | head -5)
t0=$(date +%s)
timeout 300 $A --arch sm_90 --model llama-3-8b --json --cache $OUT/tune.db 2>$OUT/tune.err | gzip -c > $OUT/run6.json.gz
echo "tune exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s"
$A show --cache $OUT/tune.db > $OUT/show.txt 2>&1
timeout 110 $A bench --arch sm_90 --shape 28672x8192,4096x14336 --cache $OUT/tune.db > $OUT/bench.txt 2>$OUT/bench.err
echo "bench exit $?"
cat $OUT/bench.txt
timeout 30 $A bench --arch sm_90 --format bf16 --shape 8064x8192 --variants r2f0u4s0w2,r3f0u2s0w4,r3f0u1s0w4,r2f0u2s0w4 > $OUT/bench_bf16_132MB.txt 2>&1
cat $OUT/bench_bf16_132MB.txt
