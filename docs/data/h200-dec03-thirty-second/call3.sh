#!/usr/bin/env bash
# Thirty-second lease, call 3: the rest of the formats under sustained
# decode. `bench --chain --batch-tokens 100` of HEAD (7d3ed3c) on the
# twenty-ninth lease's refined cache for q4_0, affine4 and bf16 (call 1
# had q8_0 and q4_K), with NVML sampled every 100 ms.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
q=timestamp,power.draw,power.limit,clocks.sm,clocks.mem,temperature.gpu,temperature.memory
r=clocks_event_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv,noheader >/dev/null 2>&1 || r=clocks_throttle_reasons.active
nvidia-smi --query-gpu=$q,$r --format=csv -lms 100 > $OUT/call3-smi.csv 2>&1 &
smi=$!
mark() { echo "$(date +%H:%M:%S.%N) $*" >> $OUT/call3-marks.txt; }
for f in q4_0 affine4 bf16; do
	mark "start $f"
	timeout 170 .gpulead/autotune bench --chain --batch-tokens 100 --model llama-3-8b --formats $f --cache /tmp/f.db > $OUT/call3-chain_$f.txt 2>&1
	mark "end $f rc $?"
	grep -E "tuned, PDL |reads, PDL, x " $OUT/call3-chain_$f.txt | cut -c1-200
done
kill $smi
