#!/usr/bin/env bash
# ab-kernels.sh: A/B of kernel source edits, interleaved on one GPU.
#
#   scripts/ab-kernels.sh build NAME [SED_EXPR ...]
#       here: copy the tree (HEAD plus the uncommitted change to tracked
#       files; with REV=<commit>, that commit as it is) to a scratch
#       worktree, apply the sed expressions
#       to variants/kernels/prelude.cu (none: the tree as it is), check that
#       each one changed the file, and build autotune into .gpulead/NAME/
#       (ignored by git; gzipped; carry .gpulead to the device).
#   scripts/ab-kernels.sh run FORMATS SHAPES IDS NAME ...
#       on the device, from the repository root: for each shape, runs
#       `autotune bench --variants IDS` with every build in the order given
#       and then in reverse (A B B A), and writes $OUT/ab_<NAME>.txt
#       (the raw tables, appended) and $OUT/ab_summary.txt (per build,
#       format, shape and variant: its medians, one per run), and names
#       on stderr each build whose variants failed (a build that does not
#       compile would otherwise only be missing from the summary). A NAME
#       may carry a probe build's environment, as a RUN of chain does.
#   scripts/ab-kernels.sh chain FORMATS RUN ...
#       on the device: a cold tune of FORMATS for $MODEL (default
#       llama-3-8b) by the first RUN's build, without its variables, into
#       /tmp/ab-chain-MODEL-FORMATS.db (kept while the machine is, and
#       gzipped into $OUT/chain_tune.db.gz), then
#       `autotune bench --chain --compile` of its winners by every RUN in
#       the order given and then in reverse (A B B A), each into
#       $OUT/chain_<k>_<RUN>.txt, and
#       $OUT/chain_summary.txt: per run and format, µs per token with PDL
#       edges (as recorded where the bench prints it), `reads, PDL, x` and
#       the token's share of that read's speed. $CHAIN_ARGS is added to
#       every bench's arguments (e.g. --attribute). A RUN is NAME or
#       NAME:VAR=V,VAR=V (a probe build's environment; a value cannot
#       hold a comma or a space), e.g.
#         git apply docs/data/h200-dec02-eleventh/probe-release-lead.patch
#         scripts/ab-kernels.sh build lead && git checkout -- variants
#         (device) scripts/ab-kernels.sh chain bf16 lead lead:GEMV_PROBE=12
#
# A sed expression that comments out part of a macro line must use /* */:
# a // comment swallows the line's continuation backslash.
#
# The experiments of docs/results.md since "Kernels v4" were made this way,
# e.g. the fourth session's PDL prologues:
#   REV=804b0d4 scripts/ab-kernels.sh build v4     (kernels v4)
#   scripts/ab-kernels.sh build pdlB
#   scripts/ab-kernels.sh run q4_0,q4_K,affine4 4096x4096 \
#       r1f0u2s1w16l1a1,r1f0u1s1w16l1a1,r1f0u1s1w16a1 v4 pdlB
# and, on 2026-12-02, the weights prefetched before the wait, the s=3
# ring's depth (a change to variants/family.go too: build from the working
# tree, no sed), q6_K's high bits and the x rounding. The summary gives
# each run's median, and "/pdl M" its median in a PDL chain where the
# build prints one.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/.gpulead"
die() { echo "ab-kernels: $*" >&2; exit 1; }

build() {
	local name=${1:?usage: ab-kernels.sh build NAME [SED_EXPR ...]}
	shift
	command -v go >/dev/null || die "build needs Go; run it on the development machine"
	TMPWT=$(mktemp -d) || exit 1
	trap 'git -C "$ROOT" worktree remove --force "$TMPWT" >/dev/null 2>&1; rm -rf "$TMPWT"' EXIT
	local tmp=$TMPWT
	git -C "$ROOT" worktree add --quiet --detach --force "$tmp" "${REV:-HEAD}" || die "git worktree failed"
	if [ -z "${REV:-}" ]; then
		# The working tree as it is, not just HEAD.
		(cd "$ROOT" && git diff HEAD) | (cd "$tmp" && git apply --allow-empty) || die "applying the uncommitted change failed"
	fi
	local f="$tmp/variants/kernels/prelude.cu" e
	for e in "$@"; do
		cp "$f" "$f.before"
		sed -i "$e" "$f" || die "sed '$e' failed"
		cmp -s "$f" "$f.before" && die "sed '$e' changed nothing in prelude.cu"
		rm "$f.before"
	done
	mkdir -p "$DIR/$name" || exit 1
	(cd "$tmp" && CGO_CFLAGS=${CGO_CFLAGS:--Wno-deprecated-declarations} go build -ldflags="-s -w" -o "$DIR/$name/autotune" ./cmd/autotune) ||
		die "build of $name failed"
	# Compressed: five builds must fit in one call's 64 MiB carry.
	gzip -f -9 "$DIR/$name/autotune" || die "gzip failed"
	echo "built .gpulead/$name/autotune.gz ($# edits)"
}

