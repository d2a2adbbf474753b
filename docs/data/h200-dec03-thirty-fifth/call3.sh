#!/usr/bin/env bash
# Thirty-fifth lease, call 3: every GPU test binary of HEAD
# (`scripts/gpu-test.sh build`, .gpubin carried) with GEMV_TEST_SPACE=sample.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
t0=$(date +%s)
GEMV_TEST_SPACE=sample GPU_TEST_TIMEOUT=420s timeout 570 scripts/gpu-test.sh run > $OUT/call3-gpu-tests.txt 2>&1
echo "gpu-test rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call3-gpu-tests.txt
grep -E "^=== RUN   Test[A-Za-z]*$" $OUT/call3-gpu-tests.txt | wc -l
grep -E "^--- FAIL|^(ok|PASS|FAIL)$|^ok " $OUT/call3-gpu-tests.txt | head -20
grep -cE "^--- PASS" $OUT/call3-gpu-tests.txt
grep -E "^--- SKIP" $OUT/call3-gpu-tests.txt
gzip -9 $OUT/call3-gpu-tests.txt
