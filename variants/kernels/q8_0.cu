// gemvtune q8_0 family. Chunk = one block of 32 weights (f16 d + 32 int8).
// Chunk expression: s = fma chain over weights 0..31 of q*x; acc = fma(d, s, acc).
// a=1 (int8 x): isum = sum of q*qx by dp4a, exact; acc = fma(d*dx, isum, acc).

struct Geo {
    size_t rowBytes;  // bytes of one row (raw) or of one row's quant plane (l=1)
    size_t scaleOff;  // l=1: start of the scale plane
    int nb;           // blocks per row
};

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.nb = cols / 32;
#if GEMV_L == 0 || GEMV_L == 2
    g.rowBytes = (size_t)g.nb * 34;
    g.scaleOff = 0;
#else
    g.rowBytes = (size_t)g.nb * 32;
    g.scaleOff = (size_t)rows * g.rowBytes;
#endif
    return g;
}

// A row's bytes: raw blocks or tiles (l=0, 2), or its quant and scale
// planes (l=1).
struct RowPtr { const unsigned char* q; const unsigned char* s; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.q = W + row * g.rowBytes;
    r.s = W + g.scaleOff + row * (size_t)g.nb * 2;
    return r;
}

#if GEMV_L == 0
// Raw blocks (34 bytes: d, then 8 words of qs) through GemvRawBlock
// (rawblock.cu).
typedef GemvRawBlock<8> Chunk;

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) { gemv_raw_load(ch, r.q + (size_t)c * 34); }

__device__ __forceinline__ void chunk_zero(Chunk& ch) { gemv_raw_zero(ch); }

__device__ __forceinline__ void chunk_decode(const Chunk& ch, u32 q[8], float& d) { gemv_raw_decode(ch, q, d); }

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) { gemv_pf(r.q + (size_t)c * 34); }

#else
// Planar layout (l=1): 32 qs bytes per block in the quant plane (two 16-byte
// loads) plus the 2-byte d in the scale plane. Tiled layout (l=2): each row
// is tiles of 8 blocks, 272 bytes: the 8 d (16 bytes), then the 8 blocks'
// qs (two 16-byte loads plus the d from the tile's first 16 bytes).
struct Chunk { uint4 a, b; u32 h; };

#if GEMV_L == 2
// The tile holding block c of the tiles from t (a row, or a warp step's
// four tiles landed in shared memory).
__device__ __forceinline__ const unsigned char* q80_tile(const unsigned char* t, int c) {
    return t + (size_t)(c >> 3) * 272;
}

// Block c of the tiles from t, from global or shared memory (Ld).
template <class Ld>
__device__ __forceinline__ void q80_tile_chunk(Chunk& ch, const unsigned char* t, int c) {
    const unsigned char* tile = q80_tile(t, c);
    const int pos = c & 7;
    ch.a = Ld::v4(tile + 16 + pos * 32);
    ch.b = Ld::v4(tile + 32 + pos * 32);
    ch.h = Ld::h16(tile + pos * 2);
}
#endif

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
#if GEMV_L == 1
    const unsigned char* p = r.q + (size_t)c * 32;
    ch.a = gemv_ld128(p);
    ch.b = gemv_ld128(p + 16);
    ch.h = gemv_ld16(r.s + (size_t)c * 2);
#else
    q80_tile_chunk<GemvGlobal>(ch, r.q, c);
#endif
}

#if GEMV_S == 3
// s=3 (l=2): chunk j of a warp step landed whole in shared memory. Lanes
// j and j+4 of a quarter warp share banks (32-byte stride): two
// wavefronts per 16-byte read, well inside shared memory's rate.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    q80_tile_chunk<GemvShared>(ch, t, j);
}
#endif

// L2 prefetch of chunk c's lines (the kernel's second batch during staging).
__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
#if GEMV_L == 1
    gemv_pf(r.q + (size_t)c * 32);
    gemv_pf(r.s + (size_t)c * 2);
#else
    gemv_pf(q80_tile(r.q, c) + (c & 7) * 32);
#endif
}

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.a = make_uint4(0, 0, 0, 0);
    ch.b = make_uint4(0, 0, 0, 0);
    ch.h = 0;
}

