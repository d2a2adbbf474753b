package variants

// The q4_K family: a quarter super-block (64 weights) per chunk: two 16-byte
// loads of nibbles plus the 16-byte super-block header, from the raw GGUF
// super-blocks (l=0) or from interleaved warp tiles (l=1, RepackInterleaved:
// the same loads, each one contiguous run per warp; cols a multiple of
// 2048). Activations: f32 (a=0, exact) or int8 per sub-block of 32 with
// dp4a (a=1, needs s=1, tolerance).
func init() {
	f := newFamily("q4_K", "kernels/kquant.cu", 64, []int{0, 1}, boundF32)
	f.withFile("kernels/q4_K.cu")
	f.setRepacked(map[int]repackedLayout{1: interleavedLayout(q4K{})})
	ring := ringParts{p16: 3} // header, low and high halves of the quants
	f.rings = map[int]ringParts{0: ring, 1: ring}
	f.bulk = []int{1} // a warp step: one 1152-byte tile of 8 super-blocks
	f.bulkLandFirst = true
	registerFamily(f)
}
