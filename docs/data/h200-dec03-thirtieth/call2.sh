#!/usr/bin/env bash
# Thirtieth lease, call 2 (the machine of call 1): the C engine
# (scripts/c-engine-gpu.sh) on the twenty-ninth lease's fully refined
# five-format cache (.gpulead/f4.db.gz, carried as .gpubin/tune.db), then
# `autotune bench --chain` of the same cubins on the same machine, for the
# C engine's four formats: the token both ways.
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
[ -x .gpubin/autotune ] || tar xzf .gpulead/bin.tgz
# The variants binary's tests that call 1's 300 s per-binary limit cut
# (TestLateXOnGPU and the tests after it); the ones it finished are skipped.
(cd variants && GEMV_TEST_SPACE=sample timeout 150 ../.gpubin/variants.test -test.v -test.timeout 145s \
	-test.skip 'TestFamiliesOnGPU|TestFamiliesOnHost|TestCompileSpace|TestCompileEveryArch|TestNaNXOnGPU' > $OUT/call2-variants-rest.txt 2>&1
	echo "variants rest rc $?")
grep -E "^--- (FAIL|SKIP)|^(ok|PASS|FAIL)" $OUT/call2-variants-rest.txt
gunzip -c .gpulead/f4.db.gz > .gpubin/tune.db
FORMATS=q4_0,q4_K,q8_0,bf16 timeout 230 bash scripts/c-engine-gpu.sh > $OUT/call2-c-engine.txt 2>&1
echo "c-engine rc $?"
grep -v "^  .* ok$" $OUT/call2-c-engine.txt | tail -40
cp /tmp/gemv-tune.db /tmp/f.db
timeout 200 .gpubin/autotune bench --chain --model llama-3-8b --formats q4_0,q4_K,q8_0,bf16 --cache /tmp/f.db > $OUT/call2-chain.txt 2>$OUT/call2-chain.err
echo "chain rc $?"
cat $OUT/call2-chain.txt; tail -3 $OUT/call2-chain.err
