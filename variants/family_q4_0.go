package variants

// The q4_0 family: one 18-byte GGUF block per chunk, raw (l=0, 2-byte
// aligned loads), planar (l=1, one 16-byte load plus the scale) or in
// interleaved warp tiles (l=2, RepackInterleaved: the same loads from one
// stream per row; cols a multiple of 1024).
// Activations: f32 (a=0, class exact) or int8 per group of 32 with dp4a
// (a=1, needs s=1, class tolerance, bound boundInt8).
func init() {
	f := newFamily("q4_0", "kernels/rawblock.cu", 32, []int{0, 1}, boundF32)
	f.withFile("kernels/q4_0.cu")
	f.setRepacked(map[int]repackedLayout{1: planesLayout, 2: interleavedLayout(q4_0{})})
	ring := ringParts{p16: 1, p4: 1, cols: 64} // quants; the scale word
	f.rings = map[int]ringParts{1: ring, 2: ring}
	f.bulk = []int{2} // a warp step: one 576-byte tile of 32 blocks
	registerFamily(f)
}
