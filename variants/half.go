package variants

import "math"

// F16ToF32 converts IEEE 754 binary16 bits to float32. Every binary16 value,
// subnormals included, is exactly representable in float32; a NaN keeps its
// sign and payload (shifted into the top of the float32 mantissa).
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0 && man == 0: // ±0
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man * 2^-24, normalised for float32
		e := uint32(127 - 15 + 1)
		for man&0x400 == 0 {
			man <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// F32ToF16 converts float32 to IEEE 754 binary16 bits, rounding to nearest
// with ties to even (the rounding of F16C's vcvtps2ph with imm 0, of CUDA's
// __float2half_rn and of ggml's GGML_FP32_TO_FP16). Values at or beyond
// 65520 become ±Inf, values at or below 2^-25 in magnitude become ±0, and
// subnormal results are rounded correctly. A NaN stays a NaN: sign and top
// payload bits are kept and the quiet bit is set.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased binary16 exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 { // below half the smallest subnormal
			return sign
		}
		m := man | 0x800000
		shift := uint(14 - e)
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++ // may carry into the smallest normal: still the right encoding
		}
		return sign | uint16(q)
	}
	q := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && q&1 == 1) {
		q++ // may carry into the exponent, up to Inf: still the right encoding
	}
	return sign | uint16(q)
}

// BF16ToF32 converts bfloat16 bits to float32 (exact: bits << 16).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts float32 to bfloat16 bits, rounding to nearest with ties
// to even (as PyTorch, ggml's GGML_FP32_TO_BF16 and CUDA's __float2bfloat16_rn
// do). A NaN stays a NaN: its top bits are kept and the quiet bit is set.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
