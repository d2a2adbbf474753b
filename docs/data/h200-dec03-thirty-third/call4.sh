#!/usr/bin/env bash
# Thirty-third lease, call 4: `autotune --gguf --refine` of the llama-3-8b
# Q4_K_M file on call 2's cold tune (its cache carried): every entry is
# there, so the run only refines the file's token (225 GEMVs, q4_K and
# q6_K), then `bench --chain --gguf` of the refined cache against call 2's.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
f=/tmp/llama-3-8b-Q4_K_M.gguf
cp .gpulead/llama-3-8b-Q4_K_M.head $f && truncate -s 4912915488 $f
gunzip -c .gpulead/q4km.db.gz > /tmp/q.db && cp /tmp/q.db /tmp/q0.db
s=$(date +%s)
timeout 400 .gpulead/autotune --gguf $f --cache /tmp/q.db --refine > $OUT/call4-refine.txt 2> $OUT/call4-refine.err
echo "refine rc $? $(( $(date +%s) - s )) s"; grep "refine" $OUT/call4-refine.err | cut -c1-220; cut -c1-170 $OUT/call4-refine.txt
n=0
for c in q q0 q; do
	n=$((n+1)); o=$OUT/call4-chain_${n}_$c.txt
	timeout 100 .gpulead/autotune bench --chain --gguf $f --cache /tmp/$c.db > $o 2>&1
	echo "chain $n $c rc $?"; grep -E "tuned|reads, PDL, x " $o | cut -c1-150
done
gzip -c /tmp/q.db > $OUT/call4-q4km-refined.db.gz
