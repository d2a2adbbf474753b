#!/usr/bin/env bash
# Thirty-second lease, call 4: the Rust engine after its token's capture
# became one loop over every launch (layers' matrices, then the lm head),
# as the Python engine's is, its f16 conversion in its C twin's shape and the
# crate's Error::new: q4_0 and q4_K, checks and tokens.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMV_TUNE_CACHE=/tmp/f.db LD_LIBRARY_PATH=/tmp/re:/usr/local/cuda/lib64
timeout 200 /tmp/re/rust-engine --formats q4_0,q4_K > $OUT/call4-rust.txt 2>&1; echo "rust rc $?"
tail -8 $OUT/call4-rust.txt
