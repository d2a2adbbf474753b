#!/usr/bin/env bash
# Thirty-second lease, call 2: what quantizing x costs the 4-bit token.
# probe-q.patch (against HEAD 7d3ed3c): GEMV_PROBE_Q=1 stages x without the
# group's amax, its shuffles and the reciprocal (q = rne(127·x), d = 1/127,
# s = one float4's sum), so y is wrong and the chain's checks are skipped;
# unset, the kernels are HEAD's and checked. If dropping that work buys
# little, x handed over already quantized (an engine's norm writing q8
# blocks) would not pay either. `bench --chain --compile` of the twenty-
# ninth lease's refined cache, A B B A for q4_0, then B A for q4_K.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
n=0
for run in 0:q4_0 1:q4_0 1:q4_0 0:q4_0 1:q4_K 0:q4_K; do
	n=$((n+1)); q=${run%%:*}; f=${run#*:}
	o=$OUT/call2-chain_${n}_q${q}_${f}.txt
	if [ "$q" = 0 ]; then unset GEMV_PROBE_Q; else export GEMV_PROBE_Q=$q; fi
	s=$(date +%s)
	timeout 150 .gpulead/autotune-pq bench --chain --compile --model llama-3-8b --formats $f --cache /tmp/f.db > $o 2>&1
	echo "== $n q$q $f rc $? $(( $(date +%s) - s )) s"; grep -E "tuned, PDL |reads, PDL, x " $o | cut -c1-140
done
