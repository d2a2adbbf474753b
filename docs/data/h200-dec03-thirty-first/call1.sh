#!/usr/bin/env bash
# Thirty-first lease, call 1: the committed examples/python-engine/engine.py
# (HEAD 63704d6, libgemvtune.so of that tree, carried gzipped in .gpulead)
# on the twenty-ninth lease's refined five-format cache, then the same
# engine under GEMV_FORCE_VARIANT=v1 (the rollback: every lookup answers
# stock) on two shapes.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/libgemvtune.so.gz > /tmp/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMVTUNE_LIB=/tmp/libgemvtune.so GEMV_TUNE_CACHE=/tmp/f.db
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv > $OUT/call1-smi.txt
t0=$(date +%s)
timeout 300 python3 examples/python-engine/engine.py > $OUT/call1-engine.txt 2>&1
echo "engine rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call1-engine.txt
cat $OUT/call1-engine.txt
GEMV_FORCE_VARIANT=v1 timeout 120 python3 examples/python-engine/engine.py --shapes 4096x4096,28672x4096 > $OUT/call1-rollback.txt 2>&1
echo "rollback rc $?" | tee -a $OUT/call1-rollback.txt
cat $OUT/call1-rollback.txt
