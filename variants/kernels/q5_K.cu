// gemvtune q5_K family: q4_K's chunks (kernels/q4_K.cu) with a fifth bit
// per weight. Chunk = a quarter super-block, 64 weights: quarter j = c & 3
// of super-block c / 4 holds sub-blocks 2j (low nibbles of its 32 qs bytes
// qs[32j..32j+31]) and 2j+1 (high nibbles). The 32 qh bytes are shared by
// all eight sub-blocks: weight l (0..31) of sub-block s takes bit s of
// qh[l], so every chunk loads all 32 and uses bits 2j and 2j+1.
// Values (ggml dequantize_row_q5_K): d1 = d*sc, m1 = dmin*m,
// w = d1*(nibble + 16*bit) - m1.
// Chunk expression per half hf (sub-block 2j+hf, x[64c+32hf .. +31]):
//   sq = fma chain of q*x over the 32 weights, sx = add chain of x,
//   acc = acc + fma(d1, sq, -(m1*sx)).
// a=1 (int8 x per sub-block): acc = acc + fma(d1*dx, isum, -((m1*dx) * sum q)).

struct Geo { size_t rowBytes; };

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.rowBytes = (size_t)(cols / 256) * 176;
    return g;
}

// The header, the 32 qh bytes (qa: qh[0..15], qb: qh[16..31]), the low
// (a) and high (b) 16 bytes of the chunk's 32 qs bytes.
struct Chunk { uint4 h, qa, qb, a, b; };

struct RowPtr { const unsigned char* p; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.p = W + row * g.rowBytes;
    return r;
}

// Where chunk c's parts are (every one 16-byte aligned: 176 = 11·16):
// l=0, raw GGUF: super-block c/4 at 176(c/4): header +0, qh +16, quarter
// c&3 of qs at 48 + 32(c&3). l=1, interleaved (variants.RepackInterleaved):
// chunks 32t..32t+31 form tile t (1408 bytes: 8 headers, 8 qh arrays of
// 32 bytes, the 32 low halves, the 32 high halves).
struct Parts { const unsigned char* hp; const unsigned char* qh; const unsigned char* lo; const unsigned char* hi; };

// Chunk j (0..31) of a warp tile (l=1) at t.
__device__ __forceinline__ Parts q5k_tile_parts(const unsigned char* t, int j) {
    Parts p;
    p.hp = t + 16 * (j >> 2);
    p.qh = t + 128 + 32 * (j >> 2);
    p.lo = t + 384 + 16 * j;
    p.hi = p.lo + 512;
    return p;
}

__device__ __forceinline__ Parts q5k_parts(const RowPtr& r, int c) {
    Parts p;
#if GEMV_L == 0
    p.hp = r.p + (size_t)(c >> 2) * 176;
    p.qh = p.hp + 16;
    p.lo = p.hp + 48 + 32 * (c & 3);
    p.hi = p.lo + 16;
#else
    p = q5k_tile_parts(r.p + (size_t)(c >> 5) * 1408, c & 31);
#endif
    return p;
}

template <class Ld>
__device__ __forceinline__ void q5k_chunk(Chunk& ch, const Parts& p) {
    ch.h = Ld::v4(p.hp);
    ch.qa = Ld::v4(p.qh);
    ch.qb = Ld::v4(p.qh + 16);
    ch.a = Ld::v4(p.lo);
    ch.b = Ld::v4(p.hi);
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    q5k_chunk<GemvGlobal>(ch, q5k_parts(r, c));
}

#if GEMV_S == 3
// s=3 (l=1): chunk j of a tile landed whole in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    q5k_chunk<GemvShared>(ch, q5k_tile_parts(t, j));
}
#endif

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    const Parts p = q5k_parts(r, c);
    gemv_pf(p.hp);
    gemv_pf(p.lo);
#if GEMV_L == 1
    gemv_pf(p.qh);
    gemv_pf(p.hi);
#endif
}

#if GEMV_S == 2
// s=2: the chunk's five 16-byte parts through the shared-memory ring
// (prelude.cu); a dead row copies nothing and lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    const Parts p = q5k_parts(r, c);
    gemv_cp16(s16, p.hp, live);
    gemv_cp16(s16 + 512, p.qh, live);
    gemv_cp16(s16 + 1024, p.qh + 16, live);
    gemv_cp16(s16 + 1536, p.lo, live);
    gemv_cp16(s16 + 2048, p.hi, live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.h = gemv_lds128(s16);
    ch.qa = gemv_lds128(s16 + 512);
    ch.qb = gemv_lds128(s16 + 1024);
    ch.a = gemv_lds128(s16 + 1536);
    ch.b = gemv_lds128(s16 + 2048);
}
#endif

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.h = make_uint4(0, 0, 0, 0);
    ch.qa = ch.h;
    ch.qb = ch.h;
    ch.a = ch.h;
    ch.b = ch.h;
}

