// gemvtune prelude: shared pieces of every family's GEMV kernel.
//
// The generated header before this file defines the knobs:
//   GEMV_R rows per warp, GEMV_F launch-bounds floor (0 = none), GEMV_U unroll
//   depth (chunk steps whose loads are issued before any is consumed),
//   GEMV_S 1 = x staged in shared memory, GEMV_W warps per block, GEMV_L layout.
// The family file after it defines the chunk (the unit one lane consumes per
// step) and includes gemv_body.cu's kernel through GEMV_DEFINE_KERNEL.
//
// Summation order (the reason every knob is class exact): lane l consumes
// chunks c = l, l+32, l+64, ... in that order into one f32 accumulator per
// row; each chunk contributes through a fixed expression written with
// __fmaf_rn/__fadd_rn/__fsub_rn; a fixed xor butterfly (16,8,4,2,1) sums the
// lanes. Nothing of that depends on R, U, S, W, F or L.

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

#if GEMV_F > 0
#define GEMV_BOUNDS __launch_bounds__(32 * GEMV_W, GEMV_F)
#else
#define GEMV_BOUNDS __launch_bounds__(32 * GEMV_W)
#endif

// 2^23 as float: (0x4B000000 | n) reinterpreted is 8388608 + n for n < 2^23.
#define GEMV_MAGIC 8388608.0f

// f16 bits to f32 (exact) without headers.
__device__ __forceinline__ float gemv_h2f(u32 h) {
    float f;
    unsigned short hs = (unsigned short)(h & 0xFFFFu);
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(hs));
    return f;
}

// Byte k (0..3) of v as the float 2^23 + byte, via PRMT with 0x4B000000.
__device__ __forceinline__ float gemv_bytef(u32 v, int k) {
    return __uint_as_float(__byte_perm(v, 0x4B000000u, 0x7440u + (u32)k));
}

// Read-only loads through the non-coherent path.
__device__ __forceinline__ u32 gemv_ld32(const unsigned char* p) {
    return __ldg((const unsigned int*)p);
}
__device__ __forceinline__ u32 gemv_ld16(const unsigned char* p) {
    return (u32)__ldg((const unsigned short*)p);
}
__device__ __forceinline__ uint4 gemv_ld128(const unsigned char* p) {
    return __ldg((const uint4*)p);
}

#if GEMV_S
extern __shared__ float4 gemv_xs[];
#endif

// x as float4 number i (x[4i..4i+3]): from shared memory when staged, else
// from global memory through the read-only path. Same values either way.
__device__ __forceinline__ float4 gemv_x4(const float* __restrict__ x, int i) {
#if GEMV_S
    return gemv_xs[i];
#else
    return __ldg((const float4*)x + i);
#endif
}

// Stage x into shared memory (s=1): the whole block, 16-byte loads
// (cols is a multiple of 8 for every family, and x is 16-byte aligned).
__device__ __forceinline__ void gemv_stage_x(const float* __restrict__ x, int cols) {
#if GEMV_S
    const float4* x4 = (const float4*)x;
    const int n4 = cols >> 2;
    for (int i = threadIdx.x; i < n4; i += 32 * GEMV_W) gemv_xs[i] = __ldg(x4 + i);
    __syncthreads();
#endif
}

// The fixed lane reduction: xor butterfly 16, 8, 4, 2, 1.
__device__ __forceinline__ float gemv_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    return v;
}

// The kernel. The family defines before this point:
//   GEMV_CHUNK         weights per chunk
//   struct Geo         per-launch geometry (row strides, plane offsets)
//   Geo  gemv_geo(rows, cols)
//   struct Chunk       the raw loaded registers of one chunk of one row
//   void chunk_load(Chunk&, W, const Geo&, size_t row, int c)   only loads
//   void chunk_zero(Chunk&)                                      for rows past the end
//   void chunk_consume(float acc[GEMV_R], const Chunk ch[GEMV_R], x, int c)
//        loads x of chunk c once and adds the chunk of every row to its acc.
#define GEMV_DEFINE_KERNEL                                                              \
extern "C" __global__ void GEMV_BOUNDS gemv(const unsigned char* __restrict__ W,        \
        const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {       \
    gemv_stage_x(x, cols);                                                              \
    const int lane = threadIdx.x & 31;                                                  \
    const int warp = threadIdx.x >> 5;                                                  \
    const int row0 = (blockIdx.x * GEMV_W + warp) * GEMV_R;                            \
    if (row0 >= rows) return;                                                           \
    const Geo g = gemv_geo(rows, cols);                                                 \
    const int nch = cols / GEMV_CHUNK;                                                  \
    bool live[GEMV_R];                                                                  \
    float acc[GEMV_R];                                                                  \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        live[i] = row0 + i < rows;                                                      \
        acc[i] = 0.0f;                                                                  \
    }                                                                                   \
    int c = lane;                                                                       \
    _Pragma("unroll 1") for (; c + 32 * (GEMV_U - 1) < nch; c += 32 * GEMV_U) {         \
        Chunk ch[GEMV_U][GEMV_R];                                                       \
        _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                            \
            _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                        \
                if (live[i]) chunk_load(ch[k][i], W, g, (size_t)(row0 + i), c + 32 * k);\
                else chunk_zero(ch[k][i]);                                              \
            }                                                                           \
        }                                                                               \
        _Pragma("unroll") for (int k = 0; k < GEMV_U; k++)                              \
            chunk_consume(acc, ch[k], x, c + 32 * k);                                   \
    }                                                                                   \
    _Pragma("unroll 1") for (; c < nch; c += 32) {                                      \
        Chunk ch[GEMV_R];                                                               \
        _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                            \
            if (live[i]) chunk_load(ch[i], W, g, (size_t)(row0 + i), c);                \
            else chunk_zero(ch[i]);                                                     \
        }                                                                               \
        chunk_consume(acc, ch, x, c);                                                   \
    }                                                                                   \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        const float v = gemv_warp_sum(acc[i]);                                          \
        if (lane == 0 && live[i]) y[row0 + i] = v;                                      \
    }                                                                                   \
}
