package variants

// The q8_0 family: one 34-byte GGUF block per chunk, raw (l=0, 2-byte
// aligned loads), planar (l=1, two 16-byte loads plus the scale) or tiled (l=2,
// the same loads from one stream per row; cols a multiple of 256). A warp
// step's 32 blocks are four consecutive tiles of l=2, one contiguous run
// per row, so l=2 also has s=3.
// Activations: f32 (a=0, class exact) or int8 per group of 32 with dp4a
// (a=1, needs s=1, class tolerance, bound boundInt8).
func init() {
	f := newFamily("q8_0", "kernels/rawblock.cu", 32, []int{0, 1}, boundF32)
	f.withFile("kernels/q8_0.cu")
	f.setRepacked(map[int]repackedLayout{1: planesLayout, 2: tilesLayout})
	ring := ringParts{p16: 2, p4: 1, cols: 64} // two halves of the quants; the scale word
	f.rings = map[int]ringParts{1: ring, 2: ring}
	f.bulk = []int{2} // a warp step: four 272-byte tiles, 1088 bytes
	registerFamily(f)
}
