#!/usr/bin/env bash
# Thirty-third lease, call 2: the token of a llama-3-8b Q4_K_M file.
# The file is TestGGUFLlama3Q4KM's (GEMV_WRITE_GGUF): llama.cpp's Q4_K_M
# layout of llama-3-8b's matrices, header only, carried as its first MiB and
# extended here to its full 4912915488 bytes of zeros (autotune reads no
# weights). Then TestChainOnGPU (stages whose x is not the y just before:
# XBack), a cold `autotune --gguf` of the file's pairs, timed, and `bench
# --chain --gguf` of that cache: stock and tuned, without and with PDL edges.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
f=/tmp/llama-3-8b-Q4_K_M.gguf
cp .gpulead/llama-3-8b-Q4_K_M.head $f && truncate -s 4912915488 $f && ls -l $f
(cd tuner && timeout 120 ../.gpubin/tuner.test -test.run 'TestChainOnGPU' -test.v > $OUT/call2-ttest.txt 2>&1; echo "tuner.test rc $?"; grep -E "^(---|ok|PASS|FAIL)|µs per token \(" $OUT/call2-ttest.txt | head -8)
s=$(date +%s)
timeout 300 .gpulead/autotune --gguf $f --cache /tmp/q.db > $OUT/call2-tune.txt 2> $OUT/call2-tune.err
echo "tune rc $? $(( $(date +%s) - s )) s"; cat $OUT/call2-tune.txt | cut -c1-170
.gpulead/autotune show --cache /tmp/q.db > $OUT/call2-show.txt 2>&1
s=$(date +%s)
timeout 200 .gpulead/autotune bench --chain --gguf $f --cache /tmp/q.db > $OUT/call2-chain.txt 2>&1
echo "chain rc $? $(( $(date +%s) - s )) s"; cut -c1-170 $OUT/call2-chain.txt
gzip -c /tmp/q.db > $OUT/call2-q4km.db.gz
