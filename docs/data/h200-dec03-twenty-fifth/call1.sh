#!/usr/bin/env bash
# Twenty-fourth lease, call 4 (built, not yet run): s=3 grids balanced over
# all SMs (probe-balance.patch; `bal` is HEAD 88064c9 with it, the variants
# test binary too, GEMV_PROBE_BALANCE=132). The GPU tests with the probe on,
# then call 2's refined q4_0 cache and call 3's q4_K/affine4 cache, each
# token by HEAD, by the probe on 132 SMs and, as a control, by the probe
# on 128 (the same grids as HEAD's but for the lm head's, the rows in
# contiguous runs per block), A B C C B A, attributed.
set -u
mkdir -p $OUT/r; R=$OUT/r
t0=$(date +%s); el() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s"; }
export XDG_CACHE_HOME=/tmp/xdg
(cd variants && GEMV_PROBE_BALANCE=132 GEMV_TEST_SPACE=sample timeout 120 ../.gpubin/variants.test -test.short -test.run 'TestFamiliesOnGPU/(q4_0|q4_K)$|TestLateXOnGPU/(q4_0|q4_K)$' -test.v) > $R/vtest.txt 2>&1; el vtest $?
grep -E "^(--- |ok|PASS|FAIL)|--- FAIL" $R/vtest.txt | tail -6
# The refined caches of calls 2 and 3 where this machine kept them (ignored
# by git); without them ab-kernels.sh runs a cold tune (not refined) first.
[ -f .gpulead/db/q4_0_refined.db.gz ] && gunzip -c .gpulead/db/q4_0_refined.db.gz > /tmp/ab-chain-llama-3-8b-q4_0.db
[ -f .gpulead/db/k_refined.db.gz ] && gunzip -c .gpulead/db/k_refined.db.gz > /tmp/ab-chain-llama-3-8b-q4_K_affine4.db
mkdir -p $R/q4_0 $R/k
CHAIN_ARGS=--attribute OUT=$R/q4_0 timeout 220 scripts/ab-kernels.sh chain q4_0 base bal:GEMV_PROBE_BALANCE=132 bal:GEMV_PROBE_BALANCE=128; el "chain q4_0" $?
CHAIN_ARGS=--attribute OUT=$R/k timeout $(( 520 - ($(date +%s) - t0) )) scripts/ab-kernels.sh chain q4_K,affine4 base bal:GEMV_PROBE_BALANCE=132 bal:GEMV_PROBE_BALANCE=128; el "chain k" $?
# Launched alone: q4_0's refined winners of gate_up, down and o, and gate_up's
# one-per-SM twin.
mkdir -p $R/ab
OUT=$R/ab timeout $(( 585 - ($(date +%s) - t0) )) scripts/ab-kernels.sh run q4_0 28672x4096,4096x14336,4096x4096 r1f0u2s3w16g7l2a1,r4f0u2s3w8g7l2a1,r2f0u4s3w16l2a1,r1f0u4s3w16g2l2a1 base bal:GEMV_PROBE_BALANCE=132; el ab $?
tar -czf $OUT/x.tgz -C $OUT r
