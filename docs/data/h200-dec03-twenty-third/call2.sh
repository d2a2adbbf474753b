#!/usr/bin/env bash
# Twenty-third lease, call 2: the s=3 winners of o, gate_up and down launched
# alone with 0, 1024 and 2048 bytes a row prefetched before the wait, each
# with and without a 4000-cycle spin after the wait, and with the first
# item read by plain loads (probe build "first"); then the q4_0 token of
# call 1's tune by base and the probe.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s)
F1=first:GEMV_PROBE_FIRST=1 F2=first:GEMV_PROBE_FIRST=1,GEMV_PROBE_FIRST_PF=1
for c in "r2f0u2s3w16l2a1 4096x4096 o pf2k spin2k" "r2f0u2s3w16g7l2a1 28672x4096 gu" "r1f0u4s3w16l2a1 4096x14336 down"; do
  read -r id shape name extra <<<"$c"
  mkdir -p $R/$name
  OUT=$R/$name timeout 200 scripts/ab-kernels.sh run q4_0 $shape $id base pf0 spin0 spin1k $F1 $F2 $extra > $R/$name/log.txt 2>&1
  echo "$name exit $? at $(( $(date +%s) - t0 )) s"; cat $R/$name/ab_summary.txt; tail -3 $R/$name/log.txt
done
gunzip -c .gpulead/db/q4_0.db.gz > /tmp/ab-chain-llama-3-8b-q4_0.db
mkdir -p $R/chain
OUT=$R/chain timeout $(( 585 - ($(date +%s) - t0) )) scripts/ab-kernels.sh chain q4_0 base $F1 $F2
echo "chain exit $? at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/x.tgz -C $OUT r
