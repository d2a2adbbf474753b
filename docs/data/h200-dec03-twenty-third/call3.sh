#!/usr/bin/env bash
# Twenty-third lease, call 3: an s=3 warp prefetches its third item's bytes
# before the wait instead of (PFITEM=1) or besides (PFITEM=2) the first
# kilobyte of its first rows: the winners alone, then call 1's q4_0 token
# with every shape attributed.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s)
N1=next:GEMV_PROBE_PFITEM=1 N2=next:GEMV_PROBE_PFITEM=2
for c in "r2f0u2s3w16l2a1 4096x4096 o" "r2f0u2s3w16g7l2a1 28672x4096 gu" "r1f0u4s3w16l2a1 4096x14336 down"; do
  read -r id shape name <<<"$c"
  mkdir -p $R/$name
  OUT=$R/$name timeout 100 scripts/ab-kernels.sh run q4_0 $shape $id base $N1 $N2 > $R/$name/log.txt 2>&1
  echo "$name exit $? at $(( $(date +%s) - t0 )) s"; grep -v s0w8 $R/$name/ab_summary.txt; tail -2 $R/$name/log.txt
done
gunzip -c .gpulead/db/q4_0.db.gz > /tmp/ab-chain-llama-3-8b-q4_0.db
mkdir -p $R/chain
CHAIN_ARGS=--attribute OUT=$R/chain timeout $(( 585 - ($(date +%s) - t0) )) scripts/ab-kernels.sh chain q4_0 base $N1 $N2
echo "chain exit $? at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/x.tgz -C $OUT r
