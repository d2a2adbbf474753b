package variants

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// ErrNonFinite is returned (wrapped) by Quantize of q4_0, q8_0, q4_K and
// affine4 when a weight is NaN or ±Inf: their scales are derived from the
// block's range, so one such weight would poison a whole block. bf16 keeps
// NaN and Inf.
var ErrNonFinite = errors.New("non-finite weight")

// codec is what each format file implements; the drivers below turn it into
// the Format methods with the shared checks (shape, buffer sizes, finiteness).
type codec interface {
	Format
	// encodeRows writes rows [r0, r1) of w into out, the whole tensor's
	// raw bytes (already sized by Bytes).
	encodeRows(w []float32, out []byte, rows, cols, r0, r1 int)
	// decodeRow writes row r of the raw tensor b into dst (len cols).
	decodeRow(b []byte, rows, cols, r int, dst []float32)
	// finiteOnly reports whether Quantize rejects NaN and Inf.
	finiteOnly() bool
}

// blockSize computes the exact raw size of a [rows, cols] tensor whose rows
// are cut into blocks of weights weights stored in blockBytes bytes each.
func blockSize(name string, weights, blockBytes, rows, cols int) (int64, error) {
	if rows <= 0 || cols <= 0 || cols%weights != 0 {
		return 0, fmt.Errorf("%s: shape %dx%d: %w: rows must be positive and cols a positive multiple of %d",
			name, rows, cols, ErrShape, weights)
	}
	perRow := int64(cols/weights) * int64(blockBytes)
	if int64(rows) > math.MaxInt/perRow || rows > math.MaxInt/cols {
		return 0, fmt.Errorf("%s: shape %dx%d: %w: too large for this platform's int", name, rows, cols, ErrShape)
	}
	return int64(rows) * perRow, nil
}

func checkBytes(name string, got int, want int64) error {
	if int64(got) != want {
		return fmt.Errorf("%s: weight bytes: %w: have %d, want %d", name, ErrBuffer, got, want)
	}
	return nil
}

func checkFloats(name, what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s: %s: %w: have %d float32s, want %d", name, what, ErrBuffer, got, want)
	}
	return nil
}

// quantize is the shared body of every Format.Quantize.
func quantize(f codec, w []float32, rows, cols int) ([]byte, error) {
	n, err := f.Bytes(rows, cols)
	if err != nil {
		return nil, err
	}
	if err := checkFloats(f.Name(), "weights", len(w), rows*cols); err != nil {
		return nil, err
	}
	if f.finiteOnly() {
		for i, v := range w {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("%s: weight [%d,%d] = %v: %w: %s accepts finite weights only",
					f.Name(), i/cols, i%cols, v, ErrNonFinite, f.Name())
			}
		}
	}
	out := make([]byte, n)
	parallelRows(rows, cols, func(r0, r1 int) { f.encodeRows(w, out, rows, cols, r0, r1) })
	return out, nil
}

// dequantize is the shared body of every Format.Dequantize.
func dequantize(f codec, b []byte, rows, cols int) ([]float32, error) {
	n, err := f.Bytes(rows, cols)
	if err != nil {
		return nil, err
	}
	if err := checkBytes(f.Name(), len(b), n); err != nil {
		return nil, err
	}
	out := make([]float32, rows*cols)
	parallelRows(rows, cols, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			f.decodeRow(b, rows, cols, r, out[r*cols:(r+1)*cols])
		}
	})
	return out, nil
}

// reference is the shared body of every Format.Reference: y[r] is the sum,
// in column order and in float64, of float64(w[r][c]) * float64(x[c]) over
// the dequantized weights. It decodes one row at a time, so it needs no
// rows*cols buffer.
func reference(f codec, b []byte, x []float32, rows, cols int) ([]float64, error) {
	n, err := f.Bytes(rows, cols)
	if err != nil {
		return nil, err
	}
	if err := checkBytes(f.Name(), len(b), n); err != nil {
		return nil, err
	}
	if err := checkFloats(f.Name(), "x", len(x), cols); err != nil {
		return nil, err
	}
	y := make([]float64, rows)
	parallelRows(rows, cols, func(r0, r1 int) {
		row := make([]float32, cols)
		for r := r0; r < r1; r++ {
			f.decodeRow(b, rows, cols, r, row)
			var s float64
			for c, w := range row {
				s += float64(w) * float64(x[c])
			}
			y[r] = s
		}
	})
	return y, nil
}

// parallelRows calls work on disjoint row ranges covering [0, rows), on
// several goroutines when the tensor is large enough to be worth it.
func parallelRows(rows, cols int, work func(r0, r1 int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers > rows {
		workers = rows
	}
	if workers <= 1 || rows*cols < 1<<16 {
		work(0, rows)
		return
	}
	var wg sync.WaitGroup
	per := (rows + workers - 1) / workers
	for r0 := 0; r0 < rows; r0 += per {
		r1 := min(r0+per, rows)
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(r0, r1)
		}()
	}
	wg.Wait()
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// roundEven32 rounds to the nearest integer, ties to even, like C's rint and
// nearbyint in the default rounding mode (and ggml's nearest_int).
func roundEven32(v float32) float32 { return float32(math.RoundToEven(float64(v))) }

// roundAway32 rounds to the nearest integer, ties away from zero, like C's roundf.
func roundAway32(v float32) float32 { return float32(math.Round(float64(v))) }
