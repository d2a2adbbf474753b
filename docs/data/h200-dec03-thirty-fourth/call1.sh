#!/usr/bin/env bash
# Thirty-fourth lease, call 1: the a=1 chunk expressions' integer-to-float
# conversions (I2F, 16 a clock per SM) as an integer add and an FSUB
# (gemv_i2f, gemv_u2f), x's sum as a float from staging, q6_K's signed
# scales by PRMT and one half of x loaded (build cvt, the working tree of
# this lease against HEAD ecbd57d, build base). Every conversion is exact,
# so y is the same bits. Order A B B A:
#  1. the llama-3-8b Q4_K_M file's token (225 GEMVs, q4_K and q6_K) on the
#     last lease's refined cache, `bench --chain --gguf --compile`;
#  2. I2F, IDP4A and instructions per build in the cubins those compiled;
#  3. the q4_K and q4_0 preset tokens on the twenty-ninth lease's refined
#     five-format cache, `bench --chain --compile`.
mkdir -p $OUT; export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
f=/tmp/llama-3-8b-Q4_K_M.gguf
cp .gpulead/llama-3-8b-Q4_K_M.head $f && truncate -s 4912915488 $f
gunzip -c .gpulead/q4km-refined.db.gz > /tmp/q.db
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in base cvt; do gunzip -kf .gpulead/$b/autotune.gz; done
n=0
for b in base cvt cvt base; do
	n=$((n+1)); o=$OUT/call1-gguf_${n}_$b.txt; s=$(date +%s)
	XDG_CACHE_HOME=/tmp/xdg-$b timeout 150 .gpulead/$b/autotune bench --chain --gguf $f --compile --cache /tmp/q.db > $o 2>&1
	echo "== gguf $n $b rc $? $(( $(date +%s) - s )) s"; grep -E "tuned|reads, PDL, x " $o | cut -c1-150
done
for b in base cvt; do
	for c in /tmp/xdg-$b/gemvtune/cubins/*.cubin; do
		cuobjdump -sass "$c" 2>/dev/null | awk -v f="$(basename $c)" '/^ +\/\*[0-9a-f]+\*\// { n++ } / I2F/ { i++ } / IDP/ { d++ } END { print f, n, i + 0, d + 0 }'
	done > $OUT/call1-sass-$b.txt
	echo "== sass $b: cubins, instructions, I2F, IDP4A"; awk '{ c++; n += $2; i += $3; d += $4 } END { print c, n, i, d }' $OUT/call1-sass-$b.txt
done
for fm in q4_K q4_0; do
	for b in base cvt cvt base; do
		n=$((n+1)); o=$OUT/call1-chain_${n}_${b}_$fm.txt; s=$(date +%s)
		XDG_CACHE_HOME=/tmp/xdg-$b timeout 120 .gpulead/$b/autotune bench --chain --compile --model llama-3-8b --formats $fm --cache /tmp/f.db > $o 2>&1
		echo "== chain $n $b $fm rc $? $(( $(date +%s) - s )) s"; grep -E "tuned |tuned, PDL |reads, PDL, x " $o | cut -c1-150
	done
done
