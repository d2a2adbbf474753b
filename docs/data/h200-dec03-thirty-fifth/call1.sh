#!/usr/bin/env bash
# Thirty-fifth lease, call 1: a stage whose whole share fits its ring
# issues all of it before the wait (probe-whole.patch). Builds: base
# (HEAD), whole (the probe; GEMV_PROBE_WHOLE=1 compiles it in, where a
# block's items fit the launch's dynamic shared memory;
# GEMV_PROBE_PINMAX=1 pins each PDL stage at the most shared memory that
# still holds its even share of blocks per SM). Runs, A B C D D C B A:
# base, whole:W, wpin:W+PINMAX, pin:PINMAX; q4_0 then q4_K preset tokens
# on the twenty-ninth lease's refined five-format cache.
mkdir -p $OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in base whole; do gunzip -kf .gpulead/$b/autotune.gz; done
run() { # run name, then autotune's arguments
	local r=$1; shift
	case $r in
	base) XDG_CACHE_HOME=/tmp/x-base timeout 90 .gpulead/base/autotune "$@" ;;
	whole) XDG_CACHE_HOME=/tmp/x-w GEMV_PROBE_WHOLE=1 timeout 90 .gpulead/whole/autotune "$@" ;;
	wpin) XDG_CACHE_HOME=/tmp/x-w GEMV_PROBE_WHOLE=1 GEMV_PROBE_PINMAX=1 timeout 90 .gpulead/whole/autotune "$@" ;;
	pin) XDG_CACHE_HOME=/tmp/x-p GEMV_PROBE_PINMAX=1 timeout 90 .gpulead/whole/autotune "$@" ;;
	esac
}
for r in base whole; do
	run $r bench --arch sm_90 --format q4_0 --shape 4096x4096 --variants r2f0u2s3w8l2a1 2>&1 | grep -v '^#' | sed "s/^/$r /" >> $OUT/call1-iso.txt
done
grep "s3w8" $OUT/call1-iso.txt | cut -c1-160
n=0
for fm in q4_0 q4_K; do
	for r in base whole wpin pin pin wpin whole base; do
		n=$((n+1)); o=/tmp/c1_${n}_${r}_$fm.txt; s=$(date +%s)
		run $r bench --chain --compile --model llama-3-8b --formats $fm --cache /tmp/f.db > $o 2>&1
		echo "== chain $n $r $fm rc $? $(( $(date +%s) - s )) s" | tee -a $OUT/call1-chain-$fm.txt; cat $o >> $OUT/call1-chain-$fm.txt
		grep -E "tuned, PDL |reads, PDL, x |mismatch|error|spill" $o | cut -c1-130
	done
done
