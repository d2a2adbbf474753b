#!/usr/bin/env bash
# Thirty-sixth lease, call 1: HEAD (no kernel change since 99018a4) on the
# refined five-format cache: the llama-3-8b token of every format (stock,
# tuned, tuned with PDL edges, the reads), then the isolated winners of the
# token's shapes against stock and the same-bytes read, all on one machine.
export XDG_CACHE_HOME=/tmp/xdg
A=.gpulead/autotune
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/gpu.txt
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
s=$(date +%s)
timeout 250 $A bench --chain --model llama-3-8b --formats q4_0,q4_K,affine4,q8_0,bf16 --cache /tmp/f.db > $OUT/chain.txt 2>&1
echo "chain rc $? $(( $(date +%s) - s )) s"
grep -E "^(format|q4_0|q4_K|affine4|q8_0|bf16) |tuned|stock|reads|ceiling|mismatch|error" $OUT/chain.txt | cut -c1-150 | head -60
s=$(date +%s)
timeout 270 $A bench --arch sm_90 --formats q4_0,q4_K,affine4 --shapes 6144x4096,4096x4096,28672x4096,4096x14336,128256x4096,1024x4096 --cache /tmp/f.db > $OUT/iso4.txt 2>&1
echo "iso rc $? $(( $(date +%s) - s )) s"
grep -v '^#' $OUT/iso4.txt | cut -c1-170 | head -60
