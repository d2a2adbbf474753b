#!/usr/bin/env bash
# For the next lease (built, not run): the landed build's cold refined
# tunes of q4_0 and q4_K and their tokens attributed (`head`,
# `scripts/ab-kernels.sh build head` at 31822d8), then the q4_0 token's
# block timeline with the first fill unfenced (`tl`: the same tree plus
# probe-timeline.patch, built with go build into .gpulead/tl/). Carry
# .gpulead. About 330 s.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/head/autotune.gz .gpulead/tl/autotune.gz
chmod +x .gpulead/head/autotune .gpulead/tl/autotune
timeout 260 .gpulead/head/autotune --arch sm_90 --model llama-3-8b --formats q4_0,q4_K --refine --cache /tmp/h.db > $R/tune.txt 2>&1; el tune $?
gzip -c /tmp/h.db > $R/h.db.gz
grep -E "refine|chosen in the" $R/tune.txt | cut -c1-200
timeout 90 .gpulead/head/autotune bench --chain --compile --attribute --cache /tmp/h.db --model llama-3-8b --formats q4_0,q4_K > $R/chain_head.txt 2>&1; el "chain head" $?
grep -E "tuned, PDL: |every shape" $R/chain_head.txt
mkdir -p $R/tl; GEMV_PROBE_TIMELINE_OUT=$R/tl timeout 40 .gpulead/tl/autotune bench --chain --compile --cache /tmp/h.db --model llama-3-8b --formats q4_0 > $R/chain_tl.txt 2>&1; el "chain tl" $?
python3 docs/data/h200-dec03-twenty-sixth/timeline.py $R/tl/tl_pdl.csv $R/tl/tl_plain.csv > $R/timeline.txt 2>&1; cat $R/timeline.txt
tar -czf $OUT/x.tgz -C $OUT r
