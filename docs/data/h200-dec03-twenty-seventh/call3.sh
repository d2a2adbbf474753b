#!/usr/bin/env bash
# Twenty-seventh lease, call 3: a warp's first ring copies issued after
# it has quantized its x (probe GEMV_PROBE_C=1, build pc; before the
# block's __syncthreads), against head: q4_0 tokens A B B A on the
# twenty-sixth lease's refined cache, then the block timeline (tlc: the
# same plus probe-timeline, stamp 4 = thread 0's x landed) for 0 and 1.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
for b in head pc tlc; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
gunzip -c .gpulead/db/q4_0_h26.db.gz > /tmp/q.db
k=0
run() { k=$((k+1)); f=$R/chain_${k}_$1_c$2.txt; GEMV_PROBE_C=$2 timeout 50 .gpulead/$1/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $f 2>&1; el "chain $k $1 $2" $?; grep -E "tuned, PDL  " $f | cut -c1-150; }
run head 0; run pc 1; run pc 1; run head 0
for v in 0 1; do mkdir -p $R/tl$v; GEMV_PROBE_C=$v GEMV_PROBE_TIMELINE_OUT=$R/tl$v timeout 40 .gpulead/tlc/autotune bench --chain --compile --cache /tmp/q.db --model llama-3-8b --formats q4_0 > $R/chain_tl$v.txt 2>&1; el "tl $v" $?; rm -f $R/tl$v/tl_plain.csv; done
python3 docs/data/h200-dec03-twenty-sixth/timeline.py $R/tl*/tl_pdl.csv > $R/timeline.txt 2>&1
python3 .gpulead/pairs.py $R/tl*/tl_pdl.csv >> $R/timeline.txt 2>&1; cat $R/timeline.txt
tar -czf $OUT/x.tgz -C $OUT r
