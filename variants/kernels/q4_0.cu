// gemvtune q4_0 family. Chunk = one block of 32 weights (f16 d + 16 qs bytes).
// Weight j (0..15) = low nibble of qs[j], weight j+16 = high nibble; value (q-8)*d.
// Chunk expression: s = fma chain over weights 0..31 of (q-8)*x; acc = fma(d, s, acc).
// a=1 (int8 x): isum = sum of (q-8)*qx by dp4a, exact; acc = fma(d*dx, isum, acc).

struct Geo {
    size_t rowBytes;  // bytes of one row (raw, warp tiles) or of one row's quant plane (l=1)
    size_t scaleOff;  // l=1: start of the scale plane
    int nb;           // blocks per row
};

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.nb = cols / 32;
#if GEMV_L == 1
    g.rowBytes = (size_t)g.nb * 16;
    g.scaleOff = (size_t)rows * g.rowBytes;
#else
    g.rowBytes = (size_t)g.nb * 18;
    g.scaleOff = 0;
#endif
    return g;
}

// l=2, interleaved warp tiles (variants.RepackInterleaved): blocks
// 32t..32t+31 of a row form tile t, 576 bytes: their 32 d (64 bytes), then
// their 32 x 16 qs bytes, so a warp's loads of either are one contiguous
// run and a row is one stream.
__device__ __forceinline__ const unsigned char* q40_tile(const unsigned char* row, int c) {
    return row + (size_t)(c >> 5) * 576;
}

// A row's bytes: raw blocks or warp tiles (l=0, 2), or its quant and scale
// planes (l=1).
struct RowPtr { const unsigned char* q; const unsigned char* s; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.q = W + row * g.rowBytes;
    r.s = W + g.scaleOff + row * (size_t)g.nb * 2;
    return r;
}

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
#if GEMV_L == 0
    gemv_pf(r.q + (size_t)c * 18);
#elif GEMV_L == 1
    gemv_pf(r.q + (size_t)c * 16);
    gemv_pf(r.s + (size_t)c * 2);
#else
    gemv_pf(q40_tile(r.q, c) + 64 + 16 * (c & 31));
    gemv_pf(q40_tile(r.q, c));
#endif
}

#if GEMV_L == 0
// Raw blocks (18 bytes: d, then 4 words of qs) through GemvRawBlock
// (rawblock.cu).
typedef GemvRawBlock<4> Chunk;

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) { gemv_raw_load(ch, r.q + (size_t)c * 18); }

__device__ __forceinline__ void chunk_zero(Chunk& ch) { gemv_raw_zero(ch); }

__device__ __forceinline__ void chunk_decode(const Chunk& ch, u32 q[4], float& d) { gemv_raw_decode(ch, q, d); }
#else
// Planar layout (l=1): 16 qs bytes per block in the quant plane (each row
// 16-byte aligned) plus the 2-byte d in the scale plane. Warp tiles (l=2):
// the same loads from the row's tile. (Tiles of 8 blocks like q8_0's l=2
// were measured 1-4 % slower than l=1 for q4_0 on the H200; tiles of 32,
// one per warp step, are what l=2 is.)
struct Chunk { uint4 q; u32 h; };

// Chunk j (0..31) of warp tile t, from global or shared memory (Ld).
template <class Ld>
__device__ __forceinline__ void q40_tile_chunk(Chunk& ch, const unsigned char* t, int j) {
    ch.q = Ld::v4(t + 64 + 16 * j);
    ch.h = Ld::h16(t + 2 * j);
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
#if GEMV_L == 1
    ch.q = gemv_ld128(r.q + (size_t)c * 16);
    ch.h = gemv_ld16(r.s + (size_t)c * 2);
#else
    q40_tile_chunk<GemvGlobal>(ch, q40_tile(r.q, c), c & 31);
#endif
}

#if GEMV_S == 3
// s=3 (l=2): chunk j of a tile landed whole in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    q40_tile_chunk<GemvShared>(ch, t, j);
}
#endif

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.q = make_uint4(0, 0, 0, 0);
    ch.h = 0;
}

__device__ __forceinline__ void chunk_decode(const Chunk& ch, u32 q[4], float& d) {
    q[0] = ch.q.x; q[1] = ch.q.y; q[2] = ch.q.z; q[3] = ch.q.w;
    d = gemv_h2f(ch.h);
}

