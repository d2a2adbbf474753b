package cache

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteCHeader writes a C header with one table row per record: arch,
// format, shape and the winner's knobs, for engines that compile kernels
// themselves. Rows are in the order given; the table ends with a row whose
// arch is NULL.
func WriteCHeader(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `/* Tuned GEMV variants, written by "autotune export --header" (gemvtune %s).
 * Do not edit; regenerate from the cache. Knobs as in design.md: r rows per
 * warp, f launch-bounds floor, u unroll, s smem staging, w warps per block,
 * l layout (0 = raw bytes). exact = 1: bit-identical to the stock kernel. */
#ifndef GEMVTUNE_TUNED_H
#define GEMVTUNE_TUNED_H

typedef struct gemvtune_variant {
	const char *arch;   /* "sm_90" */
	const char *format; /* "q4_0" */
	int rows, cols;
	int r, f, u, s, w, l;
	int exact;
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
		fmt.Fprintf(bw, "\t{%q, %q, %d, %d, %d, %d, %d, %d, %d, %d, %d}, /* %s */\n",
			r.Arch, r.Format, r.Rows, r.Cols, p.R, p.F, p.U, p.S, p.W, p.L, exact, comment(r.Decision))
	}
	fmt.Fprint(bw, "\t{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},\n};\n\n#endif /* GEMVTUNE_TUNED_H */\n")
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
