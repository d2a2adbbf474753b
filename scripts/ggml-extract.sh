#!/bin/bash
# Writes .peer/ggml.tar.gz, the part of a ggml checkout that ggml's
# test-backend-ops needs with CUDA (what `scripts/h200-final.sh ggml`
# builds on the GPU machine for the side-by-side MMVQ figures), from the
# git directory of a ggml-org/ggml clone or mirror:
#   scripts/ggml-extract.sh /path/to/ggml/.git [REV]
# .peer/ is kept out of git (add it to .git/info/exclude); carry it.
set -euo pipefail
git_dir=${1:?usage: scripts/ggml-extract.sh GGML_GIT_DIR [REV]}
rev=${2:-HEAD}
mkdir -p .peer
# The top level of src/ (its files, not the other backends' folders), the
# CPU and CUDA backends, the build files, the headers and the tests.
top=$(git --git-dir="$git_dir" ls-tree "$rev" src/ | awk '$2 == "blob" {print $4}')
# shellcheck disable=SC2086
git --git-dir="$git_dir" archive --format=tar "$rev" CMakeLists.txt cmake include ggml.pc.in tests \
	$top src/ggml-cpu src/ggml-cuda | gzip -9 > .peer/ggml.tar.gz
echo "wrote .peer/ggml.tar.gz ($(git --git-dir="$git_dir" rev-parse --short "$rev"), $(stat -c %s .peer/ggml.tar.gz) bytes)"
