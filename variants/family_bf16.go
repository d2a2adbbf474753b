package variants

// The bf16 family: 8 weights (one 16-byte load) per chunk.
func init() {
	f := newFamily("bf16", "kernels/bf16.cu", 8, []int{0}, []int{0}, boundF32)
	f.ring = ringParts{p16: 1, layouts: []int{0}}
	registerFamily(f)
}
