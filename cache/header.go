package cache

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gemvtune/gemvtune/space"
)

// WriteCHeader writes a C header with one table row per record: arch, GPU
// model, format, shape, the winner's knobs and, for a winner that is not exact,
// the knobs of the best exact variant (what GEMV_REQUIRE_EXACT=1 runs), for
// engines that compile kernels themselves. Rows are in the order given; the
// table ends with a row whose arch is NULL.
func WriteCHeader(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `/* Tuned GEMV variants, written by "autotune export --header" (gemvtune %s).
 * Do not edit; regenerate from the cache. Knobs as in docs/design.md: r rows per
 * warp, f launch-bounds floor, u unroll, s smem staging, w warps per block,
 * g row groups per block, 0 = 1: grid = ceil(ceil(rows/(r*w)) / max(g,1))
 * (g was chosen for this row's rows: at other rows keep that grid size,
 * g' = ceil(ceil(rows'/(r*w)) / grid), 0 below 2; the kernel is the same),
 * l layout (0 = raw bytes), a activation path (0 = f32, 1 = int8 with dp4a).
 * exact = 1: bit-identical to the stock kernel. has_exact_alt = 1: the winner
 * is not exact and x* are the knobs of the best exact variant (the stock
 * kernel r1 f0 u1 s0 w8 when none beat it), for GEMV_REQUIRE_EXACT=1. */
#ifndef GEMVTUNE_TUNED_H
#define GEMVTUNE_TUNED_H

/* 2: columns a, has_exact_alt and x* added after version 1's r f u s w l exact.
 * 3: columns g (after w) and xg (after xw) added.
 * 4: column gpu_model (after arch) added: rows are per GPU model. */
#define GEMVTUNE_HEADER_VERSION 4

typedef struct gemvtune_variant {
	const char *arch;      /* "sm_90" */
	const char *gpu_model; /* "h200": the GPU name normalised (docs/cache.md) */
	const char *format;    /* "q4_0" */
	int rows, cols;
	int %s;
	int exact;
	int has_exact_alt;
	int %s;
} gemvtune_variant;

#define GEMVTUNE_VARIANTS_LEN %d

static const gemvtune_variant gemvtune_variants[GEMVTUNE_VARIANTS_LEN + 1] = {
`, ToolVersion, knobColumns(""), knobColumns("x"), len(recs))
	for _, r := range recs {
		p := r.Params
		exact := 0
		if r.Class == ClassExact {
			exact = 1
		}
		alt, x, note := 0, space.Params{}, ""
		if r.Exact != nil {
			alt, x = 1, r.Exact.Params
			note = "; exact: " + r.Exact.WinnerID + ": " + r.Exact.Decision
		}
		fmt.Fprintf(bw, "\t{%q, %q, %q, %d, %d, %s, %d, %d, %s}, /* %s */\n", r.Arch, r.Model, r.Format, r.Rows, r.Cols,
			knobValues(p), exact, alt, knobValues(x), comment(r.Decision+note))
	}
	zeros := strings.TrimSuffix(strings.Repeat("0, ", 7+2*len(space.Knobs)), ", ")
	fmt.Fprintf(bw, "\t{%s},\n};\n\n#endif /* GEMVTUNE_TUNED_H */\n", zeros)
	return bw.Flush()
}

// knobColumns names the knob columns (space.Knobs' letters) with prefix.
func knobColumns(prefix string) string {
	names := make([]string, len(space.Knobs))
	for i, k := range space.Knobs {
		names[i] = prefix + k.Letter
	}
	return strings.Join(names, ", ")
}

// knobValues writes p's knob values in column order.
func knobValues(p space.Params) string {
	vs := make([]string, len(space.Knobs))
	for i, k := range space.Knobs {
		vs[i] = strconv.Itoa(k.Of(p))
	}
	return strings.Join(vs, ", ")
}

// comment makes s safe inside a C block comment on one line.
func comment(s string) string {
	s = strings.ReplaceAll(s, "*/", "* /")
	s = strings.ReplaceAll(s, "/*", "/ *")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
