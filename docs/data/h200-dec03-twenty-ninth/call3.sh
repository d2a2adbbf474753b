#!/usr/bin/env bash
# Twenty-ninth lease, call 3: the GPU tests of the tuner and cmd/autotune
# (-short) with the build of the refine change (after
# `GPU_TEST_PKGS="./tuner ./cmd/autotune" scripts/gpu-test.sh build`,
# .gpubin carried).
mkdir -p $OUT; export XDG_CACHE_HOME=/tmp/xdg
(cd tuner && timeout 250 ../.gpubin/tuner.test -test.short -test.v -test.timeout 245s > $OUT/test-tuner.txt 2>&1; echo "tuner rc $?")
(cd cmd/autotune && timeout 200 ../../.gpubin/cmd_autotune.test -test.short -test.v -test.timeout 195s > $OUT/test-cmd.txt 2>&1; echo "cmd rc $?")
