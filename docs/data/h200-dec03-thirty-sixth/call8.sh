#!/usr/bin/env bash
# Thirty-sixth lease, call 8: HEAD after internal/atomicfile: the compile cache and report
# (new file renamed into place) on the GPU: a cold tune of one job into a
# new cache, show, report, and the same tune through a symbolic link.
export XDG_CACHE_HOME=/tmp/xdg
A=$(pwd)/.gpubin/autotune
cd /tmp && mkdir -p w && cd w
s=$(date +%s)
$A --arch sm_90 --shapes 4096x4096 --formats q4_0 --cache tune.db > tune.txt 2> tune.err; echo "tune rc $? $(( $(date +%s) - s )) s"
tail -3 tune.txt; tail -2 tune.err
$A show --cache tune.db | cut -c1-120 | head -5
$A report --cache tune.db -o report.html; echo "report rc $?"; ls -la report.html
touch target && ln -s target link.db
$A --arch sm_90 --shapes 4096x4096 --formats q4_0 --cache link.db; echo "tune via link rc $?"; ls -la target
cp tune.txt tune.err $OUT/ 2>/dev/null
ls -la $XDG_CACHE_HOME/gemvtune/* 2>/dev/null | head -3; find $XDG_CACHE_HOME -name "*.tmp" | wc -l; find $XDG_CACHE_HOME -name "*.cubin" | wc -l
