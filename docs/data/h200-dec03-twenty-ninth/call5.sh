#!/usr/bin/env bash
# Twenty-ninth lease, call 5: how long a token's refinement takes to stop
# on SIGTERM, by call 1's build (res) and by the build whose Chain looks
# at the context between its float64 checks and its timed batches (stop):
# `bench --chain --refine` of call 2's refined q4_0 cache, SIGTERM at 25 s
# (during the first run of the token with its alternatives), twice each.
set -u
mkdir -p $OUT/r; R=$OUT/r
export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
for b in res stop; do gunzip -kf .gpulead/$b/autotune.gz; chmod +x .gpulead/$b/autotune; done
for b in res stop stop res; do
	A=.gpulead/$b/autotune
	$A bench --chain --refine --cache /tmp/f.db --model llama-3-8b --formats q4_0 > $R/term_$b.out 2> $R/term_$b.err &
	pid=$!; sleep 25; t=$(date +%s.%N); kill -TERM $pid; wait $pid; rc=$?
	echo "$b: exit $rc, $(python3 -c "print(round($(date +%s.%N) - $t, 2))") s after SIGTERM: $(tail -1 $R/term_$b.err | cut -c1-160)"
	sleep 1; pgrep -fa "autotune bench" | grep -v pgrep || true
done | tee $R/stop.txt
tar -czf $OUT/x.tgz -C $OUT r
