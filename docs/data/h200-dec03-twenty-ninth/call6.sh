#!/usr/bin/env bash
# Twenty-ninth lease, call 6: the tune path of call 1's slow stop, by the
# build with the context checked in Chain (fin, HEAD at the call): on
# call 2's cache, `--force --formats q4_0 --refine` re-tunes q4_0 and
# refines it; SIGTERM at 80 s (in the refinement), the time to exit and
# the message; then the same command without --force resumes it.
set -u
mkdir -p $OUT/r; R=$OUT/r
export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
gunzip -kf .gpulead/fin/autotune.gz; chmod +x .gpulead/fin/autotune; A=.gpulead/fin/autotune
CMD="$A --arch sm_90 --model llama-3-8b --formats q4_0 --refine --cache /tmp/f.db"
$CMD --force > $R/force.out 2> $R/force.err &
pid=$!; sleep 80; t=$(date +%s.%N); kill -TERM $pid; wait $pid; rc=$?
echo "exit $rc, $(python3 -c "print(round($(date +%s.%N) - $t, 2))") s after SIGTERM" | tee $R/stop.txt
grep -E "refine|interrupted" $R/force.err | cut -c1-250 | tee -a $R/stop.txt
sleep 1; pgrep -fa "autotune" | grep -v pgrep | tee -a $R/stop.txt
timeout 150 $CMD > $R/resume.out 2> $R/resume.err; echo "resume exit $?" | tee -a $R/stop.txt
grep -E "refine|interrupted|skipping" $R/resume.err | cut -c1-250 | tee -a $R/stop.txt
tar -czf $OUT/x.tgz -C $OUT r
