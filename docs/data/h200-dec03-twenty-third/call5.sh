#!/usr/bin/env bash
# Twenty-third lease, call 5: call 1's q4_0 token attributed both ways: each
# shape's GEMVs replaced by reads among GEMVs (base), and each shape's GEMVs
# kept among reads (keep, GEMV_PROBE_ATTR_KEEP=1), A B B A.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s)
gunzip -c .gpulead/db/q4_0.db.gz > /tmp/ab-chain-llama-3-8b-q4_0.db
CHAIN_ARGS=--attribute OUT=$R timeout 400 scripts/ab-kernels.sh chain q4_0 keep keep:GEMV_PROBE_ATTR_KEEP=1
echo "chain exit $? at $(( $(date +%s) - t0 )) s"
for f in $R/chain_[1-4]*.txt; do echo "== $f"; grep -A7 "each shape's GEMVs in turn" $f | tail -5; done
tar -czf $OUT/x.tgz -C $OUT r
