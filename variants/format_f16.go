package variants

import "encoding/binary"

func init() { registerFormat(f16{}) }

// f16 is dense IEEE 754 binary16, 2 bytes per weight, little-endian,
// row-major (GGUF's F16).
type f16 struct{}

func (f16) Name() string      { return "f16" }
func (f16) BlockWeights() int { return 1 }
func (f16) finiteOnly() bool  { return false }

func (f16) Bytes(rows, cols int) (int64, error) { return blockSize("f16", 1, 2, rows, cols) }

func (f f16) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(f, w, rows, cols)
}
func (f f16) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f f16) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

// encodeRows rounds each weight to nearest even (F32ToF16): beyond 65504
// it becomes ±Inf, as ggml's conversion does; NaN stays NaN.
func (f16) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols; i < r1*cols; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(w[i]))
	}
}

func (f16) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	row := b[2*r*cols : 2*(r+1)*cols]
	for c := range dst {
		dst[c] = F16ToF32(binary.LittleEndian.Uint16(row[2*c:]))
	}
}

func (f16) ggmlType() string { return "F16" }
