package variants_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/space"
	"github.com/gemvtune/gemvtune/variants"
)

func mustFamily(t *testing.T, name string) variants.Family {
	t.Helper()
	f, err := variants.FamilyOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustParse(t *testing.T, id string) space.Params {
	t.Helper()
	p, err := space.Parse(id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEveryFormatHasFamily(t *testing.T) {
	for _, name := range variants.FormatNames {
		f := mustFamily(t, name)
		if f.Format().Name() != name {
			t.Errorf("family %s reports format %s", name, f.Format().Name())
		}
		if f.Format().BlockWeights() == 0 {
			t.Errorf("family %s: format not registered", name)
		}
		if f.Class(space.Stock) != variants.Exact {
			t.Errorf("%s: stock class %s", name, f.Class(space.Stock))
		}
		if b := f.ErrorBound(space.Stock); b <= 0 || b > 1e-2 {
			t.Errorf("%s: error bound %g", name, b)
		}
	}
}

func TestSourceHeaderAndHash(t *testing.T) {
	hashes := map[string]string{}
	for _, f := range variants.Families() {
		name := f.Format().Name()
		src, err := f.Source(mustParse(t, "r3f2u4s1w16"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{"#define GEMV_R 3\n", "#define GEMV_F 2\n", "#define GEMV_U 4\n",
			"#define GEMV_S 1\n", "#define GEMV_W 16\n", "#define GEMV_L 0\n", "#define GEMV_CHUNK ", `extern "C" __global__`, "GEMV_DEFINE_KERNEL"} {
			if !strings.Contains(src, want) {
				t.Errorf("%s source lacks %q", name, want)
			}
		}
		if strings.Contains(src, "#include") {
			t.Errorf("%s source includes a header", name)
		}
		// A static shared variable moves the dynamic shared memory, and with
		// it the bulk-copy rings, 16 bytes on: the s=3 winners then ran 13-17 %
		// slower on the H200 (docs/kernels.md).
		if n := strings.Count(src, "__shared__"); n != 1 {
			t.Errorf("%s source has %d __shared__ declarations; only the dynamic gemv_xs may be", name, n)
		}
		h := f.SourceHash()
		if len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("%s: hash %q is not 16 hex chars", name, h)
		}
		if other, dup := hashes[h]; dup {
			t.Errorf("%s and %s share source hash %s", name, other, h)
		}
		hashes[h] = name
		if h != f.SourceHash() {
			t.Errorf("%s: hash not stable", name)
		}
		a, _ := f.Source(space.Stock)
		if a == src {
			t.Errorf("%s: source does not depend on the knobs", name)
		}
	}
}

func TestSourceRejects(t *testing.T) {
	tests := []struct {
		format string
		p      space.Params
		want   string
	}{
		{"q4_K", space.Params{R: 1, U: 1, W: 8, L: 2}, "q4_K has no layout l=2 (accepted: 0, 1)"},
		{"bf16", space.Params{R: 1, U: 1, W: 8, L: 1}, "bf16 has no layout l=1 (accepted: 0)"},
		{"bf16", space.Params{R: 5, U: 1, W: 8}, "r=5"},
		{"q4_0", space.Params{R: 1, U: 3, W: 8}, "u=3"},
	}
	for _, tc := range tests {
		if _, err := mustFamily(t, tc.format).Source(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s Source(%+v) = %v, want %q", tc.format, tc.p, err, tc.want)
		}
	}
}

func TestGate(t *testing.T) {
	v1 := space.Stock
	l1 := mustParse(t, "r1f0u1s0w8l1")
	tests := []struct {
		format     string
		p          space.Params
		rows, cols int
		want       string // "" = accepted
	}{
		{"q4_0", v1, 1, 32, ""},
		{"q4_0", v1, 4096, 4100, "q4_0 needs cols a multiple of 32, got 4100"},
		{"q4_0", l1, 4096, 4096, ""},
		{"q8_0", l1, 7, 96, ""},
		{"q8_0", v1, 0, 64, "rows and cols ≥ 1, got 0x64"},
		{"q8_0", v1, 3, -32, "got 3x-32"},
		{"q4_K", v1, 1, 256, ""},
		{"q4_K", v1, 1, 128, "q4_K needs cols a multiple of 256, got 128"},
		{"q4_K", l1, 1, 256, "q4_K layout l=1 (interleaved warp tiles) needs cols a multiple of 2048, got 256"},
		{"q4_K", l1, 1, 6144, ""},
		{"q4_K", mustParse(t, "r1f0u1s1w8l2"), 1, 2048, "no layout l=2"},
		{"affine4", v1, 5, 64, ""},
		{"affine4", v1, 5, 32, "affine4 needs cols a multiple of 64, got 32"},
		{"affine4", l1, 5, 64, "affine4 layout l=1 (interleaved warp tiles) needs cols a multiple of 1024, got 64"},
		{"affine4", l1, 5, 3072, ""},
		// s=2 with l=1: the tile keeps the (scale, bias) word per group,
		// so no rule beyond the tile's.
		{"affine4", mustParse(t, "r1f0u2s2w8l1a1"), 3, 1024, ""},
		{"q4_K", mustParse(t, "r2f0u2s2w8l1"), 3, 2048, ""},
		{"bf16", mustParse(t, "r1f0u2s2w8l1"), 3, 1024, "no layout l=1"},
		// s=2, the weight ring: q4_K and affine4 only; affine4's scale
		// words span two groups, so it needs cols a multiple of 128.
		{"q4_K", mustParse(t, "r1f0u2s2w8a1"), 3, 256, ""},
		{"affine4", mustParse(t, "r1f0u2s2w8a1"), 3, 128, ""},
		{"affine4", mustParse(t, "r1f0u2s2w8"), 3, 192, "affine4 s=2 copies 4-byte scale words of two blocks: needs cols a multiple of 128, got 192"},
		{"affine4", mustParse(t, "r1f0u2s1w8"), 3, 192, ""},
		// q4_0 and q8_0: the ring needs an aligned layout, and scale words
		// of two blocks.
		{"q4_0", mustParse(t, "r1f0u2s2w8"), 3, 256, "q4_0 s=2 (weight ring) needs layout l in 1, 2, got l=0"},
		{"q4_0", mustParse(t, "r1f0u2s2w8l1a1"), 3, 64, ""},
		{"q4_0", mustParse(t, "r1f0u2s2w8l1"), 3, 96, "needs cols a multiple of 64, got 96"},
		{"q8_0", mustParse(t, "r1f0u2s2w8l2"), 3, 256, ""},
		{"q8_0", mustParse(t, "r1f0u2s2w8l1a1"), 3, 64, ""},
		{"q8_0", mustParse(t, "r1f0u2s2w8"), 3, 256, "q8_0 s=2 (weight ring) needs layout l in 1, 2, got l=0"},
		// q8_0's bulk copies take a warp step's four tiles of l=2.
		{"q8_0", mustParse(t, "r1f0u2s3w8l2a1"), 3, 1024, ""},
		{"q8_0", mustParse(t, "r1f0u2s3w8l2"), 3, 768, "q8_0 s=3 copies whole warp tiles of 1024 weights: needs cols a multiple of 1024, got 768"},
		{"q8_0", mustParse(t, "r1f0u2s3w8l1"), 3, 1024, "q8_0 s=3 (bulk copies of whole tiles) needs layout l in 2, got l=1"},
		// q6_K's raw blocks are 2-byte aligned: its ring and bulk copies
		// need the interleaved tiles; q5_K's 176-byte blocks have a ring.
		{"q6_K", v1, 37, 256, ""},
		{"q6_K", v1, 37, 384, "q6_K needs cols a multiple of 256, got 384"},
		{"q5_K", v1, 37, 640, "q5_K needs cols a multiple of 256, got 640"},
		{"q6_K", mustParse(t, "r1f0u2s2w8"), 3, 256, "q6_K s=2 (weight ring) needs layout l in 1, got l=0"},
		{"q6_K", mustParse(t, "r1f0u2s2w8l1"), 3, 2048, ""},
		{"q6_K", mustParse(t, "r1f0u2s3w8l1"), 3, 4096, ""},
		{"q6_K", mustParse(t, "r1f0u2s3w8"), 3, 4096, "q6_K s=3 (bulk copies of whole tiles) needs layout l in 1, got l=0"},
		{"q5_K", mustParse(t, "r1f0u2s2w8a1"), 3, 256, ""},
		{"q5_K", l1, 1, 4352, "q5_K layout l=1 (interleaved warp tiles) needs cols a multiple of 2048, got 4352"},
		{"q5_K", v1, 1, 4352, ""},
		{"bf16", mustParse(t, "r1f0u2s2w8"), 3, 8, ""},
		{"bf16", v1, 1, 8, ""},
		{"bf16", v1, 1, 12, "bf16 needs cols a multiple of 8, got 12"},
		{"bf16", space.Params{R: 7, U: 1, W: 8}, 1, 8, "r=7"},
		{"bf16", v1, 128256, 4096, ""},
		{"bf16", v1, 1 << 30, 1 << 20, "more than"},
	}
	for _, tc := range tests {
		err := mustFamily(t, tc.format).Gate(tc.p, tc.rows, tc.cols)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s Gate(%s, %dx%d) = %v", tc.format, tc.p, tc.rows, tc.cols, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s Gate(%s, %dx%d) = %v, want %q", tc.format, tc.p, tc.rows, tc.cols, err, tc.want)
		}
		if err != nil && !strings.Contains(tc.want, "=") && !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s Gate(%dx%d): %v does not wrap ErrShape", tc.format, tc.rows, tc.cols, err)
		}
	}
}

func TestLaunch(t *testing.T) {
	tests := []struct {
		id         string
		rows, cols int
		grid       uint32
		block      uint32
		smem       uint32
	}{
		{"v1", 4096, 4096, 512, 256, 0},
		{"r3f0u1s0w4", 4096, 4096, 342, 128, 0},
		{"r1f0u1s1w16", 1000, 14336, 63, 512, 14336*4 + 14336/32*16},
		{"r8f0u1s0w2", 1, 64, 1, 64, 0},
		// g: ceil(groups / g) blocks; the rest of the launch is unchanged.
		{"r1f0u4s1w16g8", 28672, 8192, 224, 512, 8192*4 + 8192/32*16},
		{"r3f0u1s0w4g4", 4096, 4096, 86, 128, 0}, // 342 groups
		{"r8f0u1s0w2g128", 1, 64, 1, 64, 0},      // never 0 blocks
		{"r1f0u1s0w8g2", 8 * 7, 4096, 4, 256, 0}, // 7 groups
	}
	f := mustFamily(t, "q8_0")
	// g does not change a staged kernel: one source (and cubin) for every
	// g, built with the row-group loop. Unstaged kernels get the loop only
	// when g > 0, so stock stays loop-free.
	for _, id := range []string{"r1f0u4s1w16g8l1a1", "r1f0u4s1w16g128l1a1"} {
		a, errA := f.Source(mustParse(t, id))
		b, errB := f.Source(mustParse(t, "r1f0u4s1w16l1a1"))
		if errA != nil || errB != nil || a != b || !strings.Contains(a, "#define GEMV_LOOP 1\n") {
			t.Errorf("Source(%s) differs from its g=0 source or lacks the loop (%v, %v)", id, errA, errB)
		}
	}
	for id, loop := range map[string]string{"v1": "0", "r2f0u4s0w8": "0", "r2f0u4s0w8g4": "1"} {
		if src, err := f.Source(mustParse(t, id)); err != nil || !strings.Contains(src, "#define GEMV_LOOP "+loop+"\n") {
			t.Errorf("Source(%s): want GEMV_LOOP %s (%v)", id, loop, err)
		}
	}
	if got := mustFamily(t, "bf16").Launch(mustParse(t, "r1f0u1s1w8"), 8, 4096).SharedBytes; got != 4096*4 {
		t.Errorf("bf16 s=1 smem %d, want %d (no padding for 8-weight chunks)", got, 4096*4)
	}
	if got := mustFamily(t, "q4_K").Launch(mustParse(t, "r1f0u1s1w8"), 8, 4096).SharedBytes; got != 4096*4+64*16 {
		t.Errorf("q4_K s=1 smem %d, want %d", got, 4096*4+64*16)
	}
	// s=2 adds each warp's ring: u slots × r rows × (512 B per 16-byte
	// part + 128 B per 4-byte part), after the staged x.
	for _, tc := range []struct {
		format, id string
		want       uint32
	}{
		{"q4_K", "r1f0u2s2w8a1", 8192/64*112 + 8*2*1*(3*512)},
		{"q4_K", "r2f0u4s2w4", 8192*4 + 8192/64*16 + 4*4*2*(3*512)},
		{"affine4", "r1f0u4s2w16a1", 8192/32*48 + 16*4*1*(512+2*128)},
		{"q8_0", "r2f0u2s2w8l2", 8192*4 + 8192/32*16 + 8*2*2*(2*512+128)},
		{"bf16", "r1f0u8s2w4", 8192*4 + 4*8*1*512}, // 8-weight chunks: x without padding
		// s=3: two slots of r copies of u tiles per warp, then two 8-byte
		// barriers per warp.
		{"q4_0", "r2f0u2s3w16l2a1", 8192/32*48 + 16*2*(2*2*576+8)},
		{"q4_K", "r1f0u1s3w16l1a1", 8192/64*112 + 16*2*(1*1*1152+8)},
		{"q8_0", "r1f0u2s3w8l2a1", 8192/32*48 + 8*2*(1*2*1088+8)},
		{"affine4", "r2f0u4s3w8l1", 8192*4 + 8192/32*16 + 8*2*(2*4*576+8)},
		{"bf16", "r4f0u4s3w8", 8192*4 + 8*2*(4*4*512+8)},
	} {
		if got := mustFamily(t, tc.format).Launch(mustParse(t, tc.id), 64, 8192).SharedBytes; got != tc.want {
			t.Errorf("%s %s smem %d, want %d", tc.format, tc.id, got, tc.want)
		}
	}
	for format, want := range map[string][]int{"q4_0": {0, 1, 2, 3}, "q8_0": {0, 1, 2, 3}, "bf16": {0, 1, 2, 3}, "q4_K": {0, 1, 2, 3}, "q5_K": {0, 1, 2, 3}, "q6_K": {0, 1, 2, 3}, "affine4": {0, 1, 2, 3}} {
		if got := mustFamily(t, format).Stagings(); !slices.Equal(got, want) {
			t.Errorf("%s Stagings() = %v, want %v", format, got, want)
		}
	}
	for _, tc := range tests {
		l := f.Launch(mustParse(t, tc.id), tc.rows, tc.cols)
		if l.Grid != [3]uint32{tc.grid, 1, 1} || l.Block != [3]uint32{tc.block, 1, 1} || l.SharedBytes != tc.smem {
			t.Errorf("Launch(%s, %dx%d) = %+v, want grid %d block %d smem %d", tc.id, tc.rows, tc.cols, l, tc.grid, tc.block, tc.smem)
		}
	}
}

func TestRepack(t *testing.T) {
	// The interleaved layout (l=1 of q4_K and affine4, l=2 of q4_0) is
	// RepackInterleaved and needs its tile's cols.
	for name, l := range map[string]int{"q4_0": 2, "q4_K": 1, "affine4": 1} {
		f := mustFamily(t, name)
		tile := variants.InterleavedTileWeights(name)
		raw := randomQuantized(t, f.Format(), 2, tile, 3)
		got, err := f.Repack(raw, 2, tile, l)
		want, _ := variants.RepackInterleaved(name, raw, 2, tile)
		if err != nil || !bytes.Equal(got, want) || bytes.Equal(got, raw) {
			t.Errorf("%s Repack l=1 differs from RepackInterleaved or kept the raw order (%v)", name, err)
		}
		half := randomQuantized(t, f.Format(), 2, tile/2, 4)
		if _, err := f.Repack(half, 2, tile/2, l); !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s Repack l=%d at 2x%d = %v, want ErrShape", name, l, tile/2, err)
		}
		p := space.Params{R: 1, U: 1, W: 8, L: l}
		if err := f.Gate(p, 2, tile/2); err == nil || !strings.Contains(err.Error(), "interleaved warp tiles") {
			t.Errorf("%s Gate(%s, 2x%d) = %v, want the tile rule", name, p, tile/2, err)
		}
	}
	const rows, cols = 3, 64
	for _, name := range []string{"q4_0", "q8_0", "bf16"} {
		f := mustFamily(t, name)
		raw := randomQuantized(t, f.Format(), rows, cols, 1)
		same, err := f.Repack(raw, rows, cols, 0)
		if err != nil || !bytes.Equal(same, raw) {
			t.Errorf("%s Repack l=0 changed the bytes (%v)", name, err)
		}
		planes, err := f.Repack(raw, rows, cols, 1)
		if name == "bf16" {
			if err == nil || !strings.Contains(err.Error(), "no layout l=1") {
				t.Errorf("bf16 Repack l=1 = %v", err)
			}
			continue
		}
		want, _ := variants.RepackPlanes(name, raw, rows, cols)
		if err != nil || !bytes.Equal(planes, want) || len(planes) != len(raw) {
			t.Errorf("%s Repack l=1 differs from RepackPlanes (%v)", name, err)
		}
		if _, err := f.Repack(raw[:10], rows, cols, 1); err == nil {
			t.Errorf("%s Repack accepted a short buffer", name)
		}
		// l=2 (tiles of 8 blocks, q8_0 only) needs cols a multiple of 256:
		// the gate and Repack refuse 64, accept 256.
		if name == "q4_0" { // l=2 is q4_0's interleaved layout (the loop above)
			continue
		}
		if _, err := f.Repack(raw, rows, cols, 2); !errors.Is(err, variants.ErrShape) {
			t.Errorf("%s Repack l=2 at %dx%d = %v, want ErrShape", name, rows, cols, err)
		}
		tiled := mustParse(t, "r1f0u1s1w8l2")
		if err := f.Gate(tiled, rows, cols); err == nil || !strings.Contains(err.Error(), "multiple of 256") {
			t.Errorf("%s Gate(l2, %dx%d) = %v", name, rows, cols, err)
		}
		raw256 := randomQuantized(t, f.Format(), rows, 256, 2)
		tiles, err := f.Repack(raw256, rows, 256, 2)
		want, _ = variants.RepackTiles(name, raw256, rows, 256)
		if err != nil || !bytes.Equal(tiles, want) || f.Gate(tiled, rows, 256) != nil {
			t.Errorf("%s Repack l=2 differs from RepackTiles or the gate refused 256 cols (%v)", name, err)
		}
	}
}

func TestLayoutDescription(t *testing.T) {
	tests := []struct {
		format string
		l      int
		want   string
	}{
		{"q4_0", 0, "raw bytes"},
		{"q4_0", 1, "planes (variants.RepackPlanes)"},
		{"q4_0", 2, "interleaved warp tiles (variants.RepackInterleaved)"},
		{"q8_0", 2, "tiles of 8 blocks (variants.RepackTiles)"},
		{"q4_K", 1, "interleaved warp tiles (variants.RepackInterleaved)"},
		{"affine4", 1, "interleaved warp tiles (variants.RepackInterleaved)"},
		{"bf16", 1, ""},
		{"q4_K", 2, ""},
		{"q5_1", 1, ""},
	}
	for _, tc := range tests {
		if got := variants.LayoutDescription(tc.format, tc.l); got != tc.want {
			t.Errorf("LayoutDescription(%s, %d) = %q, want %q", tc.format, tc.l, got, tc.want)
		}
	}
}
