#!/usr/bin/env bash
# Thirty-third lease, call 5: the llama-3-8b Q4_K_M file's token with q, k,
# v and gate, up fused where they share a format (`--fuse`), against the
# token as the file lays it out, on one machine. Call 4's refined cache is
# carried; `autotune --gguf --fuse` adds the fused pairs (q4_K 6144x4096 in
# the 16 layers whose v is q4_K, q4_K 28672x4096 in all), then the two
# tokens A B B A, then `--fuse --refine` and the fused token again.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
f=/tmp/llama-3-8b-Q4_K_M.gguf
cp .gpulead/llama-3-8b-Q4_K_M.head $f && truncate -s 4912915488 $f
gunzip -c .gpulead/q4km-refined.db.gz > /tmp/q.db
s=$(date +%s)
timeout 200 .gpulead/autotune --gguf $f --fuse --cache /tmp/q.db > $OUT/call5-tune.txt 2> $OUT/call5-tune.err
echo "tune --fuse rc $? $(( $(date +%s) - s )) s"; cut -c1-170 $OUT/call5-tune.txt
n=0
for m in plain fuse fuse plain; do
	n=$((n+1)); o=$OUT/call5-chain_${n}_$m.txt
	a=""; [ $m = fuse ] && a=--fuse
	timeout 100 .gpulead/autotune bench --chain --gguf $f $a --cache /tmp/q.db > $o 2>&1
	echo "chain $n $m rc $?"; grep -E "one token|tuned|reads, PDL, x " $o | cut -c1-150
done
s=$(date +%s)
timeout 200 .gpulead/autotune --gguf $f --fuse --refine --cache /tmp/q.db > /dev/null 2> $OUT/call5-refine.err
echo "refine --fuse rc $? $(( $(date +%s) - s )) s"; grep refine $OUT/call5-refine.err | cut -c1-220
timeout 100 .gpulead/autotune bench --chain --gguf $f --fuse --cache /tmp/q.db > $OUT/call5-chain_5_fuse-refined.txt 2>&1
echo "chain 5 rc $?"; grep -E "tuned|reads, PDL, x " $OUT/call5-chain_5_fuse-refined.txt | cut -c1-150
.gpulead/autotune show --cache /tmp/q.db > $OUT/call5-show.txt 2>&1
