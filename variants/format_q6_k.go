package variants

import "encoding/binary"

// GGUF block_q6_K (ggml/src/ggml-common.h): 128 bytes of low nibbles (ql),
// 64 bytes of high 2-bit pairs (qh), 16 int8 sub-block scales, f16 d: 210
// bytes per 256 weights, so blocks are only 2-byte aligned.
const (
	q6KWeights    = 256
	q6KBytes      = 210
	q6KSubWeights = 16
	q6KSubBlocks  = q6KWeights / q6KSubWeights
	q6KScalesOff  = 192
	q6KDOff       = 208
)

func init() { registerFormat(q6K{}) }

// q6K is GGML's Q6_K: super-blocks of 256 weights in 16 sub-blocks of 16,
// each with a signed 8-bit scale sc_j; weights are (d*sc_j)*(q-32) with q
// 6 bits: a nibble of ql and two bits of qh.
type q6K struct{}

func (q6K) Name() string      { return "q6_K" }
func (q6K) BlockWeights() int { return q6KWeights }
func (q6K) finiteOnly() bool  { return true }

func (q6K) Bytes(rows, cols int) (int64, error) {
	return blockSize("q6_K", q6KWeights, q6KBytes, rows, cols)
}

func (f q6K) Quantize(w []float32, rows, cols int) ([]byte, error) { return quantize(f, w, rows, cols) }
func (f q6K) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f q6K) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

func (q6K) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	for i := r0 * cols / q6KWeights; i < r1*cols/q6KWeights; i++ {
		quantizeQ6KBlock(w[i*q6KWeights:(i+1)*q6KWeights], out[i*q6KBytes:(i+1)*q6KBytes])
	}
}

func (q6K) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	nb := cols / q6KWeights
	for k := 0; k < nb; k++ {
		blk := b[(r*nb+k)*q6KBytes : (r*nb+k+1)*q6KBytes]
		dequantizeQ6KBlock(blk, dst[k*q6KWeights:(k+1)*q6KWeights])
	}
}

// q6KIndex says where weight i (0..255) of a super-block keeps its bits,
// as dequantize_row_q6_K reads them: half n = i/128 holds ql[64n..64n+63]
// and qh[32n..32n+31]; within it, weight 32g+l (g = 0..3, l = 0..31) is
// the low (g < 2) or high (g ≥ 2) nibble of ql[64n + l + 32(g&1)] and bits
// 2g, 2g+1 of qh[32n + l], with scale sc[8n + l/16 + 2g].
func q6KIndex(i int) (ql, nibbleShift, qh, qhShift, scale int) {
	n, g, l := i/128, i%128/32, i%32
	return 64*n + l + 32*(g&1), 4 * (g >> 1), 32*n + l, 2 * g, 8*n + l/16 + 2*g
}

// dequantizeQ6KBlock follows dequantize_row_q6_K exactly: y = (d*sc)*(q-32),
// two float32 multiplies in that order.
func dequantizeQ6KBlock(blk []byte, y []float32) {
	d := F16ToF32(binary.LittleEndian.Uint16(blk[q6KDOff:]))
	ql, qh, sc := blk[:128], blk[128:q6KScalesOff], blk[q6KScalesOff:q6KDOff]
	for i := range q6KWeights {
		l, ns, h, hs, s := q6KIndex(i)
		q := int(ql[l]>>ns&0xf) | int(qh[h]>>hs&3)<<4
		y[i] = float32(d*float32(int8(sc[s]))) * float32(q-32)
	}
}

// quantizeQ6KBlock is a simple quantizer with ggml's conventions, not its
// search (make_qx_quants): each sub-block's scale s_j maps its value of
// largest magnitude to -32, the super-block scale is d = -s_max/128 (s_max
// the s_j of largest magnitude, so its sub-block gets sc = -128, as in
// quantize_row_q6_K_ref), sc_j = min(127, rint(s_j/d)), and weights take
// q = clamp(rint(x/(d*sc_j)), -32, 31) + 32.
func quantizeQ6KBlock(x []float32, dst []byte) {
	clear(dst)
	var s [q6KSubBlocks]float32
	var sMax float32
	for j := range q6KSubBlocks {
		var ext float32
		for _, v := range x[j*q6KSubWeights : (j+1)*q6KSubWeights] {
			if abs32(v) > abs32(ext) {
				ext = v
			}
		}
		s[j] = ext / -32
		if abs32(s[j]) > abs32(sMax) {
			sMax = s[j]
		}
	}
	if sMax == 0 {
		return // all zero: d = 0 (as ggml writes it, every byte 0)
	}
	dh := F32ToF16(sMax / -128)
	d := F16ToF32(dh)
	binary.LittleEndian.PutUint16(dst[q6KDOff:], dh)
	for j := range q6KSubBlocks {
		sc := 0
		if d != 0 {
			sc = int(max(-128, min(127, roundEven32(s[j]/d))))
		}
		dst[q6KScalesOff+j] = byte(int8(sc))
	}
	ql, qh := dst[:128], dst[128:q6KScalesOff]
	for i := range q6KWeights {
		l, ns, h, hs, sj := q6KIndex(i)
		q := 32 // zero
		if dj := d * float32(int8(dst[q6KScalesOff+sj])); dj != 0 {
			q = int(max(-32, min(31, roundEven32(x[i]/dj)))) + 32
		}
		ql[l] |= byte(q&0xf) << ns
		qh[h] |= byte(q>>4) << hs
	}
}

// The interleaved layout of q6_K (l = 1, docs/formats.md): warp tiles of 8
// super-blocks (2048 weights, 1680 bytes, 16-byte aligned where the raw
// blocks are not): their 8 scale arrays (128 bytes), their 8 d (16), then
// the 32 chunks' three 16-byte parts, each part a plane of 512 bytes.
const (
	q6KTileWeights = 8 * q6KWeights
	q6KTileBytes   = 8 * q6KBytes
)

func (q6K) tileWeights() int { return q6KTileWeights }

// tileRuns: tile t of row r at r*rowBytes + t*1680 holds super-blocks
// 8t..8t+7 of the row. Super-block k's 16 scales go to 16k and its d to
// 128 + 2k. Its quarter j (half n = j>>1 of 128 weights, l-half h = j&1)
// is chunk 4k+j, with three 16-byte parts: ql[64n+16h..] (the low and high
// nibbles of weights l = 16h..16h+15 of groups 0 and 2) to 144 + 16(4k+j),
// ql[64n+32+16h..] (groups 1 and 3) to 656 + 16(4k+j), and qh[32n+16h..]
// (all four groups' top bits) to 1168 + 16(4k+j).
func (q6K) tileRuns(rows, cols int, move func(rawOff, tiledOff, n int)) {
	rowBytes := cols / q6KWeights * q6KBytes
	for r := 0; r < rows; r++ {
		for t := 0; t < cols/q6KTileWeights; t++ {
			tile := r*rowBytes + t*q6KTileBytes
			for k := 0; k < 8; k++ {
				sb := tile + k*q6KBytes
				move(sb+q6KScalesOff, tile+16*k, 16)
				move(sb+q6KDOff, tile+128+2*k, 2)
				for j := 0; j < 4; j++ {
					n, h, chunk := j>>1, j&1, 4*k+j
					move(sb+64*n+16*h, tile+144+16*chunk, 16)
					move(sb+64*n+32+16*h, tile+656+16*chunk, 16)
					move(sb+128+32*n+16*h, tile+1168+16*chunk, 16)
				}
			}
		}
	}
}

func (q6K) ggmlType() string { return "Q6_K" }
