#!/usr/bin/env bash
# Twenty-ninth lease, call 2: the same build and command as call 1 on
# call 1's cache (its second stop), carried to a fresh machine: the run
# that finishes the refinement, a run that finds everything refined, the
# cache (`show`), and the token of every format (`bench --chain`).
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 580 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/res/autotune.gz; chmod +x .gpulead/res/autotune; A=.gpulead/res/autotune
gunzip -c .gpulead/f2.db.gz > /tmp/f.db
F=q4_0,q4_K,affine4,q8_0,bf16
CMD="$A --arch sm_90 --model llama-3-8b --formats $F --refine --cache /tmp/f.db"
timeout -s TERM 300 $CMD > $R/run3.out 2> $R/run3.err; el run3 $?
grep -E "refine|interrupted|skipping|nothing" $R/run3.err | cut -c1-250
timeout -s TERM 60 $CMD > $R/run4.out 2> $R/run4.err; el run4 $?
cat $R/run4.err | cut -c1-250
$A show --cache /tmp/f.db > $R/show.txt 2>&1; sed -n '/refined in/,$p' $R/show.txt
gzip -c /tmp/f.db > $R/f4.db.gz
tar -czf $OUT/x.tgz -C $OUT r
timeout $(( $(left) - 5 )) $A bench --chain --cache /tmp/f.db --model llama-3-8b --formats $F > $R/chain.txt 2>&1; el chain $?
grep -E "tuned, PDL: |stock  |tuned  |tuned, PDL  |reads|as recorded" $R/chain.txt | cut -c1-160
tar -czf $OUT/x.tgz -C $OUT r
