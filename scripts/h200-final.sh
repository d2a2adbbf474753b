#!/bin/bash
# The final measurements of a session (docs/results.md, "Kernels v7"),
# from the repository root after
# `GPU_TEST_PKGS="./internal/gpu ./variants ./tuner" scripts/gpu-test.sh build`
# (carry .gpubin; $OUT is where files go back). Parts, run in the order
# given (each device call must stay under 10 minutes):
#   tests   the driver tests (the PDL chain among them), the kernel
#           families on the GPU (sampled) and after a late x (PDL), the
#           planted-variant tuner test
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
#   budget  `--budget 25%` (the race) into its own cache and `autotune
#           compare` against the exhaustive run of `tune` (run it first):
#           $OUT/budget.json.gz, compare_budget.txt
#   families F  (F a regexp of formats) their families on the GPU, sampled
#           without -short (every one-knob deviation, corners, every 29th
#           variant): $OUT/ftest.log
#   bench4  `autotune bench` of q5_K, q6_K and f16 at 28672x8192,
#           4096x14336, 14336x4096 and 4096x4096 from .gpubin/tune.db (a
#           cache `tune` left, carried back) or /tmp/gemv-tune.db:
#           $OUT/bench4.txt
#   chain   `autotune bench --chain` of llama-3-8b for every format from the
#           cache of `tune` (or .gpubin/tune.db): $OUT/chain.txt
#   ggml    builds ggml's test-backend-ops with CUDA (sm_90 only, no flash
#           attention, no NCCL) from .peer/ggml.tar.gz (scripts/ggml-extract.sh), with the MUL_MAT
#           perf cases at those four shapes, and runs them for n=1:
#           $OUT/ggml.txt
#   profile Nsight Compute counters (scripts/ncu-profile.sh) of the thin
#           grid's q5_K winner at 4096x14336 and of the same bytes as
#           14336x4096: where the down shape loses its 10-20 % of the read
#           (docs/results.md, "2026-12-02 (later)"): $OUT/ncu_*.txt
#   warm    the new formats' winners, `autotune bench --variants` cold at
#           28672x8192, 4096x14336, 14336x4096 and 4096x4096, and with
#           --warm-l2 at the three under L2, for ggml's L2-warm figures
#           (run `ggml` next in the same call): $OUT/warm_*.txt
#   read    the same-bytes read's spread from run to run: three `autotune
#           bench` runs of two q4_0 variants at 1024x4096 and 4096x4096,
#           each measuring its own ceiling and read (docs/decisions.md, "The
#           same-bytes read takes its fastest launch"): $OUT/read.txt
#   twogpu  issue 16 on nvidia-h200-x2: `autotune doctor`, the same cold
#           tune of llama-3-8b on GPU 0 alone (CUDA_VISIBLE_DEVICES=0) and
#           on both (each with its own compile cache, so both compile
#           cold), their walls, the decisions per GPU UUID, `autotune
#           compare` of the two; then the two-GPU tune interrupted by
#           SIGINT halfway through its wall and run again, with every
#           entry the interrupted run finished checked in the resumed
#           cache: $OUT/twogpu_*
#   gguf    `autotune --gguf` of the Q4_K_M and Q5_K_M test files that
#           `mkdir -p .gpubin/gguf && GEMV_WRITE_GGUF=$PWD/.gpubin/gguf go
#           test ./cmd/autotune -run TestGGUFFileTypes` wrote (every
#           multiplied tensor must be tuned, token_embd only left):
#           $OUT/gguf.txt
# `tune` also leaves its cache in $OUT/tune.db.
# The sixth session ran `tests`, then `sass` and `tune bench` (the wall
# time of `tune` is also in $OUT/tune_wall.txt). The seventh ran `tests
# tune bench`, `tests sass tune bench bench`, `tune report bench` and, on
# its final source, `tune report bench tests` (docs/results.md, "Kernels
# v8").
export XDG_CACHE_HOME=/tmp/xdg
R=$(pwd)
A=$R/.gpubin/autotune
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
usage="usage: scripts/h200-final.sh tests|tune|budget|families|warm|read|chain|ggml|profile|gguf|bench|report|sass|twogpu ..."
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
while [ $# -gt 0 ]; do
part=$1; shift
case "$part" in
tests)
	(cd internal/gpu && timeout 120 $R/.gpubin/internal_gpu.test -test.v > $OUT/gtest.log 2>&1; echo "internal_gpu.test exit $?"; grep -E "^(--- FAIL|ok|PASS|FAIL)|TestPDLChain" $OUT/gtest.log | head -5)
	(cd variants && GEMV_TEST_SPACE=sample timeout 300 $R/.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU|TestLateXOnGPU' -test.v > $OUT/vtest.log 2>&1); rc=$?
	echo "variants.test exit $rc"; grep -E "^(---|    ---|ok|PASS|FAIL)" $OUT/vtest.log | head -8
	[ $rc -eq 0 ] || { grep -B3 -A3 "FAIL\|Error" $OUT/vtest.log | head -40; exit 1; }
	(cd tuner && timeout 150 $R/.gpubin/tuner.test -test.run 'TestPlanted|TestChainOnGPU' -test.v > $OUT/ttest.log 2>&1; echo "tuner.test exit $?"; grep "^--- \|^PASS\|^FAIL\|same-bytes" $OUT/ttest.log | head -6)
	;;
tune)
	t0=$(date +%s)
	timeout 400 $A --arch sm_90 --model llama-3-8b --json --cache /tmp/gemv-tune.db 2>$OUT/tune.err | gzip -c > $OUT/run.json.gz
	echo "tune exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s" | tee $OUT/tune_wall.txt
	tail -3 $OUT/tune.err
	$A show --cache /tmp/gemv-tune.db > $OUT/show.txt 2>&1
	cp /tmp/gemv-tune.db $OUT/tune.db
	;;
