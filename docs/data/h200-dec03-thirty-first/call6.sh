#!/usr/bin/env bash
# Thirty-first lease, call 6: which formats' tokens meet the power cap. The
# Rust engine, one format at a time, with NVML's power, clocks and
# clock-event reasons sampled every 50 ms (0x4: the software power cap).
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMV_TUNE_CACHE=/tmp/f.db
q=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,temperature.memory,clocks_event_reasons.active
nvidia-smi --query-gpu=$q --format=csv -lms 50 > $OUT/call6-smi.csv 2>&1 &
smi=$!
mark() { echo "$(date +%H:%M:%S.%N) $*" >> $OUT/call6-marks.txt; }
for f in q4_0 q4_K affine4 q8_0 bf16 q4_0; do
	mark "start $f"
	timeout 100 /tmp/re/rust-engine --formats $f --rounds 31 > $OUT/call6-rust-$f.txt 2>&1
	mark "end $f rc $?"
	grep -E "failed|^$f " $OUT/call6-rust-$f.txt | tail -3
done
kill $smi
awk -F', ' 'NR>1 {print $NF}' $OUT/call6-smi.csv | sort | uniq -c
