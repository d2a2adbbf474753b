#!/bin/bash
# The C engine (examples/c-engine) on a GPU machine, from the repository
# root, after building here:
#   mkdir -p .gpubin && go build -ldflags="-s -w" -o .gpubin/autotune ./cmd/autotune &&
#     go build -buildmode=c-shared -o .gpubin/libgemvtune.so ./libgemvtune
# (carry .gpubin; $OUT is where files go back). It builds the engine with
# the machine's gcc and CUDA, tunes llama-3-8b for the engine's formats
# unless .gpubin/tune.db is there, then runs the engine on the tuned cache
# and again with GEMV_FORCE_VARIANT=v1 (the rollback, same binary).
set -u
export XDG_CACHE_HOME=/tmp/xdg
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
CUDA=${CUDA:-/usr/local/cuda}
cp .gpubin/libgemvtune.so examples/c-engine/ || exit 1
make -s -C examples/c-engine CUDA="$CUDA" 2>&1 | tail -30
[ -x examples/c-engine/engine ] || { echo "engine did not build"; exit 1; }
DB=/tmp/gemv-tune.db
FORMATS=${FORMATS:-q4_0,q4_K,q8_0,bf16}
if [ -f .gpubin/tune.db ]; then
	cp .gpubin/tune.db $DB
else
	t0=$(date +%s)
	timeout 400 .gpubin/autotune --arch sm_90 --model llama-3-8b --formats "$FORMATS" --cache $DB --json 2>$OUT/tune.err | gzip -c >$OUT/run.json.gz
	echo "tune exit ${PIPESTATUS[0]} wall $(( $(date +%s) - t0 )) s"
	tail -2 $OUT/tune.err
	cp $DB $OUT/tune.db
fi
.gpubin/autotune show --cache $DB >$OUT/show.txt 2>&1
export LD_LIBRARY_PATH=$CUDA/lib64:${LD_LIBRARY_PATH:-}
GEMV_TUNE_CACHE=$DB timeout 240 examples/c-engine/engine --formats "$FORMATS" 2>&1 | tee $OUT/engine-tuned.txt | grep -v "^  .* ok$"
echo "engine (tuned) exit ${PIPESTATUS[0]}"
GEMV_TUNE_CACHE=$DB GEMV_FORCE_VARIANT=v1 timeout 240 examples/c-engine/engine --formats "$FORMATS" 2>&1 | tee $OUT/engine-stock.txt | grep -v "^  .* ok$"
echo "engine (GEMV_FORCE_VARIANT=v1) exit ${PIPESTATUS[0]}"
