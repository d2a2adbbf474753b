#!/usr/bin/env bash
# Thirty-fourth lease, call 4: a row group's lane sums deferred to the
# next group's (probe-defer.patch, GEMV_PROBE_DEFER=1, s=3 only): the two
# butterflies run together, so a one-row warp (q4_K's and q6_K's R=1
# winners) waits out one shuffle chain per two row groups instead of one
# per group. The same bits. Build `defer` with the variable (defer:on)
# against HEAD (`base`, .gpulead/autotune), A B B A: q4_K's gate and up
# winners alone, then the Q4_K_M file's token and the q4_K and q4_0
# preset tokens (`bench --chain --compile`).
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
f=/tmp/llama-3-8b-Q4_K_M.gguf
cp .gpulead/llama-3-8b-Q4_K_M.head $f && truncate -s 4912915488 $f
gunzip -c .gpulead/q4km-refined.db.gz > /tmp/q.db
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
gunzip -kf .gpulead/defer/autotune.gz
run() { # build, then autotune's arguments
	local b=$1; shift
	if [ "$b" = defer ]; then GEMV_PROBE_DEFER=1 .gpulead/defer/autotune "$@"; else .gpulead/autotune "$@"; fi
}
for b in base defer defer base; do
	run $b bench --arch sm_90 --format q4_K --shape 14336x4096 --variants r1f0u1s3w16g7l1a1 2>&1 | grep -v '^#' | sed "s/^/$b /" >> $OUT/call4-variants.txt
done
grep "s3w" $OUT/call4-variants.txt | cut -c1-200
if ! grep -q "defer .*r1f0u1s3w16g7l1a1.* ok" $OUT/call4-variants.txt; then echo "defer did not run"; exit 1; fi
n=0
for b in base defer defer base; do
	n=$((n+1)); o=/tmp/call4-gguf_${n}_$b.txt
	run $b bench --chain --gguf $f --compile --cache /tmp/q.db > $o 2>&1
	echo "== gguf $n $b rc $?" | tee -a $OUT/call4-gguf.txt; cat $o >> $OUT/call4-gguf.txt; grep -E "tuned|reads, PDL, x " $o | cut -c1-120
done
for fm in q4_K q4_0; do
	for b in base defer defer base; do
		n=$((n+1)); o=/tmp/call4-chain_${n}_${b}_$fm.txt
		run $b bench --chain --compile --model llama-3-8b --formats $fm --cache /tmp/f.db > $o 2>&1
		echo "== chain $n $b $fm rc $?" | tee -a $OUT/call4-chain-$fm.txt; cat $o >> $OUT/call4-chain-$fm.txt; grep -E "tuned |tuned, PDL |reads, PDL, x " $o | cut -c1-120
	done
done
