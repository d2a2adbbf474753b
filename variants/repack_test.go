package variants_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
		rng := rand.New(rand.NewPCG(17, uint64(c.rows)))
		raw, err := mustFormat(t, c.format).Quantize(randWeights(rng, c.rows*c.cols), c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		planes, err := variants.RepackPlanes(c.format, raw, c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		if len(planes) != len(raw) {
			t.Fatalf("%s %dx%d: %d bytes repacked from %d raw", c.format, c.rows, c.cols, len(planes), len(raw))
		}
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
	cases := []struct {
		name       string
		format     string
		n          int
		rows, cols int
		want       error
	}{
		{"no planar layout for q4_K", "q4_K", 144, 1, 256, variants.ErrUnknownFormat},
		{"unknown format", "q5_1", 18, 1, 32, variants.ErrUnknownFormat},
		{"cols not a multiple of 32", "q4_0", 18, 1, 40, variants.ErrShape},
		{"no rows", "q8_0", 0, 0, 32, variants.ErrShape},
		{"short buffer", "q4_0", 35, 2, 32, variants.ErrBuffer},
		{"long buffer", "q8_0", 35, 1, 32, variants.ErrBuffer},
	}
	for _, c := range cases {
		for name, fn := range map[string]func(string, []byte, int, int) ([]byte, error){
			"RepackPlanes": variants.RepackPlanes, "UnpackPlanes": variants.UnpackPlanes,
		} {
			if _, err := fn(c.format, make([]byte, c.n), c.rows, c.cols); !errors.Is(err, c.want) {
				t.Errorf("%s: %s error = %v, want %v", c.name, name, err, c.want)
			}
		}
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
		rng := rand.New(rand.NewPCG(19, uint64(c.rows)))
		raw, err := mustFormat(t, c.format).Quantize(randWeights(rng, c.rows*c.cols), c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		tiles, err := variants.RepackTiles(c.format, raw, c.rows, c.cols)
		if err != nil {
			t.Fatal(err)
		}
		if len(tiles) != len(raw) {
			t.Fatalf("%s %dx%d: %d bytes repacked from %d raw", c.format, c.rows, c.cols, len(tiles), len(raw))
		}
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
	for _, c := range []struct {
		name       string
		format     string
		n          int
		rows, cols int
		want       error
	}{
		{"no tiled layout for q4_K", "q4_K", 144, 1, 256, variants.ErrUnknownFormat},
		{"no tiled layout for q4_0", "q4_0", 18 * 8, 1, 256, variants.ErrUnknownFormat},
		{"cols not a multiple of 256", "q8_0", 34 * 4, 1, 128, variants.ErrShape},
		{"short buffer", "q8_0", 271, 1, 256, variants.ErrBuffer},
	} {
		for name, fn := range map[string]func(string, []byte, int, int) ([]byte, error){
			"RepackTiles": variants.RepackTiles, "UnpackTiles": variants.UnpackTiles,
		} {
			if _, err := fn(c.format, make([]byte, c.n), c.rows, c.cols); !errors.Is(err, c.want) {
				t.Errorf("%s: %s error = %v, want %v", c.name, name, err, c.want)
			}
		}
	}
}
