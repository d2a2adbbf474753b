#!/usr/bin/env bash
# Thirty-sixth lease, call 6: what one boundary less per layer is worth to
# a read. probe-mlp-cluster.patch adds the read mode "reads, PDL, x, mlp": each
# gate_up stage and the down stage after it read by one kernel (97
# launches a token instead of 129), and "reads, PDL, x, mlp, red": the
# same, each block then adding 4096 partial sums into the down stage's y
# (red.global.add.v4.f32), and "reads, PDL, x, mlp, cl2": the same in
# clusters of two blocks that add their partials pairwise in distributed
# shared memory first, each adding half of the sums into y; timed interleaved with the other
# read modes and the GEMVs in the same run.
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/call6-gpu.txt
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
s=$(date +%s)
GEMV_PROBE_MLP=1 timeout 300 .gpulead/mlp/autotune bench --chain --model llama-3-8b --formats q4_0,q4_K --cache /tmp/f.db > $OUT/call6-chain.txt 2>&1
echo "chain rc $? $(( $(date +%s) - s )) s"
grep -E "tuned, PDL |reads, PDL|of the speed" $OUT/call6-chain.txt | cut -c1-150
grep -iE "error|fail|autotune:" $OUT/call6-chain.txt | head -5
