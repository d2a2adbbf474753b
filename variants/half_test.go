package variants_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/gemvtune/gemvtune/variants"
)

// f16Value decodes binary16 bits independently of F16ToF32, in float64.
func f16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, man := int(h>>10)&0x1f, float64(h&0x3ff)
	switch exp {
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	case 0:
		return sign * math.Ldexp(man, -24)
	}
	return sign * math.Ldexp(1024+man, exp-25)
}

func TestF16ExhaustiveRoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := variants.F16ToF32(h)
		want := f16Value(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("F16ToF32(%#04x) = %v, want NaN", h, f)
			}
			if got := variants.F32ToF16(f); got != h|0x0200 {
				t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x, want quiet NaN %#04x", h, got, h|0x0200)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("F16ToF32(%#04x) = %v, want %v", h, f, want)
		}
		if got := variants.F32ToF16(f); got != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestF32ToF16Cases(t *testing.T) {
	f := func(bits uint32) float32 { return math.Float32frombits(bits) }
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"half", 0.5, 0x3800},
		{"plus zero", 0, 0x0000},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		{"max finite", 65504, 0x7bff},
		{"just below overflow tie", f(0x477fefff), 0x7bff},
		{"overflow tie rounds to even = inf", 65520, 0x7c00},
		{"huge", 1e30, 0x7c00},
		{"inf", float32(math.Inf(1)), 0x7c00},
		{"minus inf", float32(math.Inf(-1)), 0xfc00},
		{"nan", float32(math.NaN()), 0x7e00},
		{"1+2^-11 tie to even (down)", 1 + 1.0/2048, 0x3c00},
		{"1+3*2^-11 tie to even (up)", 1 + 3.0/2048, 0x3c02},
		{"1+2^-11+2^-23 above tie", f(0x3f801001), 0x3c01},
		{"smallest normal", float32(math.Ldexp(1, -14)), 0x0400},
		{"smallest subnormal", float32(math.Ldexp(1, -24)), 0x0001},
		{"half smallest subnormal ties to zero", float32(math.Ldexp(1, -25)), 0x0000},
		{"just above half smallest subnormal", f(math.Float32bits(float32(math.Ldexp(1, -25))) + 1), 0x0001},
		{"1.5 subnormal units ties to 2", float32(math.Ldexp(3, -25)), 0x0002},
		{"2.5 subnormal units ties to 2", float32(math.Ldexp(5, -25)), 0x0002},
		{"largest subnormal + half unit carries to normal", float32(math.Ldexp(2047, -25)), 0x0400},
		{"float32 subnormal flushes", f(0x00000001), 0x0000},
		{"negative subnormal", -float32(math.Ldexp(3, -24)), 0x8003},
	}
	for _, c := range cases {
		if got := variants.F32ToF16(c.in); got != c.want {
			t.Errorf("%s: F32ToF16(%v) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

// oracleF16 rounds a finite float32 to binary16 by searching the sorted
// positive binary16 values (no bit tricks), ties to even.
func oracleF16(x float32) uint16 {
	a := math.Abs(float64(x))
	var sign uint16
	if math.Signbit(float64(x)) {
		sign = 0x8000
	}
	if a >= 65520 {
		return sign | 0x7c00
	}
	lo := sort.Search(0x7c00, func(h int) bool { return f16Value(uint16(h)) > a }) - 1
	if lo == 0x7bff {
		return sign | 0x7bff
	}
	dl, dh := a-f16Value(uint16(lo)), f16Value(uint16(lo+1))-a
	switch {
	case dl < dh:
		return sign | uint16(lo)
	case dh < dl:
		return sign | uint16(lo+1)
	case lo%2 == 0:
		return sign | uint16(lo)
	}
	return sign | uint16(lo+1)
}

func TestF32ToF16AgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		// Exponents around the binary16 range, random mantissa and sign.
		exp := uint32(127 - 30 + rng.IntN(50))
		bits := uint32(rng.IntN(2))<<31 | exp<<23 | rng.Uint32()&0x7fffff
		if i%4 == 0 { // also exact ties and neighbours of them
			bits = bits&^0x1fff | 0x1000 + uint32(rng.IntN(3)) - 1
		}
		x := math.Float32frombits(bits)
		if got, want := variants.F32ToF16(x), oracleF16(x); got != want {
			t.Fatalf("F32ToF16(%v [%#08x]) = %#04x, want %#04x", x, bits, got, want)
		}
	}
}

func TestBF16ExhaustiveRoundTrip(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := variants.BF16ToF32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) bits = %#08x", h, math.Float32bits(f))
		}
		want := h
		if math.IsNaN(float64(f)) {
			want = h | 0x40
		}
		if got := variants.F32ToBF16(f); got != want {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x, want %#04x", h, got, want)
		}
	}
}

func TestF32ToBF16Cases(t *testing.T) {
	f := func(bits uint32) float32 { return math.Float32frombits(bits) }
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		{"one", 1, 0x3f80},
		{"minus 2.5", -2.5, 0xc020},
		{"pi rounds down", float32(math.Pi), 0x4049},
		{"tie to even stays", f(0x3f808000), 0x3f80},
		{"tie to even rounds up", f(0x3f818000), 0x3f82},
		{"above tie", f(0x3f808001), 0x3f81},
		{"max float32 rounds to inf", math.MaxFloat32, 0x7f80},
		{"inf", float32(math.Inf(-1)), 0xff80},
		{"nan stays nan", f(0x7f800001), 0x7fc0},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, c := range cases {
		if got := variants.F32ToBF16(c.in); got != c.want {
			t.Errorf("%s: F32ToBF16(%v) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestF32ToBF16AgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200000; i++ {
		bits := rng.Uint32()
		if bits&0x7f800000 == 0x7f800000 {
			continue // NaN and Inf are covered by the cases
		}
		x := math.Float32frombits(bits)
		lo := bits >> 16
		a, b := bf16Value(lo), bf16Value(lo+1) // b may be 2^128: overflow rounds to Inf
		var want uint32
		switch dl, dh := math.Abs(float64(x)-a), math.Abs(b-float64(x)); {
		case dl < dh:
			want = lo
		case dh < dl:
			want = lo + 1
		case lo%2 == 0:
			want = lo
		default:
			want = lo + 1
		}
		if got := variants.F32ToBF16(x); uint32(got) != want {
			t.Fatalf("F32ToBF16(%v [%#08x]) = %#04x, want %#04x", x, bits, got, want)
		}
	}
}

// bf16Value decodes bfloat16 bits in float64 without bit tricks; exponent
// 255 with mantissa 0 reads as 2^128, the rounding boundary of overflow.
func bf16Value(u uint32) float64 {
	sign := 1.0
	if u&0x8000 != 0 {
		sign = -1
	}
	exp, man := int(u>>7)&0xff, float64(u&0x7f)
	if exp == 0 {
		return sign * math.Ldexp(man, -133)
	}
	return sign * math.Ldexp(128+man, exp-134)
}
