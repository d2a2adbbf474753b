#!/usr/bin/env bash
# Thirty-first lease, call 5: why q4_K's token has two speeds (about 1145
# and 1165 µs) and the C engine gets the faster one where the Rust and
# Python engines get the slower. The C engine's f16 conversion flushed
# subnormal halves to zero, so its q4_K weights had every dmin and about a
# third of the d scales zero; it now keeps them. q4_K's token by the C
# engine as it was (engine-flush.c, carried in .gpulead) and as it is, in
# turn A B A B, then the Rust engine, with NVML's power, clocks,
# temperatures and clock-event reasons sampled every 50 ms.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
mkdir -p /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
export GEMV_TUNE_CACHE=/tmp/f.db LD_LIBRARY_PATH=/usr/local/cuda/lib64
cp /tmp/re/libgemvtune.so examples/c-engine/ && make -s -C examples/c-engine CUDA=/usr/local/cuda 2>&1 | tail -3
cc -O2 -std=c11 -Ilibgemvtune -I/usr/local/cuda/include -o /tmp/engine-flush .gpulead/engine-flush.c \
	-Lexamples/c-engine -lgemvtune -Wl,-rpath,$PWD/examples/c-engine -L/usr/local/cuda/lib64 -lnvrtc \
	-L/usr/local/cuda/lib64/stubs -lcuda -lm 2>&1 | tail -3
q=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,temperature.memory
r=clocks_event_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv,noheader >/dev/null 2>&1 || r=clocks_throttle_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv -lms 50 > $OUT/call5-smi.csv 2>&1 &
smi=$!
mark() { echo "$(date +%H:%M:%S.%N) $*" >> $OUT/call5-marks.txt; }
for run in A1:/tmp/engine-flush B1:examples/c-engine/engine A2:/tmp/engine-flush B2:examples/c-engine/engine; do
	mark "start ${run%%:*} ${run#*:}"
	timeout 100 ${run#*:} --formats q4_K --rounds 31 > $OUT/call5-c-${run%%:*}.txt 2>&1
	mark "end ${run%%:*} rc $?"
	echo "${run%%:*} ${run#*:}"; grep -E "failed|^q4_K " $OUT/call5-c-${run%%:*}.txt | tail -3
done
mark "start rust"
timeout 100 /tmp/re/rust-engine --formats q4_K --rounds 31 > $OUT/call5-rust.txt 2>&1
mark "end rust rc $?"
echo rust; grep -E "failed|^q4_K " $OUT/call5-rust.txt | tail -3
kill $smi
sort -t, -k2 -n $OUT/call5-smi.csv | tail -2
awk -F, 'NR>1 {print $NF}' $OUT/call5-smi.csv | sort | uniq -c
