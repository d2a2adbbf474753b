#!/usr/bin/env bash
# Thirty-fifth lease, call 2: HEAD's `autotune bench` (the driver now
# probed before the cache is read) on the refined five-format cache, and
# on a missing cache (its note, then the tune of what it lacks).
export XDG_CACHE_HOME=/tmp/xdg
gunzip -c .gpulead/f4.db.gz > /tmp/f.db
.gpubin/autotune bench --arch sm_90 --formats q4_0,q4_K --shapes 4096x4096,28672x4096 --cache /tmp/f.db 2>&1 | grep -v '^#'
echo "rc=$?"
.gpubin/autotune bench --arch sm_90 --formats q4_0 --shapes 1024x4096 --cache /tmp/none.db 2>&1 | grep -v '^#' | tail -6
echo "rc=$?"
