#!/usr/bin/env bash
# Twenty-third lease, call 1: DRAM bytes per GEMV launch (ncu) with 0, 1024
# and 2048 bytes a row prefetched before the wait; then the q4_0 token with
# and without the kilobyte, attributed per shape.
set -u
mkdir -p $OUT/r; R=$OUT/r
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
ncu --version > $R/ncu_version.txt 2>&1
for b in base pf0 pf2k; do gunzip -kf .gpulead/$b/autotune.gz; done
M=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_bytes.sum,launch__grid_size,launch__block_size
t0=$(date +%s)
for c in "r2f0u2s3w16g7l2a1 28672x4096 gu" "r2f0u2s3w16l2a1 4096x4096 o" "r1f0u4s3w16l2a1 4096x14336 down"; do
  read -r id shape name <<<"$c"
  for b in base pf0 pf2k; do
    rep=/tmp/ncu_${b}_$name
    GEMVTUNE_WORKER_WRAP="ncu --clock-control none --metrics $M -k regex:^gemv\$ --launch-count 14 -f -o $rep --log-file $R/ncu_${b}_${name}_log.txt" \
      timeout 100 .gpulead/$b/autotune bench --arch sm_90 --format q4_0 --shape $shape --variants $id > $R/ncu_${b}_${name}_bench.txt 2>&1
    echo "ncu $b $name exit $? at $(( $(date +%s) - t0 )) s"
    ncu -i $rep.ncu-rep --csv --page raw > $R/ncu_${b}_${name}.csv 2>&1
  done
done
CHAIN_ARGS=--attribute OUT=$R timeout $(( 560 - ($(date +%s) - t0) )) scripts/ab-kernels.sh chain q4_0 base pf0
echo "chain exit $? at $(( $(date +%s) - t0 )) s"
tar -czf $OUT/x.tgz -C $OUT r
