package variants

// The dense 16-bit families, bf16 and f16: dense16.cu's kernel after each
// one's half-word conversion, 8 weights (one 16-byte load) per chunk, the
// shared-memory ring and bulk copies of the raw rows.
func init() {
	for _, name := range []string{"bf16", "f16"} {
		f := newFamily(name, "kernels/"+name+".cu", 8, []int{0}, boundF32)
		f.withFile("kernels/dense16.cu")
		f.rings = map[int]ringParts{0: {p16: 1}}
		f.bulk = []int{0} // a warp step: 256 weights of a row, 512 contiguous bytes
		registerFamily(f)
	}
}
