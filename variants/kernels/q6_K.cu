// gemvtune q6_K family. Chunk = a quarter super-block, 64 weights: quarter
// j = c & 3 of super-block sb = c / 4 is half n = j >> 1 (128 weights:
// ql[64n..64n+63], qh[32n..32n+31], scales sc[8n..8n+7]) and l-half
// h = j & 1 of it: positions l = 16h..16h+15 of its four groups g = 0..3 of
// 32 weights (ggml dequantize_row_q6_K). Weight 128n + 32g + l is
//   q = (nibble g>>1 of ql[64n + 32(g&1) + l]) | (bits 2g, 2g+1 of qh[32n + l]) << 4,
//   w = (d*sc[8n + h + 2g]) * (q - 32).
// So a chunk is three 16-byte parts: A = ql[64n+16h..] (groups 0 and 2),
// B = ql[64n+32+16h..] (groups 1 and 3), H = qh[32n+16h..] (all four),
// plus the 8 scales sc[8n..8n+7] (of which it uses bytes h, h+2, h+4, h+6)
// and d.
// Chunk expression, per group g = 0..3 in order (x[256sb + 128n + 32g +
// 16h .. +15]): s = fma chain of (q-32)*x over the 16 weights,
// acc = fma(d*sc_g, s, acc).
// a=1 (int8 x): the 16 weights are half h of x group 8sb + 4n + g, so
// isum = dp4a chain of (q-32) against its q bytes 16h..16h+15 (exact) and
// acc = fma((d*sc_g)*dx, isum, acc).

struct Geo { size_t rowBytes; };

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.rowBytes = (size_t)(cols / 256) * 210;
    return g;
}

struct RowPtr { const unsigned char* p; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.p = W + row * g.rowBytes;
    return r;
}

// A chunk in registers: the three parts, the scale words sc[8n..8n+3]
// (s0) and sc[8n+4..8n+7] (s1), and d in the low half of dw.
struct Chunk { uint4 a, b, h; u32 s0, s1, dw; };

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.a = make_uint4(0, 0, 0, 0);
    ch.b = ch.a;
    ch.h = ch.a;
    ch.s0 = ch.s1 = ch.dw = 0;
}

#if GEMV_L == 0
// Raw super-blocks are 210 bytes, so only 2-byte aligned; every part of a
// chunk sits at a multiple of 4 from its block's start, so one flag says
// for all of them whether they are 4-byte aligned. A 16-byte part is read
// as 5 words from 4-byte aligned p - mis and funnel-shifted by 16·mis
// (4 words and an unused fifth when aligned; every word stays inside the
// block), the 8 scales as 3 words the same way, d as a u16.
__device__ __forceinline__ uint4 q6k_raw16(const unsigned char* p, u32 mis) {
    const unsigned char* pw = p - mis;
    const u32 w0 = gemv_ld32(pw), w1 = gemv_ld32(pw + 4), w2 = gemv_ld32(pw + 8);
    const u32 w3 = gemv_ld32(pw + 12), w4 = gemv_ld32(pw + 16);
    const u32 sh = mis * 8u;
    return make_uint4(__funnelshift_r(w0, w1, sh), __funnelshift_r(w1, w2, sh),
                      __funnelshift_r(w2, w3, sh), __funnelshift_r(w3, w4, sh));
}

__device__ __forceinline__ const unsigned char* q6k_block(const RowPtr& r, int c) {
    return r.p + (size_t)(c >> 2) * 210;
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    const unsigned char* blk = q6k_block(r, c);
    const int j = c & 3, n = j >> 1, h = j & 1;
    const u32 mis = (u32)(u64)blk & 2u;
    ch.a = q6k_raw16(blk + 64 * n + 16 * h, mis);
    ch.b = q6k_raw16(blk + 64 * n + 32 + 16 * h, mis);
    ch.h = q6k_raw16(blk + 128 + 32 * n + 16 * h, mis);
    const unsigned char* sp = blk + 192 + 8 * n - mis;
    const u32 w0 = gemv_ld32(sp), w1 = gemv_ld32(sp + 4), w2 = gemv_ld32(sp + (mis ? 8 : 4));
    ch.s0 = __funnelshift_r(w0, w1, mis * 8u);
    ch.s1 = __funnelshift_r(w1, w2, mis * 8u);
    ch.dw = gemv_ld16(blk + 208);
}

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    const unsigned char* blk = q6k_block(r, c);
    gemv_pf(blk);
    gemv_pf(blk + 128);
}
#else
// l=1, interleaved warp tiles (variants.RepackInterleaved): chunks
// 32t..32t+31 form tile t (1680 bytes): 8 scale arrays (16 bytes each),
// 8 d, then the parts A, B and H of the 32 chunks, 512 bytes each, so the
// lanes' loads of a part are one contiguous run per warp. Chunk j of a
// tile is quarter j & 3 of super-block j >> 2 of the tile.
template <class Ld>
__device__ __forceinline__ void q6k_tile_chunk(Chunk& ch, const unsigned char* t, int j) {
    const int n = (j & 3) >> 1;
    ch.a = Ld::v4(t + 144 + 16 * j);
    ch.b = Ld::v4(t + 656 + 16 * j);
    ch.h = Ld::v4(t + 1168 + 16 * j);
    ch.s0 = Ld::w32(t + 16 * (j >> 2) + 8 * n);
    ch.s1 = Ld::w32(t + 16 * (j >> 2) + 8 * n + 4);
    ch.dw = Ld::h16(t + 128 + 2 * (j >> 2));
}