budget)
	# The search issue's check: the default budgeted search (--budget 25%)
	# into its own cache, against the exhaustive run tune left
	# ($OUT/run.json.gz), by autotune compare.
	t0=$(date +%s)
	timeout 300 $A --arch sm_90 --model llama-3-8b --budget 25% --json --cache /tmp/gemv-budget.db 2>$OUT/budget.err | gzip -c > $OUT/budget.json.gz
	echo "budget 25% exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s" | tee $OUT/budget_wall.txt
	grep -m1 "budget" $OUT/budget.err
	$A compare $OUT/run.json.gz $OUT/budget.json.gz > $OUT/compare_budget.txt 2>&1; echo "compare exit $?"
	tail -12 $OUT/compare_budget.txt
	;;
families)
	fam=${1:?families needs a format regexp}; shift
	(cd variants && GEMV_TEST_SPACE=sample timeout 240 $R/.gpubin/variants.test -test.run "TestFamiliesOnGPU/($fam)\$" -test.v > $OUT/ftest.log 2>&1); rc=$?
	echo "variants.test families $fam exit $rc"; grep -E "^(---|    ---|ok|PASS|FAIL)|variants built|use local memory|variants ok" $OUT/ftest.log | head -20
	[ $rc -eq 0 ] || grep -B3 -A3 "FAIL\|Error" $OUT/ftest.log | head -40
	;;
bench4)
	db=/tmp/gemv-tune.db; [ -f .gpubin/tune.db ] && { cp .gpubin/tune.db /tmp/bench4.db; db=/tmp/bench4.db; }
	timeout 300 $A bench --arch sm_90 --formats q5_K,q6_K,f16 --shapes 28672x8192,4096x14336,14336x4096,4096x4096 --cache $db > $OUT/bench4.txt 2>$OUT/bench4.err
	echo "bench4 exit $?"; cat $OUT/bench4.txt; tail -3 $OUT/bench4.err
	;;
