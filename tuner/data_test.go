package tuner

import (
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// TestMakeJobDataBands checks that the job data made in parallel bands is
// one consistent matrix: the reference computed band by band equals the
// reference of the assembled bytes (a band copied to the wrong place, or a
// plane of affine4 to the wrong offset, changes the latter), and no output
// or byte region is left as allocated.
func TestMakeJobDataBands(t *testing.T) {
	for _, tc := range []struct {
		format     string
		rows, cols int
	}{
		{"q4_0", 37, 64}, {"q8_0", 67, 96}, {"q4_K", 41, 512}, {"affine4", 37, 128}, {"affine4", 300, 64}, {"bf16", 5, 32},
	} {
		f, err := variants.FormatOf(tc.format)
		if err != nil {
			t.Fatal(err)
		}
		d, err := makeJobData(f, tc.rows, tc.cols, 7)
		if err != nil {
			t.Fatalf("%s %dx%d: %v", tc.format, tc.rows, tc.cols, err)
		}
		whole, err := f.Reference(d.raw, d.x, tc.rows, tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		for r := range whole {
			if whole[r] != d.ref[r] || d.ref[r] == 0 {
				t.Errorf("%s %dx%d row %d: reference of the assembled bytes %g, of its band %g", tc.format, tc.rows, tc.cols, r, whole[r], d.ref[r])
				break
			}
		}
		w, err := f.Dequantize(d.raw, tc.rows, tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < tc.rows; r++ {
			zero := true
			for _, v := range w[r*tc.cols : (r+1)*tc.cols] {
				zero = zero && v == 0
			}
			if zero {
				t.Errorf("%s %dx%d: row %d dequantizes to zeros (bytes not filled)", tc.format, tc.rows, tc.cols, r)
			}
		}
	}
}
