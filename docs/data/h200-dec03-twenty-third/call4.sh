#!/usr/bin/env bash
# Twenty-third lease, call 4: bf16 and f16 with an s=3 warp reading a slot
# before its decode (land16: the working tree, bulkLandFirst on for both):
# the families' GPU tests with it, then a cold bf16,f16 tune by HEAD's
# build and the token by both builds, A B B A.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s)
export XDG_CACHE_HOME=/tmp/xdg
(cd variants && GEMV_TEST_SPACE=sample timeout 120 ../.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(bf16|f16)$|TestLateXOnGPU/(bf16|f16)$' -test.v) > $R/vtest.txt 2>&1
echo "tests exit $? at $(( $(date +%s) - t0 )) s"; grep -E "^(=== RUN|--- |ok|FAIL|PASS)" $R/vtest.txt | grep -v "=== RUN" | tail -12
OUT=$R timeout $(( 585 - ($(date +%s) - t0) )) scripts/ab-kernels.sh chain bf16,f16 base land16
echo "chain exit $? at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/x.tgz -C $OUT r
