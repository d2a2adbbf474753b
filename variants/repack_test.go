package variants_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

func TestRepackPlanes(t *testing.T) {
	cases := []struct {
		format     string
		rows, cols int
		quantBytes int // qs bytes per 32-weight block
	}{
		{"q4_0", 1, 32, 16}, {"q4_0", 7, 96, 16}, {"q4_0", 64, 4096, 16},
		{"q8_0", 1, 32, 32}, {"q8_0", 5, 160, 32}, {"q8_0", 32, 2048, 32},
	}
	for _, c := range cases {
		raw := randomQuantized(t, mustFormat(t, c.format), c.rows, c.cols, 17+uint64(c.rows))
		planes := repackSameSize(t, variants.RepackPlanes, c.format, raw, c.rows, c.cols)
		// Check the layout of docs/formats.md byte by byte.
		nb := c.cols / 32
		rowQuant := nb * c.quantBytes
		if rowQuant%16 != 0 {
			t.Fatalf("%s: quant row of %d bytes is not 16-byte aligned", c.format, rowQuant)
		}
		scaleStart := c.rows * rowQuant
		for r := 0; r < c.rows; r++ {
			for k := 0; k < nb; k++ {
				blk := raw[(r*nb+k)*(c.quantBytes+2):]
				q := planes[r*rowQuant+k*c.quantBytes:]
				if !bytes.Equal(q[:c.quantBytes], blk[2:2+c.quantBytes]) {
					t.Fatalf("%s: row %d block %d: quant bytes differ", c.format, r, k)
				}
				s := planes[scaleStart+2*(r*nb+k):]
				if s[0] != blk[0] || s[1] != blk[1] {
					t.Fatalf("%s: row %d block %d: scale bytes differ", c.format, r, k)
				}
			}
		}
		back, err := variants.UnpackPlanes(c.format, planes, c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, raw) {
			t.Fatalf("%s %dx%d: UnpackPlanes(RepackPlanes(raw)) != raw", c.format, c.rows, c.cols)
		}
	}
}

func TestRepackPlanesErrors(t *testing.T) {
	cases := []repackErrorCase{
		{"no planar layout for q4_K", "q4_K", 144, 1, 256, variants.ErrUnknownFormat},
		{"unknown format", "q5_1", 18, 1, 32, variants.ErrUnknownFormat},
		{"cols not a multiple of 32", "q4_0", 18, 1, 40, variants.ErrShape},
		{"no rows", "q8_0", 0, 0, 32, variants.ErrShape},
		{"short buffer", "q4_0", 35, 2, 32, variants.ErrBuffer},
		{"long buffer", "q8_0", 35, 1, 32, variants.ErrBuffer},
	}
	for _, c := range cases {
		checkRepackError(t, c, map[string]repackFunc{"RepackPlanes": variants.RepackPlanes, "UnpackPlanes": variants.UnpackPlanes})
	}
}

