package variants

// The q8_0 family: one 34-byte GGUF block per chunk, raw (l=0, 2-byte
// aligned loads) or planar (l=1, two 16-byte loads plus the scale).
func init() {
	registerFamily(newFamily("q8_0", "kernels/q8_0.cu", 32, []int{0, 1}, boundF32))
}