#if GEMV_S == 2
// s=2 (l=1, 2): the 16 quant bytes and the 4-byte scale word of blocks
// 2m and 2m+1 (the gate asks cols to be a multiple of 64, so the word stays
// inside the row) through the shared-memory ring (prelude.cu); a dead row
// lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
#if GEMV_L == 1
    gemv_cp16(s16, r.q + (size_t)c * 16, live);
    gemv_cp4(s4, r.s + (size_t)(c >> 1) * 4, live);
#else
    const unsigned char* t = q40_tile(r.q, c);
    gemv_cp16(s16, t + 64 + 16 * (c & 31), live);
    gemv_cp4(s4, t + 4 * ((c & 31) >> 1), live);
#endif
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.q = gemv_lds128(s16);
    ch.h = (gemv_lds32(s4) >> ((u32)(c & 1) * 16u)) & 0xFFFFu;
}
#endif
#endif

// (2^23 + nibble) - (2^23 + 8) = nibble - 8, exactly.
#define Q4_OFF 8388616.0f

#if GEMV_A
// a=1: x of block c is int8 q (words xl = q[0..15], xh = q[16..31]) with
// scale dx and sum sx (prelude.cu). Weight j (nibble, 0..15) pairs with
// q[j], weight j+16 with q[j+16]: dp4a of the low nibbles of word k against
// xl word k, of the high nibbles against xh word k. The integer
// sum((n-8)*q) = dp4a chain from -8*sx, exact (|.| <= 32*8*127), so
// acc = fma(d*dx, (float)isum, acc) is the chunk's one rounding step.
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    uint4 xl, xh, m;
    gemv_xq_load(c, xl, xh, m);
    const float dx = __uint_as_float(m.x);
    const int base = -8 * (int)m.y;
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        u32 q[4];
        float d;
        chunk_decode(ch[i], q, d);
        int s = base;
        s = gemv_dp4a((int)(q[0] & 0x0F0F0F0Fu), (int)xl.x, s);
        s = gemv_dp4a((int)(q[1] & 0x0F0F0F0Fu), (int)xl.y, s);
        s = gemv_dp4a((int)(q[2] & 0x0F0F0F0Fu), (int)xl.z, s);
        s = gemv_dp4a((int)(q[3] & 0x0F0F0F0Fu), (int)xl.w, s);
        s = gemv_dp4a((int)((q[0] >> 4) & 0x0F0F0F0Fu), (int)xh.x, s);
        s = gemv_dp4a((int)((q[1] >> 4) & 0x0F0F0F0Fu), (int)xh.y, s);
        s = gemv_dp4a((int)((q[2] >> 4) & 0x0F0F0F0Fu), (int)xh.z, s);
        s = gemv_dp4a((int)((q[3] >> 4) & 0x0F0F0F0Fu), (int)xh.w, s);
        acc[i] = __fmaf_rn(__fmul_rn(d, dx), __int2float_rn(s), acc[i]);
    }
}
#else
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    u32 lo[GEMV_R][4], hi[GEMV_R][4];
    float d[GEMV_R], s[GEMV_R];
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        u32 q[4];
        chunk_decode(ch[i], q, d[i]);
#pragma unroll
        for (int k = 0; k < 4; k++) {
            lo[i][k] = q[k] & 0x0F0F0F0Fu;
            hi[i][k] = (q[k] >> 4) & 0x0F0F0F0Fu;
        }
        s[i] = 0.0f;
    }
    // Piece p holds weights 8p..8p+7: low nibbles of words 2p, 2p+1 (p < 2),
    // high nibbles of words 2p-4, 2p-3 (p >= 2).
#pragma unroll
    for (int p = 0; p < 4; p++) {
        const float4 xa = gemv_x4(x, c, 2 * p);
        const float4 xb = gemv_x4(x, c, 2 * p + 1);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            const u32 v0 = p < 2 ? lo[i][2 * p] : hi[i][2 * p - 4];
            const u32 v1 = p < 2 ? lo[i][2 * p + 1] : hi[i][2 * p - 3];
            s[i] = gemv_dot8_bytes(s[i], v0, v1, Q4_OFF, xa, xb);
        }
    }
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) acc[i] = __fmaf_rn(d[i], s[i], acc[i]);
}
#endif

GEMV_DEFINE_KERNEL
