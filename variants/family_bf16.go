package variants

// The bf16 family: 8 weights (one 16-byte load) per chunk.
func init() {
	f := newFamily("bf16", "kernels/bf16.cu", 8, []int{0}, boundF32)
	f.withShared("kernels/dense16.cu")
	f.rings = map[int]ringParts{0: {p16: 1}}
	f.bulk = []int{0} // a warp step: 256 weights of a row, 512 contiguous bytes
	registerFamily(f)
}
