// gemvtune helpers for the raw blocks of q4_0 and q8_0, before their family
// files: the loads of the l=0 layouts, where a block is 2-byte aligned.

// A raw ggml block of the l=0 layouts: an f16 scale, then NW words of
// quants (q4_0: 18 bytes, q8_0: 34), so in a row only 2-byte aligned. An
// aligned block is read as words at +0..+4(NW-1) and a u16 at +4NW, a
// misaligned one as a u16 at +0 and words at +2..+4NW-2; the decode
// funnel-shifts by 16 or 0, so lanes of either parity run the same code.
template <int NW> struct GemvRawBlock { u32 w[NW]; u32 h; u32 mis; };

template <int NW>
__device__ __forceinline__ void gemv_raw_load(GemvRawBlock<NW>& b, const unsigned char* p) {
    const u32 mis = (u32)(u64)p & 2u;
    const unsigned char* pw = p + mis;
    const unsigned char* ph = p + (mis ? 0 : 4 * NW);
#pragma unroll
    for (int i = 0; i < NW; i++) b.w[i] = gemv_ld32(pw + 4 * i);
    b.h = gemv_ld16(ph);
    b.mis = mis;
}

template <int NW>
__device__ __forceinline__ void gemv_raw_zero(GemvRawBlock<NW>& b) {
#pragma unroll
    for (int i = 0; i < NW; i++) b.w[i] = 0;
    b.h = 0;
    b.mis = 2;
}

// The block's quant words q[0..NW-1] and its scale d.
template <int NW>
__device__ __forceinline__ void gemv_raw_decode(const GemvRawBlock<NW>& b, u32* q, float& d) {
    const u32 sh = b.mis ? 0u : 16u;
#pragma unroll
    for (int i = 0; i < NW - 1; i++) q[i] = __funnelshift_r(b.w[i], b.w[i + 1], sh);
    q[NW - 1] = __funnelshift_r(b.w[NW - 1], b.h, sh);
    d = gemv_h2f(b.mis ? b.h : b.w[0]);
}
