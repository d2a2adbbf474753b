package variants

import "encoding/binary"

func init() {
	registerFormat(dense16{name: "bf16", ggml: "BF16", toF32: BF16ToF32, fromF32: F32ToBF16})
	registerFormat(dense16{name: "f16", ggml: "F16", toF32: F16ToF32, fromF32: F32ToF16})
}

// dense16 is a dense 16-bit float format, 2 bytes per weight,
// little-endian, row-major: bf16 (bits << 16) and IEEE binary16 (GGUF's
// F16). Both keep NaN and ±Inf; rounding is to nearest even (F32ToBF16,
// F32ToF16: f16 becomes ±Inf beyond 65504, as ggml's conversion does).
type dense16 struct {
	name, ggml string
	toF32      func(uint16) float32
	fromF32    func(float32) uint16
}

func (d dense16) Name() string     { return d.name }
func (dense16) BlockWeights() int  { return 1 }
func (dense16) finiteOnly() bool   { return false }
func (d dense16) ggmlType() string { return d.ggml }

func (d dense16) Bytes(rows, cols int) (int64, error) { return blockSize(d.name, 1, 2, rows, cols) }

func (d dense16) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(d, w, rows, cols)
}
func (d dense16) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(d, b, rows, cols)
}
func (d dense16) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(d, b, x, rows, cols)
}

func (d dense16) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols; i < r1*cols; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], d.fromF32(w[i]))
	}
}

func (d dense16) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	row := b[2*r*cols : 2*(r+1)*cols]
	for c := range dst {
		dst[c] = d.toF32(binary.LittleEndian.Uint16(row[2*c:]))
	}
}
