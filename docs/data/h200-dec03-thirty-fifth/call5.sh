#!/usr/bin/env bash
# Thirty-fifth lease, call 5: call 4's probe with the prefetches marked
# L2::evict_last (probe-midl.patch), so that the lines stay in L2 until
# the next kernel reads them; A B B A, q4_0 then q4_K (time allowing).
mkdir -p $OUT
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in base midl; do gunzip -kf .gpulead/$b/autotune.gz; done
run() {
	local r=$1; shift
	case $r in
	base) XDG_CACHE_HOME=/tmp/x-base timeout 60 .gpulead/base/autotune "$@" ;;
	midl) XDG_CACHE_HOME=/tmp/x-ml GEMV_PROBE_MID=1 timeout 60 .gpulead/midl/autotune "$@" ;;
	esac
}
n=0
for fm in q4_0 q4_K; do
	for r in base midl midl base; do
		n=$((n+1)); o=/tmp/c5_${n}_${r}_$fm.txt; s=$(date +%s)
		run $r bench --chain --compile --model llama-3-8b --formats $fm --cache /tmp/f.db > $o 2>&1
		echo "== chain $n $r $fm rc $? $(( $(date +%s) - s )) s" | tee -a $OUT/call5-chain-$fm.txt; cat $o >> $OUT/call5-chain-$fm.txt
		grep -E "tuned |tuned, PDL |reads, PDL, x |mismatch|rror|spill" $o | cut -c1-130
	done
done
