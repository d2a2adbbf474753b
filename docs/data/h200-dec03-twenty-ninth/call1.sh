#!/usr/bin/env bash
# Twenty-ninth lease, call 1: --refine resumes (build of 62d883f, HEAD at
# the call): a cold refined tune of five formats stopped by SIGTERM in its
# refinement, then the same command, which resumes the refinement (and is
# stopped again if the call's time runs out); the cache's refined marks
# after each (`show`).
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
left() { echo $(( 580 - ($(date +%s) - t0) )); }
export XDG_CACHE_HOME=/tmp/xdg
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv > $R/smi.txt 2>&1
gunzip -kf .gpulead/res/autotune.gz; chmod +x .gpulead/res/autotune; A=.gpulead/res/autotune
F=q4_0,q4_K,affine4,q8_0,bf16
CMD="$A --arch sm_90 --model llama-3-8b --formats $F --refine --cache /tmp/f.db"
timeout -s TERM 330 $CMD > $R/run1.out 2> $R/run1.err; el run1 $?
grep -E "refine|interrupted" $R/run1.err | cut -c1-250; sleep 1; pgrep -fa autotune > $R/left1.txt; echo "processes left: $(wc -l < $R/left1.txt)"
$A show --cache /tmp/f.db > $R/show1.txt 2>&1; sed -n '/refined in/,$p' $R/show1.txt
gzip -c /tmp/f.db > $R/f1.db.gz
tar -czf $OUT/x.tgz -C $OUT r
timeout -s TERM $(( $(left) - 15 )) $CMD > $R/run2.out 2> $R/run2.err; el run2 $?
grep -E "refine|interrupted|skipping|nothing" $R/run2.err | cut -c1-250; sleep 1; pgrep -fa autotune > $R/left2.txt; echo "processes left: $(wc -l < $R/left2.txt)"
$A show --cache /tmp/f.db > $R/show2.txt 2>&1; sed -n '/refined in/,$p' $R/show2.txt
gzip -c /tmp/f.db > $R/f2.db.gz
tar -czf $OUT/x.tgz -C $OUT r