warm)
	# Each new format's recorded llama-3-8b winners (docs/data/h200-dec02-pin/show-tune.txt) and
	# 28672x8192 winners, cold at the four shapes and L2-warm (--warm-l2, as ggml's harness) at
	# the three under 60 MB; run `ggml` after it in the same call for its column.
	for fi in q5_K:r1f0u1s3w16g2l1a1,r1f0u1s3w16l1a1,r1f0u4s3w8g7l1a1,r1f0u1s3w16g7l1a1 \
		q6_K:r1f0u1s3w16l1a1,r1f0u1s3w16g2l1a1,r1f0u1s3w16g7l1a1,r1f0u2s3w16g14l1a1 \
		f16:r2f0u4s3w8g2,r1f0u4s3w16g2,r1f0u8s3w8g14,r4f0u4s2w8; do
		f=${fi%%:*}
		timeout 150 $A bench --arch sm_90 --formats $f --shapes 28672x8192,4096x14336,14336x4096,4096x4096 --variants ${fi#*:} > $OUT/warm_${f}_cold.txt 2>&1
		echo "$f cold exit $?"
		timeout 150 $A bench --warm-l2 --arch sm_90 --formats $f --shapes 4096x14336,14336x4096,4096x4096 --variants ${fi#*:} > $OUT/warm_${f}_warm.txt 2>&1
		echo "$f warm exit $?"
	done
	;;
read)
	for i in 1 2 3; do
		timeout 90 $A bench --arch sm_90 --formats q4_0 --shapes 1024x4096,4096x4096 --variants r1f0u2s3w8l2,r1f0u4s3w16g2l2a1 >> $OUT/read.txt 2>&1
		echo "read run $i exit $?"
	done
	grep "read (same bytes)" $OUT/read.txt
	;;
chain)
	db=/tmp/gemv-tune.db; [ -f .gpubin/tune.db ] && [ ! -f $db ] && cp .gpubin/tune.db $db
	timeout 500 $A bench --chain --model llama-3-8b --cache $db > $OUT/chain.txt 2>$OUT/chain.err
	echo "chain exit $?"; cat $OUT/chain.txt; tail -3 $OUT/chain.err
	;;
ggml)
	rm -rf /tmp/ggml && mkdir -p /tmp/ggml && tar -xzf .peer/ggml.tar.gz -C /tmp/ggml || exit 1
	# The perf cases' one GEMV shape (4096x14336) becomes the four shapes.
	sed -i 's|test_cases.emplace_back(new test_mul_mat(type_a, type_b, 4096, bs, 14336, {1,  1}, {1, 1}));|for (auto mk : std::vector<std::pair<int, int>>{{28672, 8192}, {4096, 14336}, {14336, 4096}, {4096, 4096}}) test_cases.emplace_back(new test_mul_mat(type_a, type_b, mk.first, bs, mk.second, {1, 1}, {1, 1}));|' /tmp/ggml/tests/test-backend-ops.cpp
	grep -c "{28672, 8192}" /tmp/ggml/tests/test-backend-ops.cpp
	t0=$(date +%s)
	(cd /tmp/ggml && cmake -S . -B build -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DGGML_BUILD_TESTS=ON -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release > $OUT/ggml_cmake.log 2>&1 &&
		timeout 420 cmake --build build --target test-backend-ops -j 16 > $OUT/ggml_build.log 2>&1); rc=$?
	echo "ggml build exit $rc wall $(( $(date +%s) - t0 )) s"; [ $rc -eq 0 ] || { tail -20 $OUT/ggml_build.log; tail -5 $OUT/ggml_cmake.log; exit 1; }
	(cd /tmp/ggml/build && timeout 200 ./bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'type_a=(q4_0|q8_0|q4_K|q5_K|q6_K|bf16|f16),type_b=f32,m=[0-9]+,n=1,' > $OUT/ggml.txt 2>&1); echo "ggml perf exit $?"
	grep -E "MUL_MAT" $OUT/ggml.txt | head -40
	;;
profile)
	# The same-bytes read is left out: its launches cannot be told from the
	# ceiling's by count (the ceiling warms up for a time, not a count).
	for c in "r1f0u1s3w16g2l1a1 4096x14336 down" "r1f0u4s3w8g7l1a1 14336x4096 wide"; do
		read -r id shape name <<<"$c"
		scripts/ncu-profile.sh "$A" q5_K "$id" "$shape" "q5K_$name"
	done
	;;
