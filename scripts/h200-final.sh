#!/bin/bash
# The final measurements of a session (docs/results.md, "Kernels v7"),
# from the repository root after
# `GPU_TEST_PKGS="./internal/gpu ./variants ./tuner" scripts/gpu-test.sh build`
# (carry .gpubin; $OUT is where files go back). Parts, run in the order
# given (each device call must stay under 10 minutes):
#   tests   the driver tests (the PDL chain among them), the kernel
#           families on the GPU (sampled), the planted-variant tuner test
#   tune    a cold full tune of llama-3-8b, timed ($OUT/run.json.gz,
#           show.txt)
#   bench   tunes 28672x8192 (and 4096x14336 unless tune ran) for every
#           format, then `autotune bench` at both from that cache (with the
#           same-bytes read and the PDL chain): $OUT/bench.txt
#   report  the HTML report of the cache tune left (`autotune report`):
#           $OUT/report.html
#   sass    writes the GPU test's default cubins and counts, per variant
#           (its s=3 sample among them), the SASS instructions that show
#           what is copied and how (LDGSTS, UBLKCP, SYNCS, LDS, LDG), and
#           the first three global reads or copies of each as written:
#           $OUT/sass.txt
# The sixth session ran `tests`, then `sass` and `tune bench` (the wall
# time of `tune` is also in $OUT/tune_wall.txt). The seventh ran `tests
# tune bench`, `tests sass tune bench bench`, `tune report bench` and, on
# its final source, `tune report bench tests` (docs/results.md, "Kernels
# v8").
export XDG_CACHE_HOME=/tmp/xdg
R=$(pwd)
A=$R/.gpubin/autotune
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
[ $# -gt 0 ] || { echo "usage: scripts/h200-final.sh tests|tune|bench|report|sass ..." >&2; exit 2; }
for part in "$@"; do
case "$part" in
tests)
	(cd internal/gpu && timeout 120 $R/.gpubin/internal_gpu.test -test.v > $OUT/gtest.log 2>&1; echo "internal_gpu.test exit $?"; grep -E "^(--- FAIL|ok|PASS|FAIL)|TestPDLChain" $OUT/gtest.log | head -5)
	(cd variants && GEMV_TEST_SPACE=sample timeout 200 $R/.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU' -test.v > $OUT/vtest.log 2>&1); rc=$?
	echo "variants.test exit $rc"; grep -E "^(---|    ---|ok|PASS|FAIL)" $OUT/vtest.log | head -8
	[ $rc -eq 0 ] || { grep -B3 -A3 "FAIL\|Error" $OUT/vtest.log | head -40; exit 1; }
	(cd tuner && timeout 70 $R/.gpubin/tuner.test -test.run 'TestPlanted' -test.v > $OUT/ttest.log 2>&1; echo "tuner.test exit $?"; grep "^--- \|^PASS\|^FAIL\|same-bytes" $OUT/ttest.log | head -6)
	;;
tune)
	t0=$(date +%s)
	timeout 400 $A --arch sm_90 --model llama-3-8b --json --cache /tmp/gemv-tune.db 2>$OUT/tune.err | gzip -c > $OUT/run.json.gz
	echo "tune exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s" | tee $OUT/tune_wall.txt
	tail -3 $OUT/tune.err
	$A show --cache /tmp/gemv-tune.db > $OUT/show.txt 2>&1
	;;
bench)
	t0=$(date +%s)
	timeout 400 $A --arch sm_90 --shapes 28672x8192,4096x14336 --json --cache /tmp/gemv-tune.db 2>$OUT/tune_bench.err | gzip -c > $OUT/tune_bench.json.gz
	echo "tune exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s"
	timeout 150 $A bench --arch sm_90 --shape 28672x8192,4096x14336 --cache /tmp/gemv-tune.db > $OUT/bench.txt 2>$OUT/bench.err
	echo "bench exit $?"
	cat $OUT/bench.txt
	;;
report)
	# The HTML report of what tune left in the cache (run tune first).
	$A report --arch sm_90 --cache /tmp/gemv-tune.db -o $OUT/report.html 2>&1 | tail -2
	;;
sass)
	rm -rf /tmp/cubins && mkdir -p /tmp/cubins
	(cd variants && GEMV_WRITE_CUBINS=/tmp/cubins timeout 120 $R/.gpubin/variants.test -test.run TestWriteCubins > $OUT/cubins.log 2>&1; echo "write cubins exit $?")
	for f in /tmp/cubins/*s[0123]w*.cubin; do
		echo "== $(basename $f .cubin): $(cuobjdump -sass $f | grep -oE '(UBLKCP(\.[0-9A-Z]+)*|SYNCS\.[A-Z.]+|LDGSTS(\.[0-9A-Z]+)*|LDS(\.[0-9A-Z]+)*|LDG(\.[0-9A-Z]+)*)' | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}')"
		# The first global reads or copies as written (operands included).
		cuobjdump -sass $f | grep -E '^ +/\*[0-9a-f]+\*/ +(@!?U?P[0-9T] +)?(UBLKCP|LDGSTS|LDG)' | sed 's#^ */\*[0-9a-f]*\*/ *##; s# */\*.*##' | head -3
	done > $OUT/sass.txt
	grep -c . $OUT/sass.txt
	;;
*) echo "usage: scripts/h200-final.sh tests|tune|bench|report|sass ..." >&2; exit 2 ;;
esac
done
