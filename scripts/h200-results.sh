#!/bin/bash
# The measurements behind docs/results.md, in one device call: run on the
# H200 from a folder holding the autotune binary and variants.test (built
# here: see scripts/gpu-test.sh build), with $OUT set to where files go back.
#
#   1. with WITH_KERNEL_TESTS=1: the kernel families on the GPU (sampled)
#   2. run5: exhaustive tune of llama-3-8b, all five formats (timed)
#   3. run2: a second exhaustive tune of q4_0 and q8_0 (reproducibility)
#   4. run4: a budgeted tune (--budget 400) of all five formats
#   5. autotune compare run5 run2 and run5 run4; show; lookups; report
#   6. autotune bench at 28672x8192 and 4096x14336 (tuned now, not recorded)
B=$(cd "$(dirname "$0")" && pwd)
export XDG_CACHE_HOME=/tmp/xdg
: "${OUT:?set OUT to a folder}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
if [ -n "${WITH_KERNEL_TESTS:-}" ]; then
	(cd "$B/../variants" && GEMV_TEST_SPACE=sample timeout 150 "$B/variants.test" -test.short -test.run 'TestFamiliesOnGPU' 2>&1 | tail -5)
fi
cd "$B" || exit 1
tune() {
	name=$1 limit=$2
	shift 2
	t0=$(date +%s)
	timeout "$limit" ./autotune --arch sm_90 --model llama-3-8b --force --json "$@" 2>>"$OUT/errs.log" | gzip -c >"$OUT/$name.json.gz"
	echo "$name: exit ${PIPESTATUS[0]}, wall $(($(date +%s) - t0)) s ($*)"
}
tune run5 270 --cache "$OUT/tune.db"
tune run2 100 --cache /tmp/run2.db --formats q4_0,q8_0
tune run4 120 --cache /tmp/run4.db --budget 400
./autotune compare "$OUT/run5.json.gz" "$OUT/run2.json.gz"
./autotune compare "$OUT/run5.json.gz" "$OUT/run4.json.gz"
export GEMV_TUNE_CACHE=$OUT/tune.db
./autotune show
./autotune lookup --arch sm_90 --format q4_0 --shape 4096x14336
GEMV_FORCE_VARIANT=v1 ./autotune lookup --arch sm_90 --format q4_0 --shape 4096x14336
GEMV_REQUIRE_EXACT=1 ./autotune lookup --arch sm_90 --format q4_0 --shape 4096x14336
./autotune report -o "$OUT/report.html"
timeout 80 ./autotune bench --arch sm_90 --shape 28672x8192,4096x14336 2>>"$OUT/errs.log"