gguf)
	for ft in Q4_K_M Q5_K_M; do
		timeout 200 $A --gguf .gpubin/gguf/$ft.gguf --arch sm_90 --cache /tmp/gguf-$ft.db > $OUT/gguf-$ft.txt 2>&1
		echo "gguf $ft exit $?"; grep -iE "not tuned|tuned|record" $OUT/gguf-$ft.txt | tail -4
		$A show --cache /tmp/gguf-$ft.db | tee -a $OUT/gguf.txt | tail -8
	done
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
twogpu)
	n=$(nvidia-smi -L | wc -l)
	[ "$n" -ge 2 ] || { echo "twogpu needs two GPUs; this machine has $n" >&2; exit 1; }
	$A doctor > $OUT/twogpu_doctor.txt 2>&1; echo "doctor exit $?"; grep -i "gpu" $OUT/twogpu_doctor.txt | head -4
	for run in one two; do
		vis=0; [ $run = two ] && vis=0,1
		t0=$(date +%s%N)
		CUDA_VISIBLE_DEVICES=$vis XDG_CACHE_HOME=/tmp/xdg-$run timeout 400 $A --arch sm_90 --model llama-3-8b --json --cache /tmp/twogpu-$run.db 2>$OUT/twogpu_$run.err | gzip -c > $OUT/twogpu_$run.json.gz
		echo "$run GPU(s) exit ${PIPESTATUS[0]} wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a $OUT/twogpu_wall.txt
		echo "$run: decisions per GPU: $(zcat $OUT/twogpu_$run.json.gz | grep -o '"gpu_uuid": *"[^"]*"' | sort | uniq -c | tr -s ' ' | tr '\n' ';')" | tee -a $OUT/twogpu_wall.txt
		$A show --cache /tmp/twogpu-$run.db > $OUT/twogpu_show_$run.txt 2>&1
	done
	$A compare $OUT/twogpu_one.json.gz $OUT/twogpu_two.json.gz > $OUT/twogpu_compare.txt 2>&1; echo "compare exit $?"; tail -8 $OUT/twogpu_compare.txt
	two_ms=$(awk '/^two/ { for (i = 1; i < NF; i++) if ($i == "wall") print $(i + 1) }' $OUT/twogpu_wall.txt)
	half=$(( ${two_ms:-120000} / 2000 ))
	XDG_CACHE_HOME=/tmp/xdg-int timeout -s INT ${half}s $A --arch sm_90 --model llama-3-8b --cache /tmp/twogpu-int.db > /dev/null 2>$OUT/twogpu_int1.err
	echo "interrupted after ${half} s: exit $?"; tail -2 $OUT/twogpu_int1.err
	$A show --cache /tmp/twogpu-int.db > $OUT/twogpu_show_int1.txt 2>&1
	XDG_CACHE_HOME=/tmp/xdg-int timeout 400 $A --arch sm_90 --model llama-3-8b --cache /tmp/twogpu-int.db > /dev/null 2>$OUT/twogpu_int2.err
	echo "resumed: exit $?"; tail -2 $OUT/twogpu_int2.err
	$A show --cache /tmp/twogpu-int.db > $OUT/twogpu_show_int2.txt 2>&1
	# Every entry finished before the interrupt, with its winner, is in the resumed cache.
	key='$1 ~ /^(q|b|a|f)[0-9a-z_]*$/ && $2 ~ /x/ { print $1, $2, $3 }'
	lost=$(comm -23 <(awk "$key" $OUT/twogpu_show_int1.txt | sort) <(awk "$key" $OUT/twogpu_show_int2.txt | sort))
	echo "kept across the interrupt: $(awk "$key" $OUT/twogpu_show_int1.txt | wc -l) entries; now $(awk "$key" $OUT/twogpu_show_int2.txt | wc -l); lost or changed: ${lost:-none}" | tee -a $OUT/twogpu_wall.txt
	;;
*) echo "$usage" >&2; exit 2 ;;
esac
done
