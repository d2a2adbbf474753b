#!/usr/bin/env bash
# gpu-test.sh builds GPU test binaries here and runs them on a GPU machine
# that has no Go toolchain.
#
#   scripts/gpu-test.sh build   # here: one test binary per package with tests,
#                               # plus autotune, into .gpubin/ (ignored by git)
#   scripts/gpu-test.sh run     # on the GPU machine: autotune doctor, then every
#                               # .gpubin/*.test -test.v; exits 1 if any fails
#
# Packages: every package whose tests import internal/gpu or
# internal/gpu/gputest (how a test gets a GPU, or skips without one), so a
# package that adds GPU tests is picked up without editing this script.
# GPU_TEST_PKGS narrows the patterns searched (default ./...), e.g.
#   GPU_TEST_PKGS="./internal/gpu/... ./tuner" scripts/gpu-test.sh build
# Binaries are stripped: what the GPU machine receives is limited (64 MiB).
#
# GPU_TEST_TIMEOUT (run): each test binary's limit, default 900s; the
# variants binary alone runs past 300 s on an H200 with GEMV_TEST_SPACE=sample.
#
# GPU_TEST_NVRTC=/path/to/libnvrtc.so.X (build): bundle that NVRTC (gzipped,
# with its builtins) into .gpubin/nvrtc; run uses it only when the GPU
# machine has no NVRTC of its own.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/.gpubin"
MANIFEST="$BIN/tests.tsv" # binary<TAB>package folder relative to ROOT
TEST_TIMEOUT=${GPU_TEST_TIMEOUT:-900s}
GPU_IMPORT=github.com/gemvtune/gemvtune/internal/gpu

die() { echo "gpu-test: $*" >&2; exit 1; }

build() {
	command -v go >/dev/null || die "build needs Go; run it on the development machine"
	cd "$ROOT" || exit 1
	export CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations}
	rm -rf "$BIN" && mkdir -p "$BIN" || exit 1
	local pkgs=${GPU_TEST_PKGS:-./...}
	local failed=() path dir imports name
	# shellcheck disable=SC2086
	go list -e -f '{{.ImportPath}}	{{.Dir}}	{{join .TestImports " "}} {{join .XTestImports " "}} ' $pkgs >"$BIN/pkgs.tsv" ||
		die "go list failed"
	while IFS=$'\t' read -r path dir imports; do
		[[ " $imports " == *"$GPU_IMPORT "* || " $imports " == *"$GPU_IMPORT/gputest "* ]] || continue
		dir=${dir#"$ROOT"}
		dir=${dir#/}
		name=$(echo "${dir:-root}" | tr '/' '_').test
		echo "build  $path -> .gpubin/$name"
		if go test -c -ldflags="-s -w" -o "$BIN/$name" "$path"; then
			printf '%s\t%s\n' "$name" "${dir:-.}" >>"$MANIFEST"
		else
			failed+=("$path")
		fi
	done <"$BIN/pkgs.tsv"
	rm -f "$BIN/pkgs.tsv"
	echo "build  ./cmd/autotune -> .gpubin/autotune"
	go build -ldflags="-s -w" -o "$BIN/autotune" ./cmd/autotune || failed+=(./cmd/autotune)
	if [ -n "${GPU_TEST_NVRTC:-}" ]; then
		bundle_nvrtc "$GPU_TEST_NVRTC" || failed+=("GPU_TEST_NVRTC=$GPU_TEST_NVRTC")
	fi
	[ ${#failed[@]} -eq 0 ] || die "build failed: ${failed[*]}"
	du -sh "$BIN" | sed 's/^/size   /'
}

# bundle_nvrtc copies one NVRTC library and its builtins, gzipped.
bundle_nvrtc() {
	local lib=$1 dir f
	[ -f "$lib" ] || { echo "gpu-test: GPU_TEST_NVRTC=$lib: no such file" >&2; return 1; }
	dir=$(dirname "$lib")
	mkdir -p "$BIN/nvrtc" || return 1
	for f in "$lib" "$dir"/libnvrtc-builtins.so*; do
		[ -e "$f" ] || continue
		echo "bundle $f"
		gzip -6 -c "$f" >"$BIN/nvrtc/$(basename "$f").gz" || return 1
	done
}

# use_bundled_nvrtc unpacks .gpubin/nvrtc and points GEMV_NVRTC at it.
use_bundled_nvrtc() {
	local tmp f lib
	tmp=$(mktemp -d) || return 1
	for f in "$BIN"/nvrtc/*.gz; do
		gunzip -c "$f" >"$tmp/$(basename "$f" .gz)" || return 1
	done
	lib=$(ls "$tmp"/libnvrtc.so* | head -n 1)
	export GEMV_NVRTC=$lib
	export LD_LIBRARY_PATH="$tmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	echo "gpu-test: no NVRTC on this machine; using the bundled one: GEMV_NVRTC=$lib"
}

run() {
	[ -f "$MANIFEST" ] && [ -x "$BIN/autotune" ] || die "nothing built; run 'scripts/gpu-test.sh build' first (and carry .gpubin)"
	cd "$ROOT" || exit 1
	local failed=() out name dir rc
	echo "=== autotune doctor"
	out=$("$BIN/autotune" doctor 2>&1)
	rc=$?
	echo "$out"
	if [ $rc -ne 0 ] && [ -d "$BIN/nvrtc" ] && grep -q '^nvrtc: *none' <<<"$out"; then
		use_bundled_nvrtc || die "unpacking the bundled NVRTC failed"
		echo "=== autotune doctor (bundled NVRTC)"
		"$BIN/autotune" doctor 2>&1
		rc=$?
	fi
	[ $rc -eq 0 ] || failed+=(doctor)
	while IFS=$'\t' read -r name dir; do
		echo "=== $name (in $dir)"
		(cd "$ROOT/$dir" && "$BIN/$name" -test.v -test.timeout="$TEST_TIMEOUT") 2>&1
		rc=$?
		[ $rc -eq 0 ] || failed+=("$name")
	done <"$MANIFEST"
	if [ ${#failed[@]} -gt 0 ]; then
		echo "=== FAIL: ${failed[*]}"
		exit 1
	fi
	echo "=== PASS: doctor and $(wc -l <"$MANIFEST") test binaries"
}

case "${1:-}" in
build) build ;;
run) run ;;
*) echo "usage: scripts/gpu-test.sh build|run" >&2; exit 2 ;;
esac