run() {
	[ $# -ge 5 ] || die "usage: ab-kernels.sh run FORMATS SHAPES IDS NAME NAME ..."
	local formats=$1 shapes=$2 ids=$3
	shift 3
	local names=("$@") order n s name vars
	for n in "${names[@]}"; do unpack "${n%%:*}"; done
	mapfile -t order < <(abba "${names[@]}")
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/xdg}
	: "${OUT:?set OUT to the folder for results}"
	for s in ${shapes//,/ }; do
		for n in "${order[@]}"; do
			split_run "$n"
			# shellcheck disable=SC2086
			env $vars timeout 120 "$DIR/$name/autotune" bench --arch sm_90 --format "$formats" --shape "$s" --variants "$ids" 2>/dev/null |
				grep -v '^#' >>"$OUT/ab_$(tag "$n").txt"
		done
	done
	for n in "${names[@]}"; do
		awk -v b="$n" '$NF == "ok" && $3 != "ceiling" { k = $1 " " $2 " " $3; v[k] = v[k] " " $5 ($10 ~ /^[0-9]+\.[0-9]+$/ ? "/pdl " $10 : "") }
			END { for (k in v) print b, k, v[k] }' "$OUT/ab_$(tag "$n").txt"
	done | sort -k2,4 >"$OUT/ab_summary.txt"
	cat "$OUT/ab_summary.txt"
	for n in "${names[@]}"; do
		awk -v b="$n" '$1 != "format" && $3 != "read" && $3 != "ceiling" && $NF != "ok" { bad++; if (!first) first = $0 }
			END { if (bad) printf "ab-kernels: build %s: %d variant rows did not run, e.g.:\n  %s\n", b, bad, substr(first, 1, 300) }' "$OUT/ab_$(tag "$n").txt" >&2
	done
}

# split_run RUN: name, the build of RUN (NAME or NAME:VAR=V,VAR=V), and
# vars, its environment as env's arguments.
split_run() {
	name=${1%%:*} vars=""
	[ "$1" != "$name" ] && vars=${1#*:}
	vars=${vars//,/ }
}

# tag RUN: RUN as part of a file name.
tag() { printf %s "$1" | tr -c 'A-Za-z0-9_.-' '_'; }

# abba A B ...: its arguments, one a line, in order and then in reverse.
abba() {
	local a=("$@") i
	for ((i = 0; i < ${#a[@]}; i++)); do echo "${a[i]}"; done
	for ((i = ${#a[@]} - 1; i >= 0; i--)); do echo "${a[i]}"; done
}

# unpack NAME: the build's binary, gunzipped on first use.
unpack() {
	[ -x "$DIR/$1/autotune" ] || { [ -f "$DIR/$1/autotune.gz" ] && gunzip -kf "$DIR/$1/autotune.gz"; } ||
		die "no build $1 (carry .gpulead)"
}

chain() {
	[ $# -ge 2 ] || die "usage: ab-kernels.sh chain FORMATS RUN ..."
	local formats=$1 model=${MODEL:-llama-3-8b}
	local db="/tmp/ab-chain-$model-${formats//,/_}.db"
	shift
	local runs=("$@") order r name vars k=0 out
	for r in "${runs[@]}"; do unpack "${r%%:*}"; done
	mapfile -t order < <(abba "${runs[@]}")
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/xdg}
	: "${OUT:?set OUT to the folder for results}"
	if [ ! -f "$db" ]; then
		timeout 300 "$DIR/${runs[0]%%:*}/autotune" --arch sm_90 --model "$model" --formats "$formats" --cache "$db" >"$OUT/chain_tune.txt" 2>&1 ||
			die "the tune failed: $(tail -1 "$OUT/chain_tune.txt")"
		# The tuned cache goes back too, for runs on other machines (about 2 MB).
		gzip -c "$db" >"$OUT/chain_tune.db.gz"
	fi
	: >"$OUT/chain_summary.txt"
	for r in "${order[@]}"; do
		k=$((k + 1))
		split_run "$r"
		out="$OUT/chain_${k}_$(tag "$r").txt"
		# shellcheck disable=SC2086
		env $vars timeout 300 "$DIR/$name/autotune" bench --chain --compile ${CHAIN_ARGS:-} --cache "$db" --model "$model" --formats "$formats" >"$out" 2>&1 ||
			echo "ab-kernels: run $k ($r) failed: $(tail -1 "$out")" >&2
		awk -v run="$k $r" '{ sub(/^ +/, ""); split($0, f, /  +/) }
			f[2] == "tuned, PDL" || f[2] == "tuned, as recorded" { tok[f[1]] = f[3]; if (f[2] ~ /recorded/) how[f[1]] = " (as recorded)" }
			f[2] == "reads, PDL, x" { rd[f[1]] = f[3] }
			END { for (x in tok) if (x in rd) printf "%s %s %s%s, read %s, %.1f %% of its speed\n", run, x, tok[x], how[x], rd[x], 100 * rd[x] / tok[x] }' "$out" | sort -k3,3 >>"$OUT/chain_summary.txt"
	done
	cat "$OUT/chain_summary.txt"
}

case "${1:-}" in
build) shift; build "$@" ;;
run) shift; run "$@" ;;
chain) shift; chain "$@" ;;
*) echo "usage: scripts/ab-kernels.sh build NAME [SED_EXPR ...] | run FORMATS SHAPES IDS NAME ... | chain FORMATS RUN ..." >&2; exit 2 ;;
esac
