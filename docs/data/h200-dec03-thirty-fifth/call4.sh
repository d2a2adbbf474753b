#!/usr/bin/env bash
# Thirty-fifth lease, call 4: the kernel before asks L2, halfway through
# its items (warp 0 of each block, its slice), for the first kilobyte (mid)
# or two (mid2k) of each of the next kernel's first-pass rows
# (probe-mid.patch: GEMV_PROBE_MID=1, the chain passes the next stage's
# weights, rows and row bytes as three more kernel arguments). Against
# HEAD (base), A B C C B A, q4_0 then q4_K preset tokens on the
# twenty-ninth lease's refined five-format cache.
mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in base mid; do gunzip -kf .gpulead/$b/autotune.gz; done
run() {
	local r=$1; shift
	case $r in
	base) XDG_CACHE_HOME=/tmp/x-base timeout 60 .gpulead/base/autotune "$@" ;;
	mid) XDG_CACHE_HOME=/tmp/x-m GEMV_PROBE_MID=1 timeout 60 .gpulead/mid/autotune "$@" ;;
	mid2k) XDG_CACHE_HOME=/tmp/x-m2 GEMV_PROBE_MID=1 GEMV_PROBE_MID_BYTES=2048 timeout 60 .gpulead/mid/autotune "$@" ;;
	esac
}
n=0
for fm in q4_0 q4_K; do
	for r in base mid mid2k mid2k mid base; do
		n=$((n+1)); o=/tmp/c4_${n}_${r}_$fm.txt; s=$(date +%s)
		run $r bench --chain --compile --model llama-3-8b --formats $fm --cache /tmp/f.db > $o 2>&1
		echo "== chain $n $r $fm rc $? $(( $(date +%s) - s )) s" | tee -a $OUT/call4-chain-$fm.txt; cat $o >> $OUT/call4-chain-$fm.txt
		grep -E "tuned, PDL |reads, PDL, x |mismatch|rror|spill" $o | cut -c1-130
	done
done
