#!/usr/bin/env bash
# Twenty-eighth lease, call 2: where issue 21 stands for five formats on
# one machine with HEAD (38ab689): a cold refined tune of q4_0, q4_K,
# affine4, q8_0 and bf16, its winners alone (`show`: % of the same-bytes
# read), and its token (`bench --chain --compile`: stock, tuned, tuned
# with PDL edges, reads of the same bytes).
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 585 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/head/autotune.gz; chmod +x .gpulead/head/autotune; A=.gpulead/head/autotune
F=q4_0,q4_K,affine4,q8_0,bf16
timeout 390 $A --arch sm_90 --model llama-3-8b --formats $F --refine --cache /tmp/f.db > $R/tune.txt 2>&1; el tune $?
gzip -c /tmp/f.db > $R/five_h28.db.gz
$A show --cache /tmp/f.db > $R/show.txt 2>&1
grep -E "refine|round" $R/tune.txt | cut -c1-220
tar -czf $OUT/x.tgz -C $OUT r
timeout $(( $(left) - 5 )) $A bench --chain --compile --cache /tmp/f.db --model llama-3-8b --formats $F > $R/chain.txt 2>&1; el chain $?
grep -E "tuned, PDL: |stock  |tuned  |tuned, PDL  |reads" $R/chain.txt | cut -c1-160
tar -czf $OUT/x.tgz -C $OUT r
