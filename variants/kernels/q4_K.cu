// gemvtune q4_K family. Chunk = a quarter super-block, 64 weights: quarter j
// of super-block sb is chunk c = 4*sb + j (l=1 moves the bytes, q4k_parts). Its 32 qs bytes hold sub-block 2j
// (low nibbles) and 2j+1 (high nibbles); the 16-byte header (f16 d, f16 dmin,
// 12 bytes of 6-bit scales and mins) is loaded by the 4 lanes of the
// super-block in one instruction (same address: one transaction).
// Values (ggml dequantize_row_q4_K): d1 = d*sc, m1 = dmin*m, w = d1*q - m1.
// Chunk expression per half h (sub-block 2j+h, x[64c+32h .. +31]):
//   sq = fma chain of q*x over the 32 weights, sx = add chain of x,
//   acc = acc + fma(d1, sq, -(m1*sx)).
// a=1 (int8 x per sub-block): acc = acc + fma(d1*dx, isum, -((m1*dx) * sum q)).

struct Geo { size_t rowBytes; };

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.rowBytes = (size_t)(cols / 256) * 144;
    return g;
}

struct Chunk { uint4 h, a, b; };

struct RowPtr { const unsigned char* p; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.p = W + row * g.rowBytes;
    return r;
}

// Where chunk c's three 16-byte parts are: the header of its super-block
// (hp), the low (lo) and high (hi) 16 bytes of its 32 qs bytes.
// l=0, raw GGUF: super-block c/4 at 144(c/4), quarter c&3 at 16 + 32(c&3).
// l=1, interleaved (variants.RepackInterleaved): chunks 32t..32t+31 form
// tile t (1152 bytes: 8 headers, the 32 low halves, the 32 high halves),
// so the lanes' loads of each part are one contiguous run per warp.
struct Parts { const unsigned char* hp; const unsigned char* lo; const unsigned char* hi; };

// Chunk j (0..31) of a warp tile (l=1) at t.
__device__ __forceinline__ Parts q4k_tile_parts(const unsigned char* t, int j) {
    Parts p;
    p.hp = t + 16 * (j >> 2);
    p.lo = t + 128 + 16 * j;
    p.hi = p.lo + 512;
    return p;
}

__device__ __forceinline__ Parts q4k_parts(const RowPtr& r, int c) {
    Parts p;
#if GEMV_L == 0
    p.hp = r.p + (size_t)(c >> 2) * 144;
    p.lo = p.hp + 16 + 32 * (c & 3);
    p.hi = p.lo + 16;
#else
    p = q4k_tile_parts(r.p + (size_t)(c >> 5) * 1152, c & 31);
#endif
    return p;
}

template <class Ld>
__device__ __forceinline__ void q4k_chunk(Chunk& ch, const Parts& p) {
    ch.h = Ld::v4(p.hp);
    ch.a = Ld::v4(p.lo);
    ch.b = Ld::v4(p.hi);
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    q4k_chunk<GemvGlobal>(ch, q4k_parts(r, c));
}

#if GEMV_S == 3
// s=3 (l=1): chunk j of a tile landed whole in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    q4k_chunk<GemvShared>(ch, q4k_tile_parts(t, j));
}
#endif

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    const Parts p = q4k_parts(r, c);
    gemv_pf(p.hp);
    gemv_pf(p.lo);
#if GEMV_L == 1
    gemv_pf(p.hi);
#endif
}

#if GEMV_S == 2
// s=2: the chunk's three 16-byte parts through the shared-memory ring
// (prelude.cu); a dead row copies nothing and lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    const Parts p = q4k_parts(r, c);
    gemv_cp16(s16, p.hp, live);
    gemv_cp16(s16 + 512, p.lo, live);
    gemv_cp16(s16 + 1024, p.hi, live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.h = gemv_lds128(s16);
    ch.a = gemv_lds128(s16 + 512);
    ch.b = gemv_lds128(s16 + 1024);
}
#endif

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.h = make_uint4(0, 0, 0, 0);
    ch.a = make_uint4(0, 0, 0, 0);
    ch.b = make_uint4(0, 0, 0, 0);
}

#if GEMV_A
// dp4a with a's bytes unsigned (0..255): a high nibble can then stay in
// place, byte & 0xF0 = 16 * nibble, and the sum is divided by 16 once
// (exact: every term is a multiple of 16), not shifted word by word.
__device__ __forceinline__ int q4k_dp4a_hi(u32 a, int b, int c) {
    int r;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a & 0xF0F0F0F0u), "r"(b), "r"(c));
    return r;
}

