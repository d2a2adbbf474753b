package variants_test

import (
	"bufio"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// TestHalfAgainstTorch checks F32ToF16 and F32ToBF16 against conversions
// made by PyTorch on the CPU and on an H200 (CUDA __float2half_rn and
// __float2bfloat16_rn), recorded in testdata/half_torch.txt by
// testdata/gen_half_torch.py: ties, subnormals, overflow and random values.
func TestHalfAgainstTorch(t *testing.T) {
	fh, err := os.Open("testdata/half_torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var v [5]uint64
		fields := strings.Fields(line)
		if len(fields) != 5 {
			t.Fatalf("bad fixture line %q", line)
		}
		for i, s := range fields {
			if v[i], err = strconv.ParseUint(s, 16, 32); err != nil {
				t.Fatalf("bad fixture line %q: %v", line, err)
			}
		}
		x := math.Float32frombits(uint32(v[0]))
		if math.IsNaN(float64(x)) {
			continue // NaN payloads differ between converters; covered elsewhere
		}
		h, b := variants.F32ToF16(x), variants.F32ToBF16(x)
		if uint64(h) != v[1] || uint64(h) != v[2] {
			t.Errorf("F32ToF16(%v [%08x]) = %04x, torch CPU %04x, CUDA %04x", x, v[0], h, v[1], v[2])
		}
		if uint64(b) != v[3] || uint64(b) != v[4] {
			t.Errorf("F32ToBF16(%v [%08x]) = %04x, torch CPU %04x, CUDA %04x", x, v[0], b, v[3], v[4])
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Fatalf("fixture has %d values, want >= 1000", n)
	}
}
