package variants

// The affine4 family: half a group (32 weights) per chunk: one 16-byte load
// of nibbles plus the group's f16 scale and bias. Its bound is wider than
// the others' because the reference rounds every dequantized weight to f16
// (MLX's dequantize) while the kernel, like MLX's qmv, does not
// (docs/kernels.md).
func init() {
	registerFamily(newFamily("affine4", "kernels/affine4.cu", 32, []int{0}, []int{0}, boundAffine4))
}
