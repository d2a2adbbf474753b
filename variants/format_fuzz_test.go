package variants_test

import (
	"errors"
	"math"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// FuzzDequantize feeds arbitrary bytes to every format's Dequantize and
// Reference: they must never panic, must reject a wrong size with ErrBuffer,
// and Reference must equal the float64 GEMV of what Dequantize returns.
// NaN and Inf scales may produce NaN and Inf.
func FuzzDequantize(f *testing.F) {
	f.Add([]byte{0x00, 0x38, 0xf0, 0xe1}, uint8(0), uint8(0))
	f.Add(make([]byte, 300), uint8(2), uint8(5))
	f.Add([]byte{0xff, 0x7c, 0xff, 0xff, 0x01, 0x7c}, uint8(3), uint8(9))
	long := make([]byte, 2000)
	for i := range long {
		long[i] = byte(i * 37)
	}
	f.Add(long, uint8(1), uint8(255))
	f.Add(long, uint8(4), uint8(17))
	f.Fuzz(func(t *testing.T, data []byte, pick, shape uint8) {
		fs := variants.Formats()
		fm := fs[int(pick)%len(fs)]
		rows := 1 + int(shape)%3
		cols := fm.BlockWeights() * (1 + int(shape>>2)%3)
		if fm.BlockWeights() == 1 {
			cols = 1 + int(shape>>2)
		}
		n, err := fm.Bytes(rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != n {
			if _, err := fm.Dequantize(data, rows, cols); !errors.Is(err, variants.ErrBuffer) {
				t.Fatalf("%s %dx%d with %d bytes (want %d): error %v, want ErrBuffer", fm.Name(), rows, cols, len(data), n, err)
			}
			if int64(len(data)) < n {
				return
			}
			data = data[:n]
		}
		w, err := fm.Dequantize(data, rows, cols)
		if err != nil || len(w) != rows*cols {
			t.Fatalf("%s %dx%d: %d weights, %v", fm.Name(), rows, cols, len(w), err)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = 1 + float32(i)/64
		}
		y, err := fm.Reference(data, x, rows, cols)
		if err != nil || len(y) != rows {
			t.Fatalf("%s: Reference: %d outputs, %v", fm.Name(), len(y), err)
		}
		for r := 0; r < rows; r++ {
			var s float64
			for c := 0; c < cols; c++ {
				s += float64(w[r*cols+c]) * float64(x[c])
			}
			if s != y[r] && !(math.IsNaN(s) && math.IsNaN(y[r])) {
				t.Fatalf("%s: row %d: Reference %v, float64 GEMV of Dequantize %v", fm.Name(), r, y[r], s)
			}
		}
	})
}
