#!/usr/bin/env bash
# Twenty-ninth lease, call 4: would a third refinement round pay? On
# call 2's cache (every format refined, two rounds), `bench --chain
# --refine` of the 4-bit formats: the cache's other candidates in the
# refined token, recording nothing.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
gunzip -kf .gpulead/res/autotune.gz; chmod +x .gpulead/res/autotune; A=.gpulead/res/autotune
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
timeout 400 $A bench --chain --refine --cache /tmp/f.db --model llama-3-8b --formats q4_K,q4_0,affine4 > $R/refine3.txt 2>&1; el refine3 $?
grep -E "refine|faster" $R/refine3.txt | cut -c1-220
tar -czf $OUT/x.tgz -C $OUT r
