package variants

import (
	"encoding/binary"
	"math"
)

// GGUF block_q4_K (ggml/src/ggml-common.h): f16 d, f16 dmin, 12 bytes of
// packed 6-bit sub-block scales and mins, 128 bytes of nibbles.
const (
	q4KWeights    = 256
	q4KBytes      = 144
	q4KSubWeights = 32
	q4KSubBlocks  = q4KWeights / q4KSubWeights
)

func init() { registerFormat(q4K{}) }

// q4K is GGML's Q4_K: super-blocks of 256 weights in 8 sub-blocks of 32.
// Sub-block j has a 6-bit scale sc_j and a 6-bit min m_j; its weights are
// (d*sc_j)*q - (dmin*m_j).
type q4K struct{}

func (q4K) Name() string      { return "q4_K" }
func (q4K) BlockWeights() int { return q4KWeights }
func (q4K) finiteOnly() bool  { return true }

func (q4K) Bytes(rows, cols int) (int64, error) {
	return blockSize("q4_K", q4KWeights, q4KBytes, rows, cols)
}

func (f q4K) Quantize(w []float32, rows, cols int) ([]byte, error) { return quantize(f, w, rows, cols) }
func (f q4K) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f q4K) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

func (q4K) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols / q4KWeights; i < r1*cols/q4KWeights; i++ {
		quantizeQ4KBlock(w[i*q4KWeights:(i+1)*q4KWeights], out[i*q4KBytes:(i+1)*q4KBytes])
	}
}

func (q4K) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	nb := cols / q4KWeights
	for k := 0; k < nb; k++ {
		blk := b[(r*nb+k)*q4KBytes : (r*nb+k+1)*q4KBytes]
		dequantizeQ4KBlock(blk, dst[k*q4KWeights:(k+1)*q4KWeights])
	}
}

// getScaleMinK4 is get_scale_min_k4 (ggml/src/ggml-quants.c): sub-block j's
// 6-bit scale and min from the 12 packed bytes. Sub-blocks 0..3 keep theirs
// in the low 6 bits of bytes j and j+4; sub-blocks 4..7 keep their low 4
// bits in byte j+4 and their top 2 bits in the top bits of bytes j-4 and j.
func getScaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// putScaleMinK4 is the inverse of getScaleMinK4 (the packing in
// quantize_row_q4_K_ref); scales must start zeroed.
func putScaleMinK4(j int, sc, m uint8, q []byte) {
	if j < 4 {
		q[j] |= sc & 63
		q[j+4] |= m & 63
		return
	}
	q[j+4] = sc&0xf | (m&0xf)<<4
	q[j-4] |= (sc >> 4) << 6
	q[j] |= (m >> 4) << 6
}

// dequantizeQ4KBlock follows dequantize_row_q4_K exactly: d1 = d*sc and
// m1 = dmin*m in float32, then y = d1*q - m1 as a float32 multiply followed
// by a float32 subtract (the float32() conversion forbids fusing them).
func dequantizeQ4KBlock(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[0:]))
	dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
	scales := blk[4:16]
	q := blk[16:q4KBytes]
	is := 0
	for j := 0; j < q4KWeights; j += 64 {
		sc, m := getScaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = getScaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			y[j+l] = float32(d1*float32(q[l]&0xf)) - m1
		}
		for l := 0; l < 32; l++ {
			y[j+32+l] = float32(d2*float32(q[l]>>4)) - m2
		}
		q = q[32:]
		is += 2
	}
}

// quantizeQ4KBlock is a simple min/max quantizer, not ggml's iterative
// make_qkx2_quants (kQuantize with 4-bit weights), packed as
// quantize_row_q4_K_ref packs them.
func quantizeQ4KBlock(x []float32, dst []byte) {
	L := kQuantize(x, 15, dst)
	q := dst[16:q4KBytes]
	for j := 0; j < q4KWeights; j += 64 {
		for l := 0; l < 32; l++ {
			q[j/2+l] = L[j+l] | L[j+l+32]<<4
		}
	}
}

