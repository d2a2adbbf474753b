// gemvtune K-quant helpers, before the q4_K, q5_K and q6_K family files.
// q4_K and q5_K super-blocks share the 16-byte header (f16 d, f16 dmin, 12 bytes of
// 6-bit scales and mins packed as ggml's get_scale_min_k4 reads them).

// Scales and mins of sub-blocks 2j and 2j+1 (ggml get_scale_min_k4), as
// d1, m1, d2, m2 in f32 exactly as ggml computes them. Both sub-blocks'
// 6-bit values are assembled side by side in the two low bytes of one
// word: for j < 2 bytes 2j, 2j+1 of the scales (y) and mins (z), masked to
// 6 bits; for j >= 2 the low (scales) or high (mins) nibbles of bytes
// 2j+4, 2j+5 (w) with the top two bits of y or z above them.
__device__ __forceinline__ void kq_scales(const uint4& h, int j, float& d1, float& m1, float& d2, float& m2) {
    const float d = gemv_h2f(h.x);
    const float dmin = gemv_h2f(h.x >> 16);
    const u32 sh = (u32)(j & 1) * 16u;
    const u32 y = h.y >> sh, z = h.z >> sh, w = h.w >> sh;
    const bool hi = j >= 2;
    const u32 sc = hi ? ((w & 0x0F0Fu) | ((y >> 2) & 0x3030u)) : (y & 0x3F3Fu);
    const u32 mn = hi ? (((w >> 4) & 0x0F0Fu) | ((z >> 2) & 0x3030u)) : (z & 0x3F3Fu);
    d1 = __fmul_rn(d, __uint2float_rn(sc & 0xFFu)); m1 = __fmul_rn(dmin, __uint2float_rn(mn & 0xFFu));
    d2 = __fmul_rn(d, __uint2float_rn(sc >> 8)); m2 = __fmul_rn(dmin, __uint2float_rn(mn >> 8));
}


// Word k (0..3) of a chunk's 16-byte part.
__device__ __forceinline__ u32 kq_word(const uint4& p, int k) {
    return k == 0 ? p.x : k == 1 ? p.y : k == 2 ? p.z : p.w;
}

// The quarter j of chunk c of a K-quant super-block (four chunks of 64
// weights each) is c & 3; the kernel gives lane l the chunks
// l, l+32, ... (prelude.cu), so j is lane & 3 for all of them: a constant
// per thread the compiler can hoist out of the loop.
__device__ __forceinline__ int kq_quarter() { return (int)(threadIdx.x & 3u); }

