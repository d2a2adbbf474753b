#!/usr/bin/env bash
# Thirty-first lease, call 4: one token's chain through each engine on one
# machine, on the twenty-ninth lease's refined five-format cache: the
# Python engine with --chain (CuPy; PDL launches through ctypes'
# cuLaunchKernelEx), the Rust engine, and the C engine.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMV_TUNE_CACHE=/tmp/f.db GEMVTUNE_LIB=/tmp/re/libgemvtune.so
F=q4_0,q4_K,affine4,q8_0,bf16
timeout 60 python3 examples/python-engine/engine.py --chain --formats q4_0 --layers 2 --rounds 3 > $OUT/call4-py-smoke.txt 2>&1
echo "python smoke rc $?"; tail -4 $OUT/call4-py-smoke.txt
t0=$(date +%s)
timeout 200 python3 examples/python-engine/engine.py --chain --formats $F --rounds 15 > $OUT/call4-py-chain.txt 2>&1
echo "python chain rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call4-py-chain.txt
grep -v "^  .* ok" $OUT/call4-py-chain.txt | tail -16
timeout 120 /tmp/re/rust-engine --formats $F > $OUT/call4-rust.txt 2>&1
echo "rust rc $?"; tail -13 $OUT/call4-rust.txt
cp /tmp/re/libgemvtune.so examples/c-engine/ && make -s -C examples/c-engine CUDA=/usr/local/cuda 2>&1 | tail -3
LD_LIBRARY_PATH=/usr/local/cuda/lib64 timeout 150 examples/c-engine/engine --formats q4_0,q4_K,q8_0,bf16 > $OUT/call4-c.txt 2>&1
echo "c rc $?"; grep -A9 "^format chain (llama" $OUT/call4-c.txt