// kQuantize sets the 16-byte header of a q4_K or q5_K super-block (f16 d,
// f16 dmin, 12 bytes of 6-bit scales and mins) for the 256 weights x and
// returns their levels 0..nmax. Each sub-block's offset m1 covers its
// minimum (clamped at 0) and its step d1 covers the rest of its range. The
// super-block scales d and dmin are rounded up to the next float16 so the
// 6-bit multipliers, also rounded up, never fall short of the range.
// Weights then take q = clamp(rint((x + m1)/d1), 0, nmax), as in
// quantize_row_q4_K_ref and _q5_K_ref.
func kQuantize(x []float32, nmax float32, dst []byte) (L [q4KWeights]uint8) {
	var lo, hi [q4KSubBlocks]float32
	var maxMin float32
	for j := range q4KSubBlocks {
		sub := x[j*q4KSubWeights : (j+1)*q4KSubWeights]
		mn, mx := float32(0), sub[0]
		for _, v := range sub {
			mn, mx = min(mn, v), max(mx, v)
		}
		lo[j], hi[j] = -mn, mx // lo >= 0: the min to subtract
		maxMin = max(maxMin, lo[j])
	}
	dmin := f16Ceil(maxMin / 63)
	var lm [q4KSubBlocks]uint8
	var need [q4KSubBlocks]float32
	var maxNeed float32
	for j := range q4KSubBlocks {
		lm[j] = ceil6(lo[j], dmin)
		m1 := dmin * float32(lm[j])
		need[j] = max(0, (hi[j]+m1)/nmax)
		maxNeed = max(maxNeed, need[j])
	}
	d := f16Ceil(maxNeed / 63)
	binary.LittleEndian.PutUint16(dst[0:], F32ToF16(d))
	binary.LittleEndian.PutUint16(dst[2:], F32ToF16(dmin))
	scales := dst[4:16]
	clear(scales)
	var ls [q4KSubBlocks]uint8
	for j := range q4KSubBlocks {
		ls[j] = ceil6(need[j], d)
		putScaleMinK4(j, ls[j], lm[j], scales)
	}
	for j := range q4KSubBlocks {
		d1 := d * float32(ls[j])
		if d1 == 0 {
			continue
		}
		m1 := dmin * float32(lm[j])
		for i := 0; i < q4KSubWeights; i++ {
			v := roundEven32(float32(x[j*q4KSubWeights+i]+m1) / d1)
			L[j*q4KSubWeights+i] = uint8(max(0, min(nmax, v)))
		}
	}
	return L
}

// f16Ceil returns the smallest float16 value (as float32) >= v, for v >= 0
// below the float16 maximum; larger values saturate at +Inf like F32ToF16.
func f16Ceil(v float32) float32 {
	h := F32ToF16(v)
	if F16ToF32(h) < v && h < 0x7c00 {
		h++
	}
	return F16ToF32(h)
}

// ceil6 returns the smallest multiplier k in 0..63 with unit*k >= v
// (63 when none is), 0 when unit is 0.
func ceil6(v, unit float32) uint8 {
	if unit == 0 || v <= 0 {
		return 0
	}
	k := min(63, float32(math.Ceil(float64(v/unit))))
	for k > 0 && unit*(k-1) >= v { // undo a quotient rounded up past an exact multiple
		k--
	}
	for k < 63 && unit*k < v { // and one rounded down below it
		k++
	}
	return uint8(k)
}

// The interleaved layout of q4_K (l = 1, docs/formats.md): warp tiles of 8
// super-blocks, 32 chunks of 64 weights: 8 headers (128 bytes), then the
// 32 chunks' low halves (512), then their high halves (512).
const (
	q4KTileWeights = 8 * 256
	q4KTileBytes   = 8 * 144
)

func (q4K) tileWeights() int { return q4KTileWeights }

// tileRuns: tile t of row r at r*rowBytes + t*1152 holds super-blocks
// 8t..8t+7 of the row. Super-block k's 16-byte header goes to 16k; the
// 32-byte quarter j of its 128 qs bytes is chunk 4k+j, whose low 16 bytes
// go to 128 + 16(4k+j) and high 16 bytes to 640 + 16(4k+j).
func (q4K) tileRuns(rows, cols int, move func(rawOff, tiledOff, n int)) {
	rowBytes := cols / 256 * 144
	for r := 0; r < rows; r++ {
		for t := 0; t < cols/q4KTileWeights; t++ {
			tile := r*rowBytes + t*q4KTileBytes
			for k := 0; k < 8; k++ {
				sb := tile + k*144 // the raw super-block: tiles keep the row's bytes in place
				move(sb, tile+16*k, 16)
				for j := 0; j < 4; j++ {
					chunk := 4*k + j
					move(sb+16+32*j, tile+128+16*chunk, 16)
					move(sb+16+32*j+16, tile+640+16*chunk, 16)
				}
			}
		}
	}
}

func (q4K) ggmlType() string { return "Q4_K" }