func TestRepackTiles(t *testing.T) {
	cases := []struct {
		format     string
		rows, cols int
		quantBytes int // qs bytes per 32-weight block
	}{
		{"q8_0", 1, 256, 32}, {"q8_0", 5, 1280, 32}, {"q8_0", 32, 2048, 32},
	}
	for _, c := range cases {
		raw := randomQuantized(t, mustFormat(t, c.format), c.rows, c.cols, 19+uint64(c.rows))
		tiles := repackSameSize(t, variants.RepackTiles, c.format, raw, c.rows, c.cols)
		// The layout of docs/formats.md byte by byte: block k of row r is
		// in tile k/8 of the row, its d at 2·(k%8), its qs after the 16
		// bytes of d at (k%8)·quantBytes.
		nb := c.cols / 32
		rowBytes := nb * (c.quantBytes + 2)
		tileBytes := 8 * (c.quantBytes + 2)
		if tileBytes%16 != 0 {
			t.Fatalf("%s: tile of %d bytes is not a multiple of 16", c.format, tileBytes)
		}
		for r := 0; r < c.rows; r++ {
			for k := 0; k < nb; k++ {
				blk := raw[r*rowBytes+k*(c.quantBytes+2):]
				tile := tiles[r*rowBytes+(k/8)*tileBytes:]
				if d := tile[2*(k%8):]; d[0] != blk[0] || d[1] != blk[1] {
					t.Fatalf("%s: row %d block %d: d differs", c.format, r, k)
				}
				if q := tile[16+(k%8)*c.quantBytes:]; !bytes.Equal(q[:c.quantBytes], blk[2:2+c.quantBytes]) {
					t.Fatalf("%s: row %d block %d: qs differ", c.format, r, k)
				}
			}
		}
		back, err := variants.UnpackTiles(c.format, tiles, c.rows, c.cols)
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%s %dx%d: UnpackTiles(RepackTiles(raw)) != raw (%v)", c.format, c.rows, c.cols, err)
		}
	}
	for _, c := range []repackErrorCase{
		{"no tiled layout for q4_K", "q4_K", 144, 1, 256, variants.ErrUnknownFormat},
		{"no tiled layout for q4_0", "q4_0", 18 * 8, 1, 256, variants.ErrUnknownFormat},
		{"cols not a multiple of 256", "q8_0", 34 * 4, 1, 128, variants.ErrShape},
		{"short buffer", "q8_0", 271, 1, 256, variants.ErrBuffer},
	} {
		checkRepackError(t, c, map[string]repackFunc{"RepackTiles": variants.RepackTiles, "UnpackTiles": variants.UnpackTiles})
	}
}

