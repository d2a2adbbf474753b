package variants

import "encoding/binary"

func init() { registerFormat(bf16{}) }

// bf16 is dense bfloat16, 2 bytes per weight, little-endian, row-major.
type bf16 struct{}

func (bf16) Name() string      { return "bf16" }
func (bf16) BlockWeights() int { return 1 }
func (bf16) finiteOnly() bool  { return false }

func (bf16) Bytes(rows, cols int) (int64, error) { return blockSize("bf16", 1, 2, rows, cols) }

func (f bf16) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(f, w, rows, cols)
}
func (f bf16) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f bf16) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

// encodeRows rounds each weight to nearest even (F32ToBF16); NaN stays NaN.
func (bf16) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols; i < r1*cols; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], F32ToBF16(w[i]))
	}
}

func (bf16) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	row := b[2*r*cols : 2*(r+1)*cols]
	for c := range dst {
		dst[c] = BF16ToF32(binary.LittleEndian.Uint16(row[2*c:]))
	}
}

func (bf16) ggmlType() string { return "BF16" }
