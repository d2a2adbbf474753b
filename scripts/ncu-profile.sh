#!/usr/bin/env bash
# ncu-profile.sh: hardware counters (Nsight Compute) of variants on the
# device, to see where a kernel loses against the read ceiling.
#
#   scripts/ncu-profile.sh AUTOTUNE FORMAT ID SHAPE NAME
#
# Runs `AUTOTUNE bench --variants ID --format FORMAT --shape SHAPE` under
# ncu (clocks left alone, as the device notes ask) and profiles the first
# LAUNCHES (default 4) launches of the kernel named by KERNEL (default gemv:
# the verification launches of stock and of ID, then the first timed ones;
# the details say each one's block size and registers; SKIP skips that
# many first). KERNEL=read_ceiling catches the 1 GiB ceiling's launches
# first, and how many there are varies (it warms up for a time), so no
# SKIP reliably reaches the same-bytes read. Writes
# $OUT/ncu_NAME.txt (details page, every section of --set full) and
# $OUT/ncu_NAME_sass.csv.gz (per-SASS-instruction counters and warp-stall
# samples). ncu must read counters there: Firecracker machines do.
set -uo pipefail
[ $# -eq 5 ] || { echo "usage: ncu-profile.sh AUTOTUNE FORMAT ID SHAPE NAME" >&2; exit 2; }
A=$1 F=$2 ID=$3 S=$4 N=$5
: "${OUT:?set OUT}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/xdg}
rep=/tmp/ncu_$N
# The kernels run in the tuner's worker process, which Go starts without
# libc, so ncu does not follow it there: the worker is started under ncu
# instead (GEMVTUNE_WORKER_WRAP; its log goes to a file, its stdout carries
# the worker protocol).
GEMVTUNE_WORKER_WRAP="ncu --clock-control none --set full --import-source no --log-file $OUT/ncu_${N}_log.txt -k regex:^${KERNEL:-gemv}\$ --launch-skip ${SKIP:-0} --launch-count ${LAUNCHES:-4} -f -o $rep" \
	timeout ${NCU_TIMEOUT:-240} "$A" bench --arch sm_90 --format "$F" --shape "$S" --variants "$ID" >"$OUT/ncu_${N}_bench.txt" 2>&1
echo "ncu $N exit $?"
ncu -i "$rep.ncu-rep" --page details >"$OUT/ncu_$N.txt" 2>&1
ncu -i "$rep.ncu-rep" --page source --print-source sass --csv 2>/dev/null | gzip -c >"$OUT/ncu_${N}_sass.csv.gz"
grep -E 'Duration|DRAM Throughput|Memory Throughput|Block Size|Registers Per|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Issue Slots Busy|Achieved Occupancy' "$OUT/ncu_$N.txt" | head -60