func TestRepackInterleaved(t *testing.T) {
	cases := []struct {
		format     string
		rows, cols int
	}{
		{"q4_0", 1, 1024}, {"q4_0", 3, 4096},
		{"q4_K", 1, 2048}, {"q4_K", 3, 6144}, {"q5_K", 1, 2048}, {"q5_K", 3, 6144},
		{"q6_K", 1, 2048}, {"q6_K", 3, 6144}, {"affine4", 1, 1024}, {"affine4", 5, 3072},
	}
	for _, c := range cases {
		raw := randomQuantized(t, mustFormat(t, c.format), c.rows, c.cols, 23+uint64(c.rows))
		tiled := repackSameSize(t, variants.RepackInterleaved, c.format, raw, c.rows, c.cols)
		// The byte map of docs/formats.md, chunk by chunk: what lane k of
		// a warp loads for chunk c = 32t + k of row r.
		same := func(what string, r, chunk int, got, want []byte) {
			t.Helper()
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %dx%d: row %d chunk %d: %s differs", c.format, c.rows, c.cols, r, chunk, what)
			}
		}
		for r := 0; r < c.rows; r++ {
			switch c.format {
			case "q4_0":
				rowBytes := c.cols / 32 * 18
				for ch := 0; ch < c.cols/32; ch++ {
					blk := raw[r*rowBytes+ch*18:]
					tile := tiled[r*rowBytes+(ch/32)*576:]
					k := ch % 32
					same("d", r, ch, tile[2*k:][:2], blk[:2])
					same("qs", r, ch, tile[64+16*k:][:16], blk[2:18])
				}
			case "q4_K":
				rowBytes := c.cols / 256 * 144
				for ch := 0; ch < c.cols/64; ch++ {
					sb := raw[r*rowBytes+(ch/4)*144:]
					tile := tiled[r*rowBytes+(ch/32)*1152:]
					k := ch % 32
					same("header", r, ch, tile[16*(k/4):][:16], sb[:16])
					same("low qs", r, ch, tile[128+16*k:][:16], sb[16+32*(ch%4):][:16])
					same("high qs", r, ch, tile[640+16*k:][:16], sb[32+32*(ch%4):][:16])
				}
			case "q5_K":
				rowBytes := c.cols / 256 * 176
				for ch := 0; ch < c.cols/64; ch++ {
					sb := raw[r*rowBytes+(ch/4)*176:]
					tile := tiled[r*rowBytes+(ch/32)*1408:]
					k := ch % 32
					same("header", r, ch, tile[16*(k/4):][:16], sb[:16])
					same("qh", r, ch, tile[128+32*(k/4):][:32], sb[16:48])
					same("low qs", r, ch, tile[384+16*k:][:16], sb[48+32*(ch%4):][:16])
					same("high qs", r, ch, tile[896+16*k:][:16], sb[64+32*(ch%4):][:16])
				}
			case "q6_K":
				// Chunk ch is quarter j = ch%4 (half n, l-half h) of its
				// super-block: ql[64n+16h..], ql[64n+32+16h..], qh[32n+16h..].
				rowBytes := c.cols / 256 * 210
				for ch := 0; ch < c.cols/64; ch++ {
					sb := raw[r*rowBytes+(ch/4)*210:]
					tile := tiled[r*rowBytes+(ch/32)*1680:]
					k, n, h := ch%32, ch%4/2, ch%2
					same("scales", r, ch, tile[16*(k/4):][:16], sb[192:208])
					same("d", r, ch, tile[128+2*(k/4):][:2], sb[208:210])
					same("ql A", r, ch, tile[144+16*k:][:16], sb[64*n+16*h:][:16])
					same("ql B", r, ch, tile[656+16*k:][:16], sb[64*n+32+16*h:][:16])
					same("qh", r, ch, tile[1168+16*k:][:16], sb[128+32*n+16*h:][:16])
				}
			case "affine4":
				groups := c.cols / 64
				scales := raw[c.rows*c.cols/2:]
				biases := scales[c.rows*groups*2:]
				for ch := 0; ch < c.cols/32; ch++ {
					tile := tiled[(r*c.cols/1024+ch/32)*576:]
					k, g := ch%32, r*groups+ch/2
					same("nibbles", r, ch, tile[64+16*k:][:16], raw[r*c.cols/2+16*ch:][:16])
					same("scale", r, ch, tile[4*(k/2):][:2], scales[2*g:][:2])
					same("bias", r, ch, tile[4*(k/2)+2:][:2], biases[2*g:][:2])
				}
			}
		}
		back, err := variants.UnpackInterleaved(c.format, tiled, c.rows, c.cols)
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%s %dx%d: UnpackInterleaved(RepackInterleaved(raw)) != raw (%v)", c.format, c.rows, c.cols, err)
		}
	}
	for _, c := range []repackErrorCase{
		{"no interleaved layout for q8_0", "q8_0", 34 * 64, 1, 2048, variants.ErrUnknownFormat},
		{"q4_0 cols not a multiple of 1024", "q4_0", 18 * 16, 1, 512, variants.ErrShape},
		{"q4_K cols not a multiple of 2048", "q4_K", 144 * 4, 1, 1024, variants.ErrShape},
		{"affine4 cols not a multiple of 1024", "affine4", 288, 1, 512, variants.ErrShape},
		{"no rows", "q4_K", 0, 0, 2048, variants.ErrShape},
		{"short buffer", "affine4", 575, 1, 1024, variants.ErrBuffer},
		{"long buffer", "q4_K", 1153, 1, 2048, variants.ErrBuffer},
	} {
		checkRepackError(t, c, map[string]repackFunc{"RepackInterleaved": variants.RepackInterleaved, "UnpackInterleaved": variants.UnpackInterleaved})
	}
}

// repackFunc is the signature of the repack functions and their inverses.
type repackFunc func(format string, b []byte, rows, cols int) ([]byte, error)

// repackErrorCase is a bad call: n bytes of format at rows x cols, and the
// error it must wrap.
type repackErrorCase struct {
	name       string
	format     string
	n          int
	rows, cols int
	want       error
}

// checkRepackError makes the bad call c to every function of fns.
func checkRepackError(t *testing.T, c repackErrorCase, fns map[string]repackFunc) {
	t.Helper()
	for name, fn := range fns {
		if _, err := fn(c.format, make([]byte, c.n), c.rows, c.cols); !errors.Is(err, c.want) {
			t.Errorf("%s: %s error = %v, want %v", c.name, name, err, c.want)
		}
	}
}

// repackSameSize repacks raw with fn and checks that the layout has
// exactly raw's bytes.
func repackSameSize(t *testing.T, fn repackFunc, format string, raw []byte, rows, cols int) []byte {
	t.Helper()
	b, err := fn(format, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != len(raw) {
		t.Fatalf("%s %dx%d: %d bytes repacked from %d raw", format, rows, cols, len(b), len(raw))
	}
	return b
}
