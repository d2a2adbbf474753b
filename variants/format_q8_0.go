package variants

import "encoding/binary"

// GGUF block_q8_0 (ggml/src/ggml-common.h): f16 d, then 32 int8 qs.
const (
	q8_0Weights = 32
	q8_0Bytes   = 34
)

func init() { registerFormat(q8_0{}) }

// q8_0 is GGML's Q8_0: blocks of 32 weights, value q*d with one f16 scale d
// per block and q a signed byte.
type q8_0 struct{}

func (q8_0) Name() string      { return "q8_0" }
func (q8_0) BlockWeights() int { return q8_0Weights }
func (q8_0) finiteOnly() bool  { return true }

func (q8_0) Bytes(rows, cols int) (int64, error) {
	return blockSize("q8_0", q8_0Weights, q8_0Bytes, rows, cols)
}

func (f q8_0) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(f, w, rows, cols)
}
func (f q8_0) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f q8_0) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

func (q8_0) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols / q8_0Weights; i < r1*cols/q8_0Weights; i++ {
		quantizeQ8_0Block(w[i*q8_0Weights:(i+1)*q8_0Weights], out[i*q8_0Bytes:(i+1)*q8_0Bytes])
	}
}

func (q8_0) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	nb := cols / q8_0Weights
	for k := 0; k < nb; k++ {
		blk := b[(r*nb+k)*q8_0Bytes : (r*nb+k+1)*q8_0Bytes]
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		y := dst[k*q8_0Weights : (k+1)*q8_0Weights]
		for j := range y {
			y[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// quantizeQ8_0Block follows quantize_row_q8_0_ref (ggml/src/ggml-quants.c):
// d = amax/127, id = 1/d (0 when d is 0), q = roundf(x*id).
func quantizeQ8_0Block(x []float32, dst []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	for j, v := range x {
		q := roundAway32(v * id)
		dst[2+j] = byte(int8(max(-128, min(127, q)))) // the clamp never acts: |v*id| <= 127 + rounding
	}
}

func (q8_0) quantBytes() int { return q8_0Bytes - 2 }

func (q8_0) tiled() {} // q8_0 has the tiled layout (l = 2)

func (q8_0) ggmlType() string { return "Q8_0" }
