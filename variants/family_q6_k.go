package variants

// The q6_K family: a quarter super-block (64 weights) per chunk: three
// 16-byte parts (two of low nibbles, one of high bit pairs), two words of
// the sub-block scales and d, from the raw GGUF super-blocks (l=0, 2-byte
// aligned: funnel-shifted word loads) or from interleaved warp tiles (l=1,
// RepackInterleaved: 16-byte loads, each part one contiguous run per warp;
// cols a multiple of 2048). Activations: f32 (a=0, exact) or int8 per group
// of 32 with dp4a (a=1, needs s=1, tolerance).
func init() {
	f := newFamily("q6_K", "kernels/kquant.cu", 64, []int{0, 1}, boundF32)
	f.withFile("kernels/q6_K.cu")
	f.setRepacked(map[int]repackedLayout{1: interleavedLayout(q6K{})})
	f.rings = map[int]ringParts{1: {p16: 3, p4: 3}} // A, B, H; two scale words and d's word
	f.bulk = []int{1}                               // a warp step: one 1680-byte tile of 8 super-blocks
	f.bulkLandFirst = true
	registerFamily(f)
}
