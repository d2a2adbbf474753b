#!/usr/bin/env bash
# Thirtieth lease, call 4: examples/python-engine/engine.py (CuPy) on the
# twenty-ninth lease's refined five-format cache: every format and
# llama-3-8b shape checked against the float64 reference and timed against
# stock. libgemvtune.so built here (`go build -buildmode=c-shared`), carried
# gzipped in .gpulead. A short run first, so that a CuPy mismatch costs
# little. (Call 3 ran the same with one event pair around each plain launch,
# which timed CuPy's host overhead; this build times CUDA graphs.)
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/libgemvtune.so.gz > /tmp/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMVTUNE_LIB=/tmp/libgemvtune.so GEMV_TUNE_CACHE=/tmp/f.db
python3 -c "import sys, numpy, cupy; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)" | tee $OUT/call4-versions.txt
timeout 120 python3 examples/python-engine/engine.py --formats q4_0,q5_K,bf16 --shapes 4096x4096 --rounds 2 > $OUT/call4-smoke.txt 2>&1
rc=$?; cat $OUT/call4-smoke.txt; echo "smoke rc $rc"
grep -q "checks failed" $OUT/call4-smoke.txt || exit 1
t0=$(date +%s)
timeout 420 python3 examples/python-engine/engine.py > $OUT/call4-engine.txt 2>&1
echo "engine rc $? wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/call4-engine.txt
cat $OUT/call4-engine.txt
