#!/usr/bin/env bash
# Thirty-first lease, call 2: examples/rust-engine (built here with cargo
# --release against libgemvtune.so of this tree, both carried in
# .gpulead) on the twenty-ninth lease's refined five-format cache: every
# format's llama-3-8b GEMVs checked, and one token's chain timed plain and
# with PDL where the choice says it pays; then the rollback
# (GEMV_FORCE_VARIANT=v1) and the C engine on the same machine for the
# formats both make.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMV_TUNE_CACHE=/tmp/f.db
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/call2-smi.txt
t0=$(date +%s)
timeout 300 /tmp/re/rust-engine > $OUT/call2-rust.txt 2>&1
echo "rust-engine rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call2-rust.txt
grep -v "^  .* ok$" $OUT/call2-rust.txt
GEMV_FORCE_VARIANT=v1 timeout 150 /tmp/re/rust-engine --formats q4_0,q4_K,q8_0,bf16 > $OUT/call2-rust-v1.txt 2>&1
echo "rollback rc $?" | tee -a $OUT/call2-rust-v1.txt
grep -v "^  .* ok$" $OUT/call2-rust-v1.txt | tail -8
mkdir -p .gpubin && cp /tmp/re/libgemvtune.so .gpubin/ && cp /tmp/f.db .gpubin/tune.db
FORMATS=q4_0,q4_K,q8_0,bf16 timeout 200 bash scripts/c-engine-gpu.sh > $OUT/call2-c-engine.txt 2>&1
echo "c-engine rc $?"
grep -A8 "^format chain (llama" $OUT/call2-c-engine.txt | head -10
