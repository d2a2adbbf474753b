package variants

// The q4_K family: a quarter super-block (64 weights) per chunk: two 16-byte
// loads of nibbles plus the 16-byte super-block header.
func init() {
	registerFamily(newFamily("q4_K", "kernels/q4_K.cu", 64, []int{0}, boundF32))
}
