// The dense 16-bit families (bf16, f16): chunk = 8 weights, one 16-byte
// load; the family file before this one defines DENSE16_LO(w) and
// DENSE16_HI(w), the f32 of the low and the high half of a 32-bit word.
// Chunk expression: acc = fma chain over weights 0..7 of w*x.

struct Geo { size_t rowBytes; };

__device__ __forceinline__ Geo gemv_geo(int rows, int cols) {
    Geo g;
    g.rowBytes = (size_t)cols * 2;
    return g;
}

struct Chunk { uint4 q; };

struct RowPtr { const unsigned char* p; };

__device__ __forceinline__ RowPtr row_ptr(const unsigned char* __restrict__ W, const Geo& g, size_t row) {
    RowPtr r;
    r.p = W + row * g.rowBytes;
    return r;
}

__device__ __forceinline__ void chunk_load(Chunk& ch, const RowPtr& r, int c) {
    ch.q = gemv_ld128(r.p + (size_t)c * 16);
}

#if GEMV_S == 3
// s=3: chunk j of a warp step's 512 bytes landed in shared memory.
__device__ __forceinline__ void chunk_land_tile(Chunk& ch, const unsigned char* t, int j) {
    ch.q = GemvShared::v4(t + 16 * j);
}
#endif

__device__ __forceinline__ void chunk_prefetch(const RowPtr& r, int c) { gemv_pf(r.p + (size_t)c * 16); }

__device__ __forceinline__ void chunk_zero(Chunk& ch) { ch.q = make_uint4(0, 0, 0, 0); }

#if GEMV_S == 2
// s=2: the chunk's 16 bytes through the shared-memory ring (prelude.cu); a
// dead row lands zeros.
__device__ __forceinline__ void chunk_issue(u32 s16, u32 s4, const RowPtr& r, int c, bool live) {
    gemv_cp16(s16, r.p + (size_t)c * 16, live);
}

__device__ __forceinline__ void chunk_land(Chunk& ch, u32 s16, u32 s4, int c) { ch.q = gemv_lds128(s16); }
#endif

__device__ __forceinline__ void chunk_consume(float (&acc)[GEMV_R], const Chunk (&ch)[GEMV_R], const float* __restrict__ x, int c) {
    const float4 xa = gemv_x4(x, c, 0);
    const float4 xb = gemv_x4(x, c, 1);
#pragma unroll
    for (int i = 0; i < GEMV_R; i++) {
        const uint4 q = ch[i].q;
        float t = acc[i];
        t = __fmaf_rn(DENSE16_LO(q.x), xa.x, t);
        t = __fmaf_rn(DENSE16_HI(q.x), xa.y, t);
        t = __fmaf_rn(DENSE16_LO(q.y), xa.z, t);
        t = __fmaf_rn(DENSE16_HI(q.y), xa.w, t);
        t = __fmaf_rn(DENSE16_LO(q.z), xb.x, t);
        t = __fmaf_rn(DENSE16_HI(q.z), xb.y, t);
        t = __fmaf_rn(DENSE16_LO(q.w), xb.z, t);
        t = __fmaf_rn(DENSE16_HI(q.w), xb.w, t);
        acc[i] = t;
    }
}

GEMV_DEFINE_KERNEL
