// gemvtune helpers of q4_0 and q8_0, before their family files: the loads
// of the l=0 layouts, where a block is 2-byte aligned, and the a=0 dot of
// eight byte-coded weights.

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

// t plus the weights in bytes 0..3 of v0 times xa and in bytes 0..3 of v1
// times xb, one fused multiply-add each in that order. gemv_bytef(v, k) is
// 2^23 + byte k, and off is 2^23 plus the format's zero point, so each
// subtraction gives the weight exactly.
__device__ __forceinline__ float gemv_dot8_bytes(float t, u32 v0, u32 v1, float off, float4 xa, float4 xb) {
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v0, 0), off), xa.x, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v0, 1), off), xa.y, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v0, 2), off), xa.z, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v0, 3), off), xa.w, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v1, 0), off), xb.x, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v1, 1), off), xb.y, t);
    t = __fmaf_rn(__fsub_rn(gemv_bytef(v1, 2), off), xb.z, t);
    return __fmaf_rn(__fsub_rn(gemv_bytef(v1, 3), off), xb.w, t);
}
