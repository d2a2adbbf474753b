package variants

import "encoding/binary"

// GGUF block_q5_K (ggml/src/ggml-common.h): f16 d, f16 dmin, 12 bytes of
// packed 6-bit sub-block scales and mins (as q4_K), 32 bytes of fifth bits
// (qh), 128 bytes of nibbles: 176 bytes per 256 weights, 16-byte aligned.
const (
	q5KWeights = 256
	q5KBytes   = 176
	q5KQhOff   = 16
	q5KQsOff   = 48
)

func init() { registerFormat(q5K{}) }

// q5K is GGML's Q5_K: q4_K's super-block with a fifth bit per weight. The
// 32 qh bytes are shared by all eight sub-blocks: weight l (0..31) of
// sub-block s takes bit s of qh[l] (not a byte range of its own).
type q5K struct{}

func (q5K) Name() string      { return "q5_K" }
func (q5K) BlockWeights() int { return q5KWeights }
func (q5K) finiteOnly() bool  { return true }

func (q5K) Bytes(rows, cols int) (int64, error) {
	return blockSize("q5_K", q5KWeights, q5KBytes, rows, cols)
}

func (f q5K) Quantize(w []float32, rows, cols int) ([]byte, error) { return quantize(f, w, rows, cols) }
func (f q5K) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f q5K) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

func (q5K) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols / q5KWeights; i < r1*cols/q5KWeights; i++ {
		quantizeQ5KBlock(w[i*q5KWeights:(i+1)*q5KWeights], out[i*q5KBytes:(i+1)*q5KBytes])
	}
}

func (q5K) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	nb := cols / q5KWeights
	for k := 0; k < nb; k++ {
		blk := b[(r*nb+k)*q5KBytes : (r*nb+k+1)*q5KBytes]
		dequantizeQ5KBlock(blk, dst[k*q5KWeights:(k+1)*q5KWeights])
	}
}

// dequantizeQ5KBlock follows dequantize_row_q5_K exactly: d1 = d*sc and
// m1 = dmin*m in float32, then y = d1*(nibble + 16*bit) - m1, a float32
// multiply followed by a float32 subtract.
func dequantizeQ5KBlock(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
	dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales, qh, qs := blk[4:16], blk[q5KQhOff:q5KQsOff], blk[q5KQsOff:q5KBytes]
	for s := range q4KSubBlocks {
		sc, m := getScaleMinK4(s, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			q := qs[32*(s/2)+l] >> (4 * (s & 1)) & 0xf
			q |= (qh[l] >> s & 1) << 4
			y[32*s+l] = float32(d1*float32(q)) - m1
		}
	}
}

// quantizeQ5KBlock is kQuantize with 5-bit levels, packed as
// quantize_row_q5_K_ref packs them: the low nibbles of sub-blocks 2j and
// 2j+1 in qs[32j..32j+31], their fifth bits as bits 2j and 2j+1 of qh.
func quantizeQ5KBlock(x []float32, dst []byte) {
	L := kQuantize(x, 31, dst)
	qh, qs := dst[q5KQhOff:q5KQsOff], dst[q5KQsOff:q5KBytes]
	clear(qh)
	for s := range q4KSubBlocks {
		for l := 0; l < 32; l++ {
			q := L[32*s+l]
			if s&1 == 0 {
				qs[32*(s/2)+l] = q & 0xf
			} else {
				qs[32*(s/2)+l] |= (q & 0xf) << 4
			}
			qh[l] |= (q >> 4) << s
		}
	}
}

// The interleaved layout of q5_K (l = 1, docs/formats.md): warp tiles of 8
// super-blocks (2048 weights, 1408 bytes): their 8 headers (128 bytes),
// their 8 qh arrays (256), then the 32 chunks' low (512) and high (512)
// 16-byte halves of nibbles.
const (
	q5KTileWeights = 8 * q5KWeights
	q5KTileBytes   = 8 * q5KBytes
)

func (q5K) tileWeights() int { return q5KTileWeights }

// tileRuns: tile t of row r at r*rowBytes + t*1408 holds super-blocks
// 8t..8t+7 of the row. Super-block k's 16-byte header goes to 16k, its 32
// qh bytes to 128 + 32k; the 32-byte quarter j of its qs is chunk 4k+j,
// whose low 16 bytes go to 384 + 16(4k+j) and high 16 bytes to
// 896 + 16(4k+j).
func (q5K) tileRuns(rows, cols int, move func(rawOff, tiledOff, n int)) {
	rowBytes := cols / q5KWeights * q5KBytes
	for r := 0; r < rows; r++ {
		for t := 0; t < cols/q5KTileWeights; t++ {
			tile := r*rowBytes + t*q5KTileBytes
			for k := 0; k < 8; k++ {
				sb := tile + k*q5KBytes
				move(sb, tile+16*k, 16)
				move(sb+q5KQhOff, tile+128+32*k, 32)
				for j := 0; j < 4; j++ {
					chunk := 4*k + j
					move(sb+q5KQsOff+32*j, tile+384+16*chunk, 16)
					move(sb+q5KQsOff+32*j+16, tile+896+16*chunk, 16)
				}
			}
		}
	}
}

func (q5K) ggmlType() string { return "Q5_K" }