__device__ __forceinline__ uint4 q5k_shr(uint4 v, int s) {
    v.x >>= s; v.y >>= s; v.z >>= s; v.w >>= s;
    return v;
}

// The chunk as quarter j consumes it: its qh words shifted right by 2j,
// so that bits 0 and 1 of each byte are the fifth bits of sub-blocks 2j
// and 2j+1. One shift per word and chunk, shared by both halves: the
// shift by 2j + hf per word and half it replaces is a variable shift the
// compiler cannot hoist (docs/results.md, "2026-12-02, fifth lease").
__device__ __forceinline__ Chunk q5k_prep(const Chunk& ch, int j) {
    Chunk c = ch;
    c.qa = q5k_shr(ch.qa, 2 * j);
    c.qb = q5k_shr(ch.qb, 2 * j);
    return c;
}

// The four 5-bit q (0..31, one per byte) of weights 4k..4k+3 (k = 0..7) of
// sub-block 2j + hf of a chunk q5k_prep made: nibble hf of qs word k, bit
// hf of qh word k moved to bit 4 by a constant shift.
__device__ __forceinline__ u32 q5k_q(const Chunk& ch, int hf, int k) {
    const u32 qs = kq_word(k < 4 ? ch.a : ch.b, k & 3);
    const u32 qh = kq_word(k < 4 ? ch.qa : ch.qb, k & 3);
    return ((qs >> (4 * hf)) & 0x0F0F0F0Fu) | ((qh << (4 - hf)) & 0x10101010u);
}

#if GEMV_A
// a=1: half hf of chunk c is x group 2c+hf, int8 q (words xl = q[0..15],
// xh = q[16..31]) with scale dx and sum sx (prelude.cu); isum = two
// independent dp4a chains (qs words 0..3 and 4..7), exact (|.| <= 32*31*127).
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&cin)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter();
    Chunk ch[GEMV_R];
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) ch[i] = q5k_prep(cin[i], j);
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        uint4 xl, xh, m;
        gemv_xq_load(2 * c + hf, xl, xh, m);
        const float dx = __uint_as_float(m.x);
        const float sx = __int2float_rn((int)m.y);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            int s = 0, t = 0;
            s = gemv_dp4a((int)q5k_q(ch[i], hf, 0), (int)xl.x, s);
            t = gemv_dp4a((int)q5k_q(ch[i], hf, 4), (int)xh.x, t);
            s = gemv_dp4a((int)q5k_q(ch[i], hf, 1), (int)xl.y, s);
            t = gemv_dp4a((int)q5k_q(ch[i], hf, 5), (int)xh.y, t);
            s = gemv_dp4a((int)q5k_q(ch[i], hf, 2), (int)xl.z, s);
            t = gemv_dp4a((int)q5k_q(ch[i], hf, 6), (int)xh.z, t);
            s = gemv_dp4a((int)q5k_q(ch[i], hf, 3), (int)xl.w, s);
            t = gemv_dp4a((int)q5k_q(ch[i], hf, 7), (int)xh.w, t);
            float d1, m1, d2, m2;
            kq_scales(ch[i].h, j, d1, m1, d2, m2);
            const float dd = hf == 0 ? d1 : d2;
            const float mm = hf == 0 ? m1 : m2;
            acc[i] = __fadd_rn(acc[i], __fmaf_rn(__fmul_rn(dd, dx), __int2float_rn(s + t), -__fmul_rn(__fmul_rn(mm, dx), sx)));
        }
    }
}
#else
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&cin)[GEMV_R], const float* __restrict__ x, int c) {
    const int j = kq_quarter();
    Chunk ch[GEMV_R];
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) ch[i] = q5k_prep(cin[i], j);
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        float sq[GEMV_R];
        float sx = 0.0f;
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) sq[i] = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float4 xv = gemv_x4(x, c, hf * 8 + k);
            sx = __fadd_rn(sx, xv.x);
            sx = __fadd_rn(sx, xv.y);
            sx = __fadd_rn(sx, xv.z);
            sx = __fadd_rn(sx, xv.w);
#pragma unroll
            for (int i = 0; i < GEMV_R; i++) {
                const u32 v = q5k_q(ch[i], hf, k);
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
            const float dd = hf == 0 ? d1 : d2;
            const float mm = hf == 0 ? m1 : m2;
            acc[i] = __fadd_rn(acc[i], __fmaf_rn(dd, sq[i], -__fmul_rn(mm, sx)));
        }
    }
}
#endif

GEMV_DEFINE_KERNEL
