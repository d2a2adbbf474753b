package variants_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// TestKQuantsAgainstGGML decodes super-blocks that ggml's own reference
// quantizers made (testdata/kquants_ggml.txt, written by
// testdata/gen_kquants.c against ggml-quants.c) and compares every float
// with what ggml's dequantize_row_q6_K / _q5_K made of them, through the
// sha256 of their little-endian bits. The cases include all-zero blocks,
// one-signed and outlier weights, subnormal and large scales, and (q6_K)
// negative d with the sc = -128 that ggml's quantizer always writes.
func TestKQuantsAgainstGGML(t *testing.T) {
	fh, err := os.Open("testdata/kquants_ggml.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	seen := map[string]int{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 4 {
			t.Fatalf("bad line %q", line)
		}
		name, blocks, want := fields[0], fields[2], fields[3]
		raw, err := hex.DecodeString(blocks)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mustFormat(t, name).Dequantize(raw, 1, 512)
		if err != nil {
			t.Fatalf("%s case %s: %v", name, fields[1], err)
		}
		bits := make([]byte, 4*len(got))
		for i, v := range got {
			binary.LittleEndian.PutUint32(bits[4*i:], math.Float32bits(v))
		}
		if sum := sha256.Sum256(bits); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s case %s: dequantized floats differ from ggml's (sha256 %x, want %s)", name, fields[1], sum, want)
		}
		seen[name]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"q6_K", "q5_K"} {
		if seen[name] < 8 {
			t.Errorf("%s: %d cases in the file, want 8", name, seen[name])
		}
	}
}

// TestQ6KDequantizeKnown checks the bit positions of q6_K by hand: weight
// 128n + 32g + l takes the nibble g>>1 of ql[64n + 32(g&1) + l], bits 2g,
// 2g+1 of qh[32n + l] and scale sc[8n + l/16 + 2g] (a signed byte).
func TestQ6KDequantizeKnown(t *testing.T) {
	block := make([]byte, 210)
	binary.LittleEndian.PutUint16(block[208:], 0xb800) // d = -0.5
	for j := range 16 {
		block[192+j] = byte(int8(j*9 - 70)) // -70 .. 65, negative and positive
	}
	block[192+5] = 0x80 // -128, as ggml writes for the largest sub-block
	for n := range 2 {
		for l := range 32 {
			// q of group g at position l: (l + 7g + 13n) mod 64.
			var qh byte
			for g := range 4 {
				q := byte((l + 7*g + 13*n) % 64)
				ql := &block[64*n+32*(g&1)+l]
				*ql |= (q & 0xf) << (4 * (g >> 1))
				qh |= (q >> 4) << (2 * g)
			}
			block[128+32*n+l] = qh
		}
	}
	got, err := mustFormat(t, "q6_K").Dequantize(block, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		n, g, l := i/128, i%128/32, i%32
		q := float32((l+7*g+13*n)%64 - 32)
		s := float32(int8(block[192+8*n+l/16+2*g]))
		if want := float32(-0.5*s) * q; v != want {
			t.Fatalf("weight %d (half %d, group %d, l %d) = %v, want %v", i, n, g, l, v, want)
		}
	}
}

// TestQ5KDequantizeKnown checks q5_K's fifth bits: weight l of sub-block s
// takes bit s of qh[l], whichever quarter of qs its nibble is in.
func TestQ5KDequantizeKnown(t *testing.T) {
	block := make([]byte, 176)
	binary.LittleEndian.PutUint16(block[0:], 0x3800) // d = 0.5
	binary.LittleEndian.PutUint16(block[2:], 0x3400) // dmin = 0.25
	copy(block[4:16], q4KKnownScales[:])
	for l := range 32 {
		block[16+l] = byte(l*37 + 11) // every bit pattern of qh differs by l
		for c := range 4 {
			block[48+32*c+l] = byte(l&15) | byte(15-l&15)<<4
		}
	}
	got, err := mustFormat(t, "q5_K").Dequantize(block, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		sub, l := i/32, i%32
		q := float32(l & 15)
		if sub%2 == 1 {
			q = float32(15 - l&15)
		}
		if block[16+l]>>sub&1 == 1 {
			q += 16
		}
		want := float32(0.5*q4KKnownSc[sub]*q) - 0.25*q4KKnownM[sub]
		if v != want {
			t.Fatalf("weight %d (sub-block %d, l %d) = %v, want %v", i, sub, l, v, want)
		}
	}
}

// q6KBound: the quantizer's sub-block scale s = ext/-32 (ext the value of
// largest magnitude) becomes dj = d*sc, off by the rounding of sc; a weight
// is off by at most one step |dj| (+32 clamps to 31) plus 32 times that
// difference, plus float32 rounding.
func q6KBound(w []float32, b []byte, rows, cols, i int) float64 {
	k := i / 256
	blk := b[k*210 : (k+1)*210]
	d := float64(variants.F16ToF32(binary.LittleEndian.Uint16(blk[208:])))
	j := i % 256 / 16
	dj := d * float64(int8(blk[192+j]))
	var ext float64
	for _, v := range w[i/16*16 : i/16*16+16] {
		if math.Abs(float64(v)) > math.Abs(ext) {
			ext = float64(v)
		}
	}
	return (math.Abs(dj)+32*math.Abs(ext/-32-dj))*(1+1e-5) + 1e-6*math.Abs(ext)
}
