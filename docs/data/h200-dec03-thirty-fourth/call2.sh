#!/usr/bin/env bash
# Thirty-fourth lease, call 2: why build cvt (call 1) made the q4_0 token
# 5.8 % slower with PDL edges and 0.2 % without. Each winner of the
# twenty-ninth lease's refined q4_0 token by `bench --variants` in both
# builds (registers, blocks per SM, alone and in a PDL chain of itself),
# A B B A; then the token with --attribute by each build.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in base cvt; do gunzip -kf .gpulead/$b/autotune.gz; done
for p in 6144x4096:r1f0u4s3w16g3l2a1 4096x4096:r2f0u2s3w8l2a1 28672x4096:r4f0u2s3w8g7l2a1 4096x14336:r2f0u4s3w16l2a1 128256x4096:r1f0u8s3w16g61l2a1; do
	for b in base cvt cvt base; do
		.gpulead/$b/autotune bench --arch sm_90 --format q4_0 --shape ${p%%:*} --variants ${p#*:} 2>/dev/null | grep -v '^#' | sed "s/^/$b /" >> $OUT/call2-variants.txt
	done
done
grep -E "s3w" $OUT/call2-variants.txt | cut -c1-220
for b in base cvt; do
	o=$OUT/call2-attr-$b.txt; s=$(date +%s)
	timeout 150 .gpulead/$b/autotune bench --chain --compile --attribute --model llama-3-8b --formats q4_0 --cache /tmp/f.db > $o 2>&1
	echo "== attr $b rc $? $(( $(date +%s) - s )) s"; grep -E "tuned, PDL |reads, PDL, x |^ +[0-9]+x[0-9]+|GEMVs" $o | cut -c1-160
done
