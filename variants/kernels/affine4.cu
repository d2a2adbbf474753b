// gemvtune affine4 family (MLX affine, 4 bits, group 64). With l=0 the
// buffer is MLX's three tensors back to back: w plane (rows*cols/2 bytes,
// u32 words of 8 nibbles, low nibble first), scales plane (rows*cols/64
// f16), biases plane (same); l=1 interleaves them (below). Chunk = 32 weights = half a group: 16 bytes of the w plane (one
// 16-byte load) plus the group's f16 scale and bias (the two lanes of a group
// load the same address in one instruction).
// Chunk expression, like MLX's qmv (f32, scale factored out):
//   sq = fma chain of q*x over weights 0..31, sx = add chain of x,
//   acc = acc + fma(scale, sq, bias*sx).
// a=1 (int8 x, staged even/odd: GEMV_XQ_EVENODD): isum = sum of q*qx by
// dp4a and sx = sum of qx, both exact; acc = fma(dx, fma(scale, isum,
// bias*sx), acc). The bias meets the rounded x too: the weights scale*q +
// bias are centred, so their rounding errors mostly cancel (with the exact
// f32 sum of x for the bias the error was 2-4x larger, docs/kernels.md).

struct Geo {
    size_t rowBytes;  // l=0: w-plane bytes per row; l=1: bytes per row
    size_t scaleOff;  // l=0: start of the scales plane
    size_t biasOff;   // l=0: start of the biases plane
    int ng;           // groups per row
};

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.ng = cols / 64;
#if GEMV_L == 0
    g.rowBytes = (size_t)cols / 2;
    g.scaleOff = (size_t)rows * g.rowBytes;
    g.biasOff = g.scaleOff + (size_t)rows * (size_t)g.ng * 2;
#else
    g.rowBytes = (size_t)(cols / 1024) * 576;
    g.scaleOff = 0;
    g.biasOff = 0;
#endif
    return g;
}

struct Chunk { uint4 q; u32 s, b; };

#if GEMV_L == 0
// A row's nibbles, scales and biases (MLX's three planes).
struct RowPtr { const unsigned char* q; const unsigned char* s; const unsigned char* b; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.q = W + row * g.rowBytes;
    r.s = W + g.scaleOff + row * (size_t)g.ng * 2;
    r.b = W + g.biasOff + row * (size_t)g.ng * 2;
    return r;
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    ch.q = gemv_ld128(r.q + (size_t)c * 16);
    ch.s = gemv_ld16(r.s + (size_t)(c >> 1) * 2);
    ch.b = gemv_ld16(r.b + (size_t)(c >> 1) * 2);
}

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    gemv_pf(r.q + (size_t)c * 16);
    gemv_pf(r.s + (size_t)(c >> 1) * 2);
    gemv_pf(r.b + (size_t)(c >> 1) * 2);
}
#else
// l=1, interleaved warp tiles (variants.RepackInterleaved): chunks
// 32t..32t+31 (groups 16t..16t+15) form tile t of the row, 576 bytes: the
// 16 groups' (scale, bias) words, scale in the low half, then the 512
// nibble bytes. A lane loads its 16 nibble bytes at 64 + 16(c&31) and its
// group's word at 4((c&31)/2): one stream per row, each load contiguous
// per warp. ch.s keeps the whole word: gemv_h2f reads the low half.
struct RowPtr { const unsigned char* p; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.p = W + row * g.rowBytes;
    return r;
}

__device__ __forceinline__ const unsigned char* a4_tile(const RowPtr& r, int c) {
    return r.p + (size_t)(c >> 5) * 576;
}

// Chunk j (0..31) of warp tile t, from global or shared memory (Ld).
template <class Ld>
__device__ __forceinline__ void a4_tile_chunk(Chunk& ch, const unsigned char* t, int j) {
    ch.q = Ld::v4(t + 64 + 16 * j);
    ch.s = Ld::w32(t + 4 * (j >> 1));
    ch.b = ch.s >> 16;
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    a4_tile_chunk<GemvGlobal>(ch, a4_tile(r, c), c & 31);
}

#if GEMV_S == 3
// s=3: chunk j of a tile landed whole in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    a4_tile_chunk<GemvShared>(ch, t, j);
}
#endif

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) {
    const unsigned char* t = a4_tile(r, c);
    gemv_pf(t + 64 + 16 * (c & 31));
    gemv_pf(t);
}
#endif

#if GEMV_S == 2
#if GEMV_L == 0
// s=2: the 16 nibble bytes, and the 4-byte words holding the group's scale
// and bias (groups 2m and 2m+1 share one: the gate asks cols to be a
// multiple of 128, so the word stays inside the row), through the
// shared-memory ring (prelude.cu); a dead row lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    gemv_cp16(s16, r.q + (size_t)c * 16, live);
    gemv_cp4(s4, r.s + (size_t)(c >> 2) * 4, live);
    gemv_cp4(s4 + 128, r.b + (size_t)(c >> 2) * 4, live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    const u32 sh = (u32)((c >> 1) & 1) * 16u;  // group c/2: low or high half of the word
    ch.q = gemv_lds128(s16);
    ch.s = (gemv_lds32(s4) >> sh) & 0xFFFFu;
    ch.b = (gemv_lds32(s4 + 128) >> sh) & 0xFFFFu;
}
#else
// s=2, l=1: the 16 nibble bytes and the (scale, bias) word.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    const unsigned char* t = a4_tile(r, c);
    gemv_cp16(s16, t + 64 + 16 * (c & 31), live);
    gemv_cp4(s4, t + 4 * ((c & 31) >> 1), live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) {
    ch.q = gemv_lds128(s16);
    ch.s = gemv_lds32(s4);
    ch.b = ch.s >> 16;
}
#endif
#endif

