#!/usr/bin/env bash
# Twenty-sixth lease, call 2: block timelines in the token. `tl` is HEAD
# plus probe-timeline.patch: with GEMV_PROBE_TIMELINE_OUT set, every s=3
# block and every chain_read block stamps %globaltimer at entry, after the
# wait, after x, at its first slot / loads done, at release and at exit,
# and bench --chain dumps the last launch of each module after replaying
# the plain, the PDL and each attribution graph. The caches are call 1's
# refined q4_0 and q4_K tunes. head (fb713a2) times the same caches
# without the probe, for what the stamps cost.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/tl/autotune.gz .gpulead/head/autotune.gz
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
gunzip -c .gpulead/db/q4_K_k26.db.gz > /tmp/k.db
k=0
for f in q4_0 q4_K; do
  db=/tmp/q.db; [ $f = q4_K ] && db=/tmp/k.db
  for b in head tl head; do
    k=$((k+1))
    if [ $b = tl ]; then mkdir -p $R/tl_$f; export GEMV_PROBE_TIMELINE_OUT=$R/tl_$f; else unset GEMV_PROBE_TIMELINE_OUT; fi
    timeout 90 .gpulead/$b/autotune bench --chain --compile --attribute --cache $db --model llama-3-8b --formats $f > $R/chain_${f}_${k}_$b.txt 2>&1; el "chain $f $k $b" $?
    grep -E "tuned, PDL: |every shape" $R/chain_${f}_${k}_$b.txt
  done
done
ls -la $R/tl_q4_0 | head
tar -czf $OUT/x.tgz -C $OUT r
