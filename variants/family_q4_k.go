package variants

// The q4_K family: a quarter super-block (64 weights) per chunk: two 16-byte
// loads of nibbles plus the 16-byte super-block header. Activations: f32
// (a=0, exact) or int8 per sub-block of 32 with dp4a (a=1, needs s=1,
// tolerance).
func init() {
	f := newFamily("q4_K", "kernels/q4_K.cu", 64, []int{0}, []int{0, 1}, boundF32)
	f.ring = ringParts{p16: 3, layouts: []int{0}} // header, low and high halves of the quants
	registerFamily(f)
}
