package cache

import (
	"bufio"
	"fmt"
	"io"
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
	int r, f, u, s, w, g, l, a;
	int exact;
	int has_exact_alt;
	int xr, xf, xu, xs, xw, xg, xl, xa;
} gemvtune_variant;

#define GEMVTUNE_VARIANTS_LEN %d

static const gemvtune_variant gemvtune_variants[GEMVTUNE_VARIANTS_LEN + 1] = {
`, ToolVersion, len(recs))
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
		fmt.Fprintf(bw, "\t{%q, %q, %q, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d}, /* %s */\n",
			r.Arch, r.Model, r.Format, r.Rows, r.Cols, p.R, p.F, p.U, p.S, p.W, p.G, p.L, p.A, exact,
			alt, x.R, x.F, x.U, x.S, x.W, x.G, x.L, x.A, comment(r.Decision+note))
	}
	fmt.Fprint(bw, "\t{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},\n};\n\n#endif /* GEMVTUNE_TUNED_H */\n")
	return bw.Flush()
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
