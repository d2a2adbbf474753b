package variants

// The affine4 family: half a group (32 weights) per chunk: one 16-byte load
// of nibbles plus the group's f16 scale and bias, from MLX's three planes
// (l=0) or from interleaved warp tiles (l=1, RepackInterleaved: one stream
// per row, scale and bias in one word; cols a multiple of 1024). Its bound is wider than
// the others' because the reference rounds every dequantized weight to f16
// (MLX's dequantize) while the kernel, like MLX's qmv, does not
// (docs/kernels.md). Activations: f32 (a=0, class exact) or int8 per group
// of 32 with dp4a (a=1, class tolerance), staged even/odd to match the
// nibble order.
func init() {
	f := newFamily("affine4", "kernels/affine4.cu", 32, []int{0, 1}, boundAffine4)
	f.int8EvenOdd = true
	f.setRepacked(map[int]repackedLayout{1: interleavedLayout(affine4{})})
	f.rings = map[int]ringParts{
		0: {p16: 1, p4: 2, cols: 128}, // nibbles; the scale and bias words
		1: {p16: 1, p4: 1},            // nibbles; the (scale, bias) word
	}
	f.bulk = []int{1} // a warp step: one 576-byte tile of 16 groups
	registerFamily(f)
}
