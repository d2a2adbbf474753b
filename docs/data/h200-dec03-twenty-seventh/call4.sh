#!/usr/bin/env bash
# For the next lease (built, not run): is the SM's bulk-copy issue what
# holds an SM's second block? `tld` (f192034 + probe-timeline-issue.patch
# of docs/data/h200-dec03-twenty-seventh: stamp 3 = warp 0's first copies
# issued, stamp 4 = thread 0's first x load landed) on the twenty-sixth
# lease's refined q4_0 cache, then that cache's token trying gate_up and
# the lm head with copies twice as long (u=4). Carry .gpulead. About 100 s.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
for b in head tld; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
mkdir -p $R/tl; GEMV_PROBE_TIMELINE_OUT=$R/tl timeout 45 .gpulead/tld/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl.txt 2>&1; el tl $?
rm -f $R/tl/tl_plain.csv; python3 .gpulead/pairs.py $R/tl/tl_pdl.csv > $R/pairs.txt 2>&1; cat $R/pairs.txt
timeout 120 .gpulead/head/autotune bench --chain --compile --refine --cache /tmp/q.db --model llama-3-8b --formats q4_0 \
  --try q4_0:28672x4096:r1f0u4s3w16g7l2a1,q4_0:128256x4096:r1f0u4s3w16g31l2a1 > $R/try.txt 2>&1; el try $?
tail -20 $R/try.txt
tar -czf $OUT/x.tgz -C $OUT r