__device__ __forceinline__ void chunk_zero(Chunk& ch) {
    ch.q = make_uint4(0, 0, 0, 0);
    ch.s = 0;
    ch.b = 0;
}

#if GEMV_A
#if !GEMV_XQ_EVENODD
#error "affine4 a=1 needs x staged even/odd (GEMV_XQ_EVENODD)"
#endif
// a=1: x of chunk c is group c of the staged int8 x, even-indexed q in xl,
// odd ones in xh. Byte b of w word k holds weights 8k+2b (low nibble) and
// 8k+2b+1 (high): the low nibbles of word k are the even weights 4k..4k+3
// of the even list (xl word k), the high nibbles the odd ones (xh word k).
// isum = dp4a chain, exact (|.| <= 32*15*127).
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    uint4 xl, xh, m;
    gemv_xq_load(c, xl, xh, m);
    const float dx = __uint_as_float(m.x);
    const float sx = __int2float_rn((int)m.y);
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        const uint4 q = ch[i].q;
        int s = 0;
        s = gemv_dp4a((int)(q.x & 0x0F0F0F0Fu), (int)xl.x, s);
        s = gemv_dp4a((int)(q.y & 0x0F0F0F0Fu), (int)xl.y, s);
        s = gemv_dp4a((int)(q.z & 0x0F0F0F0Fu), (int)xl.z, s);
        s = gemv_dp4a((int)(q.w & 0x0F0F0F0Fu), (int)xl.w, s);
        s = gemv_dp4a((int)((q.x >> 4) & 0x0F0F0F0Fu), (int)xh.x, s);
        s = gemv_dp4a((int)((q.y >> 4) & 0x0F0F0F0Fu), (int)xh.y, s);
        s = gemv_dp4a((int)((q.z >> 4) & 0x0F0F0F0Fu), (int)xh.z, s);
        s = gemv_dp4a((int)((q.w >> 4) & 0x0F0F0F0Fu), (int)xh.w, s);
        const float scale = gemv_h2f(ch[i].s), bias = gemv_h2f(ch[i].b);
        acc[i] = __fmaf_rn(dx, __fmaf_rn(scale, __int2float_rn(s), __fmul_rn(bias, sx)), acc[i]);
    }
}
#else
__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    float sq[GEMV_R];
    float sx = 0.0f;
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) sq[i] = 0.0f;
    // Word k (0..3) holds weights 8k..8k+7; byte b of it holds weight 8k+2b
    // (low nibble) and 8k+2b+1 (high nibble).
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const float4 xa = gemv_x4(x, c, 2 * k);
        const float4 xb = gemv_x4(x, c, 2 * k + 1);
        sx = __fadd_rn(sx, xa.x);
        sx = __fadd_rn(sx, xa.y);
        sx = __fadd_rn(sx, xa.z);
        sx = __fadd_rn(sx, xa.w);
        sx = __fadd_rn(sx, xb.x);
        sx = __fadd_rn(sx, xb.y);
        sx = __fadd_rn(sx, xb.z);
        sx = __fadd_rn(sx, xb.w);
#pragma unroll
        for (int i = 0; i < GEMV_R; i++) {
            const u32 wk = k == 0 ? ch[i].q.x : k == 1 ? ch[i].q.y : k == 2 ? ch[i].q.z : ch[i].q.w;
            const u32 lo = wk & 0x0F0F0F0Fu, hi = (wk >> 4) & 0x0F0F0F0Fu;
            float t = sq[i];
            t = __fmaf_rn(__fsub_rn(gemv_bytef(lo, 0), GEMV_MAGIC), xa.x, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(hi, 0), GEMV_MAGIC), xa.y, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(lo, 1), GEMV_MAGIC), xa.z, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(hi, 1), GEMV_MAGIC), xa.w, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(lo, 2), GEMV_MAGIC), xb.x, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(hi, 2), GEMV_MAGIC), xb.y, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(lo, 3), GEMV_MAGIC), xb.z, t);
            t = __fmaf_rn(__fsub_rn(gemv_bytef(hi, 3), GEMV_MAGIC), xb.w, t);
            sq[i] = t;
        }
    }
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        const float scale = gemv_h2f(ch[i].s), bias = gemv_h2f(ch[i].b);
        acc[i] = __fadd_rn(acc[i], __fmaf_rn(scale, sq[i], __fmul_rn(bias, sx)));
    }
}
#endif

GEMV_DEFINE_KERNEL
