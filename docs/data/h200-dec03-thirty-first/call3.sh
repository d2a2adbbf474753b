#!/usr/bin/env bash
# Thirty-first lease, call 3 (the machine of call 2, right after it): the
# Rust engine twice more on q4_K and q4_0 with 31 rounds, to see whether
# its q4_K token's slower median against the C engine's holds.
mkdir -p $OUT
for i in 1 2; do
	GEMV_TUNE_CACHE=/tmp/f.db /tmp/re/rust-engine --formats q4_K,q4_0 --rounds 31 2>&1 | grep -E 'PDL|plain|ceiling|failed'
done | tee $OUT/call3-rust-q4.txt
