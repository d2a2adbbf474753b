package variants

import (
	"encoding/binary"
	"math"
)

// MLX affine quantization with bits = 4 and group_size = 64.
const (
	affine4Group = 64
	// affine4GroupBytes: 32 bytes of nibbles + f16 scale + f16 bias.
	affine4GroupBytes = affine4Group/2 + 2 + 2
)

func init() { registerFormat(affine4{}) }

// affine4 is MLX's affine 4-bit quantization (mx.quantize(w, group_size=64,
// bits=4) with float16 scales and biases): value = scale*q + bias per group
// of 64 weights. The raw buffer is MLX's three tensors back to back:
//
//	[w:      rows × cols/8 uint32 words, little-endian; weight 8k+i = (word k >> 4i) & 0xF]
//	[scales: rows × cols/64 float16]
//	[biases: rows × cols/64 float16]
type affine4 struct{}

func (affine4) Name() string      { return "affine4" }
func (affine4) BlockWeights() int { return affine4Group }
func (affine4) finiteOnly() bool  { return true }

func (affine4) Bytes(rows, cols int) (int64, error) {
	return blockSize("affine4", affine4Group, affine4GroupBytes, rows, cols)
}

func (f affine4) Quantize(w []float32, rows, cols int) ([]byte, error) {
	return quantize(f, w, rows, cols)
}
func (f affine4) Dequantize(b []byte, rows, cols int) ([]float32, error) {
	return dequantize(f, b, rows, cols)
}
func (f affine4) Reference(b []byte, x []float32, rows, cols int) ([]float64, error) {
	return reference(f, b, x, rows, cols)
}

// planeRowBytes gives one row's bytes in each of the three planes: 4-bit
// weights, then one f16 scale and one f16 bias per group.
func (affine4) planeRowBytes(cols int) []int {
	return []int{cols / 2, cols / affine4Group * 2, cols / affine4Group * 2}
}

// affine4Planes splits a raw buffer into its weight, scale and bias planes.
func affine4Planes(b []byte, rows, cols int) (w, scales, biases []byte) {
	pb := affine4{}.planeRowBytes(cols)
	wBytes, sBytes := rows*pb[0], rows*pb[1]
	return b[:wBytes], b[wBytes : wBytes+sBytes], b[wBytes+sBytes : wBytes+2*sBytes]
}

func (affine4) decodeRow(b []byte, rows, cols, r int, dst []float32) {
	wp, sp, bp := affine4Planes(b, rows, cols)
	groups := cols / affine4Group
	for g := 0; g < groups; g++ {
		gi := r*groups + g
		scale := F16ToF32(binary.LittleEndian.Uint16(sp[2*gi:]))
		bias := F16ToF32(binary.LittleEndian.Uint16(bp[2*gi:]))
		words := wp[gi*affine4Group/2 : (gi+1)*affine4Group/2]
		y := dst[g*affine4Group : (g+1)*affine4Group]
		for k := 0; k < affine4Group/8; k++ {
			word := binary.LittleEndian.Uint32(words[4*k:])
			for i := 0; i < 8; i++ {
				y[8*k+i] = affine4Value(scale, bias, (word>>(4*i))&0xf)
			}
		}
	}
}

// affine4Value is what MLX's CPU dequantize computes (the fallback of
// affine_dequantize in mlx/ops.cpp): multiply(w_uint32, scales_f16) promotes
// to float16, so scale*q is rounded to float16, then add(…, biases_f16) is
// rounded to float16 again. The result is a float16 value, returned as its
// exact float32. Each float16 operation is a float32 operation rounded to
// float16, which equals the correctly rounded float16 operation (float32
// has more than 2*11+2 significand bits).
func affine4Value(scale, bias float32, q uint32) float32 {
	p := F16ToF32(F32ToF16(scale * float32(q)))
	return F16ToF32(F32ToF16(p + bias))
}

// encodeRows follows MLX's CPU affine quantize (quantize() in
// mlx/backend/cpu/quantized.cpp, same maths as the affine_quantize fallback
// in mlx/ops.cpp), in float32:
//
//	scale = max((w_max - w_min)/15, 1e-7), negated unless |w_min| > |w_max|
//	edge  = |w_min| > |w_max| ? w_min : w_max
//	q0 = rint(edge/scale); if q0 != 0 { scale = edge/q0; bias = edge } else bias = 0
//	q  = clamp(rint((w - bias)/scale), 0, 15)
//
// and stores scale and bias as float16 (MLX's static_cast<T> when the
// weights are float16). So scales may be negative; a group maps its edge of
// largest magnitude exactly onto bias.
func (affine4) encodeRows(w []float32, out []byte, rows, cols, r0, r1 int) {
	wp, sp, bp := affine4Planes(out, rows, cols)
	groups := cols / affine4Group
	for gi := r0 * groups; gi < r1*groups; gi++ {
		x := w[gi*affine4Group : (gi+1)*affine4Group]
		scale, bias := affine4ScaleBias(x)
		words := wp[gi*affine4Group/2 : (gi+1)*affine4Group/2]
		for k := 0; k < affine4Group/8; k++ {
			var word uint32
			for i := 0; i < 8; i++ {
				q := roundEven32((x[8*k+i] - bias) / scale)
				word |= uint32(max(0, min(15, q))) << (4 * i)
			}
			binary.LittleEndian.PutUint32(words[4*k:], word)
		}
		binary.LittleEndian.PutUint16(sp[2*gi:], F32ToF16(scale))
		binary.LittleEndian.PutUint16(bp[2*gi:], F32ToF16(bias))
	}
}

// affine4ScaleBias is the per-group part of MLX's quantize, in float32.
func affine4ScaleBias(x []float32) (scale, bias float32) {
	const nBins, eps = float32(15), float32(1e-7)
	wMin, wMax := float32(math.Inf(1)), float32(math.Inf(-1))
	for _, v := range x {
		wMax, wMin = max(wMax, v), min(wMin, v)
	}
	mask := abs32(wMin) > abs32(wMax)
	scale = max((wMax-wMin)/nBins, eps)
	if !mask {
		scale = -scale
	}
	edge := wMax
	if mask {
		edge = wMin
	}
	if q0 := roundEven32(edge / scale); q0 != 0 {
		return edge / q0, edge
	}
	return scale, 0
}

// The interleaved layout of affine4 (l = 1, docs/formats.md): warp tiles
// of 16 groups, 32 chunks of 32 weights: 16 (scale, bias) words (64
// bytes), then the 512 bytes of nibbles.
const (
	affine4TileWeights = 16 * 64
	affine4TileBytes   = 16*4 + 512
)

func (affine4) tileWeights() int { return affine4TileWeights }

// tileRuns: tile t of row r at (r*cols/1024 + t)*576 holds groups
// 16t..16t+15 of the row: group g's f16 scale and f16 bias as the word at
// 4g (scale in the low half), then the row's 512 nibble bytes of weights
// 1024t..1024t+1023.
func (affine4) tileRuns(rows, cols int, move func(rawOff, tiledOff, n int)) {
	groups := cols / 64
	scales := rows * cols / 2
	biases := scales + rows*groups*2
	for r := 0; r < rows; r++ {
		for t := 0; t < cols/affine4TileWeights; t++ {
			tile := (r*cols/affine4TileWeights + t) * affine4TileBytes
			for g := 0; g < 16; g++ {
				grp := r*groups + 16*t + g
				move(scales+2*grp, tile+4*g, 2)
				move(biases+2*grp, tile+4*g+2, 2)
			}
			move(r*cols/2+512*t, tile+64, 512)
		}
	}
}
