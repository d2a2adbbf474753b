package variants

// The f16 family (IEEE binary16, GGUF's F16): bf16's kernel shape, 8
// weights (one 16-byte load) per chunk, each converted exactly with
// cvt.f32.f16.
func init() {
	f := newFamily("f16", "kernels/f16.cu", 8, []int{0}, boundF32)
	f.withShared("kernels/dense16.cu")
	f.rings = map[int]ringParts{0: {p16: 1}}
	f.bulk = []int{0} // a warp step: 256 weights of a row, 512 contiguous bytes
	registerFamily(f)
}
