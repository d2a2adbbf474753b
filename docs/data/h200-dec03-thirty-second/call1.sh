#!/usr/bin/env bash
# Thirty-second lease, call 1: the token under sustained decode. `bench
# --chain --batch-tokens 100` (100 tokens back to back per timed batch) of
# the twenty-ninth lease's refined cache, compiled from source (--compile)
# by a build with the twenty-seventh lease's probe-b.patch, whose
# GEMV_PROBE_B=3 gives the ring slots' try_wait a suspend hint and =2 backs
# off 32 ns after a failed try_wait (unset: the kernels as landed). Those
# probes did not change the token's speed at batches of 5; the question is
# whether spinning less lowers the power a sustained token draws, so that
# the power cap takes less of the SM clock. NVML sampled every 100 ms.
# Then the tuner's GPU test of the chain (NVML reads after every batch).
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
q=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,temperature.memory
r=clocks_event_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv,noheader >/dev/null 2>&1 || r=clocks_throttle_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv -lms 100 > $OUT/call1-smi.csv 2>&1 &
smi=$!
mark() { echo "$(date +%H:%M:%S.%N) $*" >> $OUT/call1-marks.txt; }
n=0
for run in 0:q8_0 3:q8_0 2:q8_0 0:q8_0 3:q4_K 0:q4_K; do
	n=$((n+1)); b=${run%%:*}; f=${run#*:}
	o=$OUT/call1-chain_${n}_b${b}_${f}.txt
	mark "start $n b$b $f"
	if [ "$b" = 0 ]; then unset GEMV_PROBE_B; else export GEMV_PROBE_B=$b; fi
	timeout 150 .gpulead/autotune-pb bench --chain --compile --batch-tokens 100 --model llama-3-8b --formats $f --cache /tmp/f.db > $o 2>&1
	mark "end $n rc $?"
	echo "== $n b$b $f"; grep -E "^$f |throttled" $o
done
unset GEMV_PROBE_B
mark "start ttest"
(cd tuner && timeout 150 ../.gpulead/tuner.test -test.run 'TestChain' -test.v > $OUT/call1-ttest.txt 2>&1; echo "ttest rc $?")
mark "end ttest"
grep -E "^(--- |ok|FAIL|PASS)" $OUT/call1-ttest.txt | tail -20
kill $smi