// a=1: half h of chunk c is x group 2c+h, int8 q (words xl = q[0..15],
// xh = q[16..31]) with scale dx and sum sx (prelude.cu). qs word k (a.x..
// b.w, k = 0..7) holds weights 4k..4k+3 of the half: low nibbles for h=0,
// high for h=1; they pair with q word k. isum = two dp4a chains (words
// a.* and b.*, independent, so half as long as one), exact (|.| <=
// 32*15*127, x16 for the high nibbles, which stay in place: q4k_dp4a_hi,
// then one shift); acc = acc + fma(d1*dx, isum, -((m1*dx) * sx)). On the
// H200 this took r1f0u1s1w16g7l1a1 from 35.08 to 34.57 µs at 28672x8192
// (docs/results.md); the same rewrite of q4_0 and affine4 gained nothing
// and made one of affine4's winners spill, so they keep one chain.
#define Q4K_DP(w, xv, acc) (half == 0 ? gemv_dp4a((int)((w) & 0x0F0F0F0Fu), (int)(xv), (acc)) : q4k_dp4a_hi((w), (int)(xv), (acc)))
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter();
#pragma unroll
    for (int half = 0; half < 2; half++) {
        uint4 xl, xh, m;
        gemv_xq_load(2 * c + half, xl, xh, m);
        const float dx = __uint_as_float(m.x);
        const float sx = __int2float_rn((int)m.y);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            const uint4 a = ch[i].a, b = ch[i].b;
            int s = 0, t = 0;
            s = Q4K_DP(a.x, xl.x, s);
            t = Q4K_DP(b.x, xh.x, t);
            s = Q4K_DP(a.y, xl.y, s);
            t = Q4K_DP(b.y, xh.y, t);
            s = Q4K_DP(a.z, xl.z, s);
            t = Q4K_DP(b.z, xh.z, t);
            s = Q4K_DP(a.w, xl.w, s);
            t = Q4K_DP(b.w, xh.w, t);
            s = half == 0 ? s + t : (s + t) >> 4;
            float d1, m1, d2, m2;
            kq_scales(ch[i].h, j, d1, m1, d2, m2);
            const float dd = half == 0 ? d1 : d2;
            const float mm = half == 0 ? m1 : m2;
            acc[i] = __fadd_rn(acc[i], __fmaf_rn(__fmul_rn(dd, dx), __int2float_rn(s), -__fmul_rn(__fmul_rn(mm, dx), sx)));
        }
    }
}
#else
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter();
#pragma unroll
    for (int half = 0; half < 2; half++) {
        float sq[GEMV_R];
        float sx = 0.0f;
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) sq[i] = 0.0f;
        // Word k (0..7) of the 32 qs bytes holds weights 4k..4k+3 of the half.
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float4 xv = gemv_x4(x, c, half * 8 + k);
            sx = __fadd_rn(sx, xv.x);
            sx = __fadd_rn(sx, xv.y);
            sx = __fadd_rn(sx, xv.z);
            sx = __fadd_rn(sx, xv.w);
#pragma unroll
            for (int i = 0; i < GEMV_R; i++) {
                const u32 wk = kq_word(k < 4 ? ch[i].a : ch[i].b, k & 3);
                const u32 v = half == 0 ? (wk & 0x0F0F0F0Fu) : ((wk >> 4) & 0x0F0F0F0Fu);
                float t = sq[i];
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 0), GEMV_MAGIC), xv.x, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 1), GEMV_MAGIC), xv.y, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 2), GEMV_MAGIC), xv.z, t);
                t = __fmaf_rn(__fsub_rn(gemv_bytef(v, 3), GEMV_MAGIC), xv.w, t);
                sq[i] = t;
            }
        }
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            float d1, m1, d2, m2;
            kq_scales(ch[i].h, j, d1, m1, d2, m2);
            const float dd = half == 0 ? d1 : d2;
            const float mm = half == 0 ? m1 : m2;
            acc[i] = __fadd_rn(acc[i], __fmaf_rn(dd, sq[i], -__fmul_rn(mm, sx)));
        }
    }
}
#endif

GEMV_DEFINE_KERNEL