__device__ __forceinline__ void chunk_decode(const Chunk& ch, u32 q[8], float& d) {
    q[0] = ch.a.x; q[1] = ch.a.y; q[2] = ch.a.z; q[3] = ch.a.w;
    q[4] = ch.b.x; q[5] = ch.b.y; q[6] = ch.b.z; q[7] = ch.b.w;
    d = gemv_h2f(ch.h);
}

#if GEMV_S == 2
// s=2 (l=1 or 2): the two 16-byte halves of the quants and the 4-byte word
// holding the scales of blocks 2m and 2m+1 (l=1: the gate asks cols to be a
// multiple of 64, so it stays inside the row; l=2: inside the tile's 16
// bytes of scales) through the shared-memory ring (prelude.cu); a dead row
// lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
#if GEMV_L == 1
    const unsigned char* p = r.q + (size_t)c * 32;
    gemv_cp16(s16, p, live);
    gemv_cp16(s16 + 512, p + 16, live);
    gemv_cp4(s4, r.s + (size_t)(c >> 1) * 4, live);
#else
    const unsigned char* t = q80_tile(r.q, c);
    const int pos = c & 7;
    gemv_cp16(s16, t + 16 + pos * 32, live);
    gemv_cp16(s16 + 512, t + 32 + pos * 32, live);
    gemv_cp4(s4, t + (pos >> 1) * 4, live);
#endif
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.a = gemv_lds128(s16);
    ch.b = gemv_lds128(s16 + 512);
    ch.h = (gemv_lds32(s4) >> ((u32)(c & 1) * 16u)) & 0xFFFFu;  // l=2: pos & 1 = c & 1
}
#endif
#endif

// Bytes flipped by 0x80 hold q+128; (2^23 + q + 128) - (2^23 + 128) = q exactly.
#define Q8_OFF 8388736.0f

#if GEMV_A
// a=1: x of block c is int8 q (words xl = q[0..15], xh = q[16..31]) with
// scale dx (prelude.cu); weight word k pairs with x word k. The signed
// dp4a chain is exact (|.| <= 32*127*127), so acc = fma(d*dx, (float)isum,
// acc) is the chunk's one rounding step.
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    uint4 xl, xh, m;
    gemv_xq_load(c, xl, xh, m);
    const float dx = __uint_as_float(m.x);
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        u32 q[8];
        float d;
        chunk_decode(ch[i], q, d);
        int s = 0;
        s = gemv_dp4a((int)q[0], (int)xl.x, s);
        s = gemv_dp4a((int)q[1], (int)xl.y, s);
        s = gemv_dp4a((int)q[2], (int)xl.z, s);
        s = gemv_dp4a((int)q[3], (int)xl.w, s);
        s = gemv_dp4a((int)q[4], (int)xh.x, s);
        s = gemv_dp4a((int)q[5], (int)xh.y, s);
        s = gemv_dp4a((int)q[6], (int)xh.z, s);
        s = gemv_dp4a((int)q[7], (int)xh.w, s);
        acc[i] = __fmaf_rn(__fmul_rn(d, dx), __int2float_rn(s), acc[i]);
    }
}
#else
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    u32 q[GEMV_R][8];
    float d[GEMV_R], s[GEMV_R];
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        chunk_decode(ch[i], q[i], d[i]);
#pragma unroll
        for (int k = 0; k < 8; k++) q[i][k] ^= 0x80808080u;
        s[i] = 0.0f;
    }
    // Piece p holds weights 8p..8p+7 = words 2p, 2p+1.
#pragma unroll
    for (int p = 0; p < 4; p++) {
        const float4 xa = gemv_x4(x, c, 2 * p);
        const float4 xb = gemv_x4(x, c, 2 * p + 1);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            const u32 v0 = q[i][2 * p], v1 = q[i][2 * p + 1];
            s[i] = gemv_dot8_bytes(s[i], v0, v1, Q8_OFF, xa, xb);
        }
    }
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) acc[i] = __fmaf_rn(d[i], s[i], acc[i]);
}
#endif

GEMV_DEFINE_KERNEL
