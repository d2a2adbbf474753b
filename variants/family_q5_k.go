package variants

// The q5_K family: q4_K's chunks (a quarter super-block, 64 weights) with
// the super-block's 32 qh bytes, from the raw GGUF super-blocks (l=0, 16-byte
// aligned: 176 bytes) or from interleaved warp tiles (l=1,
// RepackInterleaved; cols a multiple of 2048). Activations: f32 (a=0, exact)
// or int8 per sub-block of 32 with dp4a (a=1, needs s=1, tolerance).
func init() {
	f := newFamily("q5_K", "kernels/kquant.cu", 64, []int{0, 1}, boundF32)
	f.withFile("kernels/q5_K.cu")
	f.setRepacked(map[int]repackedLayout{1: interleavedLayout(q5K{})})
	ring := ringParts{p16: 5} // header, two halves of qh, low and high halves of the quants
	f.rings = map[int]ringParts{0: ring, 1: ring}
	f.bulk = []int{1} // a warp step: one 1408-byte tile of 8 super-blocks
	registerFamily(f)
}
