#!/bin/bash
# The fleet issue's H200 check, from the repository root after
#   go build -o .gpubin/autotune ./cmd/autotune
#   go build -o .gpubin/devregistry ./scripts/devregistry
# (carry .gpubin; $OUT is where files go back): llama-3-8b tuned as two
# shards, one after the other, each pushed to a registry on this machine's
# loopback address, both pulled and merged into an empty cache; then one
# full tune; then the lookups of both caches side by side and
# `autotune compare` of the full run against the two parts. Wall times in
# $OUT/fleet.txt.
export XDG_CACHE_HOME=/tmp/xdg
A=$(pwd)/.gpubin/autotune
REF=127.0.0.1:5000/gemvtune/tunes:llama-3-8b-h200
.gpubin/devregistry 127.0.0.1:5000 & reg=$!
trap 'kill $reg' EXIT
sleep 1
rm -f /tmp/shard*.db /tmp/merged.db /tmp/full.db
for i in 0 1; do
	t0=$(date +%s)
	$A --arch sm_90 --model llama-3-8b --shard $i/2 --json --cache /tmp/shard$i.db 2>$OUT/shard$i.err | gzip -c > $OUT/shard$i.json.gz
	echo "shard $i/2 exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/fleet.txt
	$A push $REF-part-$i --insecure --cache /tmp/shard$i.db | tee -a $OUT/fleet.txt
done
for i in 0 1; do $A pull $REF-part-$i --insecure --cache /tmp/merged.db | tee -a $OUT/fleet.txt; done
t0=$(date +%s)
$A --arch sm_90 --model llama-3-8b --json --cache /tmp/full.db 2>$OUT/full.err | gzip -c > $OUT/full.json.gz
echo "full exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s" | tee -a $OUT/fleet.txt
$A show --cache /tmp/merged.db > $OUT/show_merged.txt 2>&1
$A show --cache /tmp/full.db > $OUT/show_full.txt 2>&1
python3 - "$OUT" <<'PY'
import gzip, json, sys
out = sys.argv[1]
parts = []
for i in (0, 1):
    parts += json.load(gzip.open(f"{out}/shard{i}.json.gz"))
json.dump(parts, gzip.open(f"{out}/shards.json.gz", "wt"))
PY
$A compare $OUT/full.json.gz $OUT/shards.json.gz > $OUT/compare.txt 2>&1; echo "compare exit $?" | tee -a $OUT/fleet.txt
tail -15 $OUT/compare.txt