__device__ __forceinline__ const unsigned char* q6k_tile(const RowPtr& r, int c) {
    return r.p + (size_t)(c >> 5) * 1680;
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    q6k_tile_chunk<GemvGlobal>(ch, q6k_tile(r, c), c & 31);
}

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    const unsigned char* t = q6k_tile(r, c);
    const int j = c & 31;
    gemv_pf(t + 144 + 16 * j);
    gemv_pf(t + 656 + 16 * j);
    gemv_pf(t + 1168 + 16 * j);
    gemv_pf(t + 16 * (j >> 2));
}

#if GEMV_S == 3
// s=3 (l=1): chunk j of a tile landed whole in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    q6k_tile_chunk<GemvShared>(ch, t, j);
}
#endif

#if GEMV_S == 2
// s=2 (l=1): the three parts and three 4-byte words (the two scale words
// and the word holding d and its neighbour's d) through the shared-memory
// ring (prelude.cu); a dead row lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    const unsigned char* t = q6k_tile(r, c);
    const int j = c & 31, n = (j & 3) >> 1;
    gemv_cp16(s16, t + 144 + 16 * j, live);
    gemv_cp16(s16 + 512, t + 656 + 16 * j, live);
    gemv_cp16(s16 + 1024, t + 1168 + 16 * j, live);
    gemv_cp4(s4, t + 16 * (j >> 2) + 8 * n, live);
    gemv_cp4(s4 + 128, t + 16 * (j >> 2) + 8 * n + 4, live);
    gemv_cp4(s4 + 256, t + 128 + 4 * (j >> 3), live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.a = gemv_lds128(s16);
    ch.b = gemv_lds128(s16 + 512);
    ch.h = gemv_lds128(s16 + 1024);
    ch.s0 = gemv_lds32(s4);
    ch.s1 = gemv_lds32(s4 + 128);
    ch.dw = gemv_lds32(s4 + 256) >> (16 * ((c >> 2) & 1));
}
#endif
#endif

// The four 6-bit q of weights l = 16h + 4k .. +3 of group g, one per byte
// (0..63).
__device__ __forceinline__ u32 q6k_q(const Chunk& ch, int g, int k) {
    const u32 ql = kq_word((g & 1) ? ch.b : ch.a, k);
    const u32 lo = (ql >> (4 * (g >> 1))) & 0x0F0F0F0Fu;
    const u32 hi = (kq_word(ch.h, k) >> (2 * g)) & 0x03030303u;
    return lo | (hi << 4);
}

// d*sc_g: the scale of group g (byte h of s0 or s1 for g = 0, 2; byte
// h + 2 for g = 1, 3), sign-extended.
__device__ __forceinline__ float q6k_scale(const Chunk& ch, int g, int h) {
    const u32 w = (g >> 1) ? ch.s1 : ch.s0;
    const int sc = (int)(w << (8 * (3 - (h + 2 * (g & 1))))) >> 24;
    return __fmul_rn(gemv_h2f(ch.dw), __int2float_rn(sc));
}

#if GEMV_A
// a=1: q - 32 = (nibble - 32) + 16*hi, so the exact integer dot product
// (|.| <= 16*32*127) is taken in two parts: the low nibbles with the bias
// folded in (nibble | 0xE0 is the signed byte nibble - 32) by one dp4a
// chain, and the two high bits (0..3) by another, scaled by 16:
// fewer integer instructions than assembling each signed six-bit byte.
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter(), n = j >> 1, h = j & 1;
#pragma unroll
    for (int g = 0; g < 4; g++) {
        uint4 xl, xh, m;
        gemv_xq_load(8 * (c >> 2) + 4 * n + g, xl, xh, m);
        const uint4 xv = h ? xh : xl;
        const float dx = __uint_as_float(m.x);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            int s = 0, t = 0;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const u32 xw = kq_word(xv, k);
                const u32 ql = kq_word((g & 1) ? ch[i].b : ch[i].a, k);
                const u32 lo = ((ql >> (4 * (g >> 1))) & 0x0F0F0F0Fu) | 0xE0E0E0E0u;
                const u32 hi = (kq_word(ch[i].h, k) >> (2 * g)) & 0x03030303u;
                s = gemv_dp4a((int)lo, (int)xw, s);
                t = gemv_dp4a((int)hi, (int)xw, t);
            }
            acc[i] = __fmaf_rn(__fmul_rn(q6k_scale(ch[i], g, h), dx), __int2float_rn(s + 16 * t), acc[i]);
        }
    }
}
#else
// 2^23 + 32 as float: byte + 2^23 minus it is q - 32, exactly.
#define Q6K_BIAS (GEMV_MAGIC + 32.0f)

__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter(), n = j >> 1, h = j & 1;
#pragma unroll
    for (int g = 0; g < 4; g++) {
        // x[256sb + 128n + 32g + 16h + 4k ..]: float4 8(g&1) + 4h + k of x chunk 4sb + 2n + g/2.
        const int xc = 4 * (c >> 2) + 2 * n + (g >> 1);
        float s[GEMV_R];
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) s[i] = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float4 xv = gemv_x4(x, xc, 8 * (g & 1) + 4 * h + k);
#pragma unroll
            for (int i = 0; i < GEMV_R; i++) {
                const u32 v = q6k_q(ch[i], g, k);
                float t = s[i];
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 0), Q6K_BIAS), xv.x, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 1), Q6K_BIAS), xv.y, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 2), Q6K_BIAS), xv.z, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 3), Q6K_BIAS), xv.w, t);
                s[i] = t;
            }
        }
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) acc[i] = __fmaf_rn(q6k_scale(ch[i], g, h), s[i], acc[i]);
    }
}
#endif

GEMV_DEFINE_KERNEL
