#!/usr/bin/env bash
# Thirty-third lease, call 1: what x's bytes cost the 4-bit token.
# probe-xb.patch (against HEAD 43a4f82): GEMV_PROBE_XB=N makes staging read
# x's float4 number i & (N-1), so each block reads only x's first N float4s
# from L2 (the rest hit L1 on the same lines): at N=256, 4 KiB where a
# 4096-long x is 16 KiB and down's 14336-long x 56 KiB. y is then wrong and
# GEMV_PROBE_SKIPCHECK=1 skips the chain's checks. N=1048576 is the control:
# the same instructions, every float4 of x read, y checked. If x's bytes
# at each stage's start cost the token, an engine handing over x already
# quantized (a quarter of the bytes) would pay. `bench --chain --compile`
# of the twenty-ninth lease's refined cache: q4_0 A B B A C, q4_K B A.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
n=0
for run in 0:q4_0 256:q4_0 256:q4_0 0:q4_0 1048576:q4_0 256:q4_K 0:q4_K; do
	n=$((n+1)); xb=${run%%:*}; f=${run#*:}
	o=$OUT/call1-chain_${n}_xb${xb}_${f}.txt
	unset GEMV_PROBE_XB GEMV_PROBE_SKIPCHECK
	[ "$xb" != 0 ] && export GEMV_PROBE_XB=$xb
	[ "$xb" = 256 ] && export GEMV_PROBE_SKIPCHECK=1
	s=$(date +%s)
	timeout 150 .gpulead/autotune-xb bench --chain --compile --model llama-3-8b --formats $f --cache /tmp/f.db > $o 2>&1
	echo "== $n xb$xb $f rc $? $(( $(date +%s) - s )) s"; grep -E "tuned |tuned, PDL |reads, PDL, x " $o | cut -c1-150
done
