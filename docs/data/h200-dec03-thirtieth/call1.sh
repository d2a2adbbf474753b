#!/usr/bin/env bash
# Thirtieth lease, call 1: every GPU test binary of HEAD
# (`scripts/gpu-test.sh build`, then .gpubin and libgemvtune.so packed into
# .gpulead/bin.tgz and carried), with GEMV_TEST_SPACE=sample.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
tar xzf .gpulead/bin.tgz
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader > $OUT/call1-smi.txt
t0=$(date +%s)
GEMV_TEST_SPACE=sample timeout 560 scripts/gpu-test.sh run > $OUT/call1-gpu-tests.txt 2>&1
echo "gpu-test rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call1-gpu-tests.txt
grep -E "^=== |^--- FAIL" $OUT/call1-gpu-tests.txt
gzip -9 $OUT/call1-gpu-tests.txt
