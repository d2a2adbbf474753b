#!/usr/bin/env bash
# Twenty-eighth lease, call 3: SIGTERM on the GPU with this tree's build
# (sig): a cold q4_0 tune stopped by timeout(1) in its jobs, resumed; the
# same cache with q8_0 added and --refine, stopped in its refinement; the worker processes gone.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
gunzip -kf .gpulead/sig/autotune.gz; chmod +x .gpulead/sig/autotune; A=.gpulead/sig/autotune
timeout -s TERM 25 $A --arch sm_90 --model llama-3-8b --formats q4_0 --cache /tmp/s.db > $R/term1.out 2> $R/term1.err; el "term jobs" $?
tail -2 $R/term1.err; sleep 1; pgrep -fa autotune > $R/left1.txt; echo "processes left: $(wc -l < $R/left1.txt)"
timeout 200 $A --arch sm_90 --model llama-3-8b --formats q4_0 --cache /tmp/s.db > $R/resume.out 2> $R/resume.err; el resume $?
grep -E "skipping|interrupted" $R/resume.err; wc -l < $R/resume.out
timeout -s TERM 75 $A --arch sm_90 --model llama-3-8b --formats q4_0,q8_0 --refine --cache /tmp/s.db > $R/term2.out 2> $R/term2.err; el "term refine" $?
grep -E "refine|interrupted|autotune: [a-z]" $R/term2.err | tail -4 | cut -c1-300; sleep 1; pgrep -fa autotune > $R/left2.txt; echo "processes left: $(wc -l < $R/left2.txt)"
$A show --cache /tmp/s.db > $R/show2.txt 2>&1; grep -c "q4_0\|q8_0" $R/show2.txt
tar -czf $OUT/x.tgz -C $OUT r
