package variants

import "encoding/binary"

// GGUF block_q4_0 (ggml/src/ggml-common.h): f16 d, then 16 bytes qs.
const (
	q4_0Weights = 32
	q4_0Bytes   = 18
)

func init() { registerFormat(q4_0{}) }

// q4_0 is GGML's Q4_0: blocks of 32 weights, value (q-8)*d with one f16
// scale d per block. Weight j (0..15) of a block is the low nibble of qs[j],
// weight j+16 the high nibble.
type q4_0 struct{}

func (q4_0) Name() string      { return "q4_0" }
func (q4_0) BlockWeights() int { return q4_0Weights }
func (q4_0) finiteOnly() bool  { return true }

func (q4_0) Bytes(rows, cols int) (int64, error) {
	return blockSize("q4_0", q4_0Weights, q4_0Bytes, rows, cols)
}

func (f q4_0) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(f, w, rows, cols)
}
func (f q4_0) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f q4_0) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

func (q4_0) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols / q4_0Weights; i < r1*cols/q4_0Weights; i++ {
		quantizeQ4_0Block(w[i*q4_0Weights:(i+1)*q4_0Weights], out[i*q4_0Bytes:(i+1)*q4_0Bytes])
	}
}

func (q4_0) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	nb := cols / q4_0Weights
	for k := 0; k < nb; k++ {
		blk := b[(r*nb+k)*q4_0Bytes : (r*nb+k+1)*q4_0Bytes]
		dequantizeQ4_0Block(blk, dst[k*q4_0Weights:(k+1)*q4_0Weights])
	}
}

// quantizeQ4_0Block follows quantize_row_q4_0_ref (ggml/src/ggml-quants.c):
// d = max / -8 where max is the weight of largest magnitude (sign kept),
// q = min(15, (int8_t)(x*id + 8.5f)) with id = 1/d (0 when d is 0).
// The float32() conversions keep the compiler from fusing multiply and add,
// as the C reference does not fuse them either.
func quantizeQ4_0Block(x []float32, dst []byte) {
	var amax, vmax float32
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, vmax = a, v
		}
	}
	d := vmax / -8
	var id float32
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	for j := 0; j < q4_0Weights/2; j++ {
		x0 := float32(x[j] * id)
		x1 := float32(x[j+q4_0Weights/2] * id)
		dst[2+j] = q4Trunc(x0+8.5) | q4Trunc(x1+8.5)<<4
	}
}

// q4Trunc is MIN(15, (int8_t)v) for the range the reference produces
// (v in [0.5, 16.5]), clamped below at 0 for safety.
func q4Trunc(v float32) uint8 {
	i := int32(v) // truncation toward zero, like the C cast
	return uint8(max(0, min(15, i)))
}

// dequantizeQ4_0Block follows dequantize_row_q4_0: y = (q - 8) * d in float32.
func dequantizeQ4_0Block(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk))
	qs := blk[2:q4_0Bytes]
	for j := 0; j < q4_0Weights/2; j++ {
		y[j] = float32(int32(qs[j]&0x0f)-8) * d
		y[j+q4_0Weights/2] = float32(int32(qs[j]>>4)-8) * d
	}
}

// The interleaved layout of q4_0 (l = 2, docs/formats.md): warp tiles of
// 32 blocks, 32 chunks of 32 weights: the blocks' f16 d (64 bytes), then
// their 32 × 16 qs bytes.
const (
	q40TileWeights = 32 * 32
	q40TileBytes   = 32 * 18
)

func (q4_0) tileWeights() int { return q40TileWeights }

// tileRuns: tile t of row r at r*rowBytes + t*576 holds blocks
// 32t..32t+31 of the row: block k's f16 d goes to 2k, its 16 qs bytes to
// 64 + 16k.
func (q4_0) tileRuns(rows, cols int, move func(rawOff, tiledOff, n int)) {
	rowBytes := cols / 32 * 18
	for r := 0; r < rows; r++ {
		for t := 0; t < cols/q40TileWeights; t++ {
			tile := r*rowBytes + t*q40TileBytes
			for k := 0; k < 32; k++ {
				blk := tile + 18*k // tiles keep the row's bytes in place
				move(blk, tile+2*k, 2)
				move(blk+2, tile+64+16*k, 16)
			}
		}
	}
}

func (q4_0) quantBytes() int { return q4_0Bytes - 2 }

func (q4_0) ggmlType() string { return "Q4_0" }
