#!/usr/bin/env bash
# Thirty-first lease, call 8 (the machine of call 7, right after it): the
# Rust engine's q4_K and q8_0 tokens, 31 rounds of 10 back-to-back graph
# replays each, with NVML sampled every 50 ms: does this machine meet the
# power cap the way call 5's and 6's did?
mkdir -p $OUT /tmp/re && cp .gpulead/rust-engine /tmp/re/ && gunzip -c .gpulead/libgemvtune.so.gz > /tmp/re/libgemvtune.so
[ -f /tmp/f.db ] || gunzip -c .gpulead/f4.db.gz > /tmp/f.db
nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,clocks_event_reasons.active --format=csv -lms 50 > $OUT/call8-smi.csv & s=$!
for f in q4_K q8_0; do GEMV_TUNE_CACHE=/tmp/f.db /tmp/re/rust-engine --formats $f --rounds 31 2>&1 | grep -E "^$f .*PDL|failed" | tail -2; done | tee $OUT/call8-rust.txt
kill $s; awk -F', ' 'NR>1 {print $NF}' $OUT/call8-smi.csv | sort | uniq -c
