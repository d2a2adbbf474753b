// gemvtune prelude: shared pieces of every family's GEMV kernel.
//
// The generated header before this file defines the knobs and the chunk:
//   GEMV_R rows per warp, GEMV_F launch-bounds floor (0 = none), GEMV_U unroll
//   depth (chunk steps whose loads are issued before any is consumed),
//   GEMV_S 1 = x staged in shared memory, GEMV_W warps per block, GEMV_L layout,
//   GEMV_CHUNK weights one lane consumes per step (fixed per family),
//   GEMV_A activation path: 0 = f32 x, 1 = x quantized to int8 per group of
//   32 in shared memory, consumed with __dp4a (needs GEMV_S = 1).
// The family file after it defines the hooks listed before GEMV_DEFINE_KERNEL
// below (the one list of what a family provides) and ends with
// GEMV_DEFINE_KERNEL, which expands to the kernel in the form the knobs
// select.
//
// Summation order (the reason every knob is class exact): lane l consumes
// chunks c = l, l+32, l+64, ... in that order into one f32 accumulator per
// row; each chunk contributes through a fixed expression written with
// __fmaf_rn/__fadd_rn/__fsub_rn; a fixed xor butterfly (16,8,4,2,1) sums the
// lanes. Nothing of that depends on R, U, S, W, F or L. With a=1 (int8
// activations) a chunk contributes acc = fma(d_w * d_x, (float)isum, acc)
// where isum is an exact integer dot product: the same order, another
// expression, so a=1 variants are bit-identical among themselves (class
// tolerance against the f32 path).

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

// Weights are read once per launch and not again until every other
// layer's have passed through L2, so the kernels that stage x with their
// weights in registers (s=1) or copy them in bulk (s=3) ask L2 to evict
// the weights' lines first (sm_80+): the lines that stay are x's, which
// every block reads, and whatever the engine keeps there between kernels.
// On the H200 at 28672x8192 it made the s=3 winners 1.2-2.2 % faster and
// the s=1 variants 1.2-5.2 % (within 1 % either way at 4096x14336;
// docs/results.md, "Kernels v8"). Not for:
// - s=0 (stock among them): v1 stays the kernel engines roll back to;
// - s=2: cp.async with a cache policy took more registers (q8_0
//   r1f0u4s2w8l1a1 48 -> 64 with NVRTC 11.8) and on the H200 spilled
//   q8_0's winner at 1024x4096 (3.50 -> 3.83 µs).
// createpolicy is pure (plain asm), so the compiler makes it once per
// kernel, not once per load. (PTX ISA 7.4: NVRTC 11.4 and newer.)
#if (GEMV_S == 1 || GEMV_S == 3) && __CUDA_ARCH__ >= 800 && (__CUDACC_VER_MAJOR__ > 11 || (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 4))
#define GEMV_L2_HINT 1
__device__ __forceinline__ u64 gemv_weight_policy() {
    u64 pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
#else
#define GEMV_L2_HINT 0
#endif

// Read-only weight loads through the non-coherent path.
__device__ __forceinline__ u32 gemv_ld32(const unsigned char* p) {
#if GEMV_L2_HINT
    u32 v;
    asm volatile("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(gemv_weight_policy()));
    return v;
#else
    return __ldg((const unsigned int*)p);
#endif
}
__device__ __forceinline__ u32 gemv_ld16(const unsigned char* p) {
#if GEMV_L2_HINT
    u16 v;
    asm volatile("ld.global.nc.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(gemv_weight_policy()));
    return (u32)v;
#else
    return (u32)__ldg((const unsigned short*)p);
#endif
}
__device__ __forceinline__ uint4 gemv_ld128(const unsigned char* p) {
#if GEMV_L2_HINT
    uint4 v;
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(gemv_weight_policy()));
    return v;
#else
    return __ldg((const uint4*)p);
#endif
}

// A chunk's parts read from global memory (the read-only path) or from a
// tile in shared memory (s=3): the families' tile readers take either.
struct GemvGlobal {
    static __device__ __forceinline__ uint4 v4(const unsigned char* p) { return gemv_ld128(p); }
    static __device__ __forceinline__ u32 w32(const unsigned char* p) { return gemv_ld32(p); }
    static __device__ __forceinline__ u32 h16(const unsigned char* p) { return gemv_ld16(p); }
};
struct GemvShared {
    static __device__ __forceinline__ uint4 v4(const unsigned char* p) { return *(const uint4*)p; }
    static __device__ __forceinline__ u32 w32(const unsigned char* p) { return *(const u32*)p; }
    static __device__ __forceinline__ u32 h16(const unsigned char* p) { return *(const u16*)p; }
};

// x loads. In a PDL chain x is the output of the kernel before, which
// may still be writing it while this grid's blocks start (until
// gemv_pdl_wait): x is not read-only for this kernel's lifetime, so it is
// never read through the non-coherent path (__ldg, ld.global.nc), which
// the compiler may schedule above the wait and which may serve lines
// cached before the writes landed. A volatile asm stays after the wait
// (itself a volatile asm), and a plain ld.global sees the writes the wait
// made visible.
__device__ __forceinline__ float4 gemv_ldx(const float4* p) {
    float4 v;
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

#if GEMV_S
extern __shared__ float4 gemv_xs[];
#endif

// x of chunk c, float4 number j (x[c*GEMV_CHUNK + 4j .. +3]): from shared
// memory when staged, else from global memory (gemv_ldx). Same values
// either way.
//
// Staged x carries one float4 of padding after every chunk of 32 or more
// weights: lane l reads chunk l+32k, so without padding the 32 lanes of one
// LDS.128 sit 128 bytes (or more) apart, all in the same banks (32
// wavefronts); with it they spread over all banks (4 wavefronts).
#define GEMV_X4_PER_CHUNK (GEMV_CHUNK / 4)
#if GEMV_CHUNK >= 32
#define GEMV_XS_STRIDE (GEMV_X4_PER_CHUNK + 1)
#else
#define GEMV_XS_STRIDE GEMV_X4_PER_CHUNK
#endif

__device__ __forceinline__ float4 gemv_x4(const float* __restrict__ x, int c, int j) {
#if GEMV_S
    return gemv_xs[c * GEMV_XS_STRIDE + j];
#else
    return gemv_ldx((const float4*)x + (c * GEMV_X4_PER_CHUNK + j));
#endif
}

// float4s of x per thread that staging loads before the weights (see
// gemv_stage_begin): GEMV_XPRE always; with a=1, GEMV_XPRE_MAX when x
// is longer than GEMV_XPRE steps.
#define GEMV_XPRE 4
#if GEMV_A
#define GEMV_XPRE_MAX 8
#else
#define GEMV_XPRE_MAX GEMV_XPRE
#endif

// Loads this thread's float4s of x for steps J0..J1-1 into pre[j] (float4
// number lane + 32·(warp + W·j), zero past n4).
template <int J0, int J1>
__device__ __forceinline__ void gemv_x_pre(const float4* __restrict__ x4, int n4, float4 (&pre)[GEMV_XPRE_MAX]) {
#pragma unroll
    for (int j = J0; j < J1; j++) {
        const int i = (int)threadIdx.x + 32 * GEMV_W * j;
        pre[j] = i < n4 ? gemv_ldx(x4 + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

#if GEMV_A && !GEMV_S
#error "a=1 stages int8 activations in shared memory: needs s=1"
#endif

#if GEMV_A
// Int8 activations (a=1; the gate requires s=1). Every group g of 32 x
// values (x[32g .. 32g+31], one q4_0/q8_0 block, one q4_K sub-block) is
// quantized much like llama.cpp's q8_1: amax = max|x|, d = amax·(1/127)
// (a multiplication, where q8_1 divides), q = round-to-nearest-even(x·(1/d))
// in [-127, 127] (d = 0 gives q = 0), and s = sum of q. Shared memory holds per group 48 bytes, three
// uint4: q bytes 0..15, q bytes 16..31, {d bits, s, 0, 0}; the groups of a
// chunk are contiguous, and chunks of more than one group (q4_K: 2) get one
// uint4 of padding after them. Lane l reads chunk l+32k, so the 8 lanes of
// a quarter-warp LDS.128 phase are 48 (or 112) bytes apart: all 32 banks, 4
// wavefronts per LDS.128, none wasted (32 or 96 bytes would be 2-way).
// Every block computes the same q, d, s from x, so the output does not
// depend on the knobs (all a=1 variants of a family are bit-identical).
#define GEMV_XQ_GROUPS (GEMV_CHUNK / 32)
#if GEMV_XQ_GROUPS > 1
#define GEMV_XQ_CHUNK_STRIDE (3 * GEMV_XQ_GROUPS + 1)
#else
#define GEMV_XQ_CHUNK_STRIDE 3
#endif

__device__ __forceinline__ uint4* gemv_xq() { return (uint4*)gemv_xs; }

// First uint4 of group g in the staged int8 x.
__device__ __forceinline__ int gemv_xq_base(int g) {
    return (g / GEMV_XQ_GROUPS) * GEMV_XQ_CHUNK_STRIDE + (g % GEMV_XQ_GROUPS) * 3;
}

// The packed q of group g: bytes 0..15 (words k = 0..3 hold q[4k..4k+3])
// and bytes 16..31 (with GEMV_XQ_EVENODD: q[0], q[2], ..., q[30], then
// q[1], q[3], ..., q[31]); meta = {d bits, s, 0, 0}.
__device__ __forceinline__ void gemv_xq_load(int g, uint4& lo, uint4& hi, uint4& meta) {
    const uint4* p = gemv_xq() + gemv_xq_base(g);
    lo = p[0];
    hi = p[1];
    meta = p[2];
}

// Signed 4-way byte dot product plus c (PTX dp4a, sm_61+): NVRTC's
// builtins lack __dp4a without sm_61_intrinsics.h, which nothing includes.
__device__ __forceinline__ int gemv_dp4a(int a, int b, int c) {
    int r;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

// round-to-nearest-even(v) as the low byte (two's complement) of the
// result, for |v| < 2^22: v + 1.5·2^23 rounds v to an integer in the
// mantissa (the ulp there is 1, the rounding is the add's, to nearest
// even), whose low byte is that integer's: 0x4B400000 has a zero low byte.
// One FADD instead of a float-to-int conversion, which runs at a quarter
// of the rate on its own pipe; the callers keep only the low byte.
__device__ __forceinline__ u32 gemv_q8(float v) {
    return __float_as_uint(__fadd_rn(v, 12582912.0f));
}

// max(a, b), NaN if either is NaN (fmaxf returns the other operand):
// one max.NaN on sm_80+, a compare and a select below.
__device__ __forceinline__ float gemv_max_nan(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return (a != a || b != b) ? a + b : fmaxf(a, b);
#endif
}

// Quantize N float4s of x, v[J..J+N-1], float4 numbers i0 + 32·W·j (values
// 4i..4i+3, group i/8), and store them; the whole warp calls it together
// (8 aligned lanes share a group's shuffles); lanes past n4 hold zeros and
// store nothing. d = amax·(1/127) and id = 1/d, both rounded to f32 (the
// host model in variants/int8_test.go does the same); q = rne(x·id):
// |x·id| <= 127 plus a few ulps, so q fits a signed byte; s = the group's
// sum of q, by dp4a against ones. About 40 instructions per float4. The N
// float4s go through each step together, so their shuffles and
// reciprocals overlap instead of waiting one float4 behind the other. A
// NaN in x makes its group's amax and d NaN, and an infinity its d
// infinite, so y is NaN where the f32 path's is too.
template <int N, int J, int M>
__device__ __forceinline__ void gemv_xq_put(const float4 (&v)[M], int i0, int n4) {
    float a[N], d[N];
    u32 packed[N];
    int s[N];
#pragma unroll
    for (int j = 0; j < N; j++) {
        const float4 w = v[J + j];
        a[j] = gemv_max_nan(gemv_max_nan(fabsf(w.x), fabsf(w.y)), gemv_max_nan(fabsf(w.z), fabsf(w.w)));
    }
#pragma unroll
    for (int m = 1; m <= 4; m <<= 1) {
#pragma unroll
        for (int j = 0; j < N; j++) a[j] = gemv_max_nan(a[j], __shfl_xor_sync(0xFFFFFFFFu, a[j], m));
    }
#pragma unroll
    for (int j = 0; j < N; j++) {
        const float4 w = v[J + j];
        d[j] = __fmul_rn(a[j], 1.0f / 127.0f);
        const float id = d[j] != 0.0f ? __frcp_rn(d[j]) : 0.0f;
        const u32 q0 = gemv_q8(__fmul_rn(w.x, id)), q1 = gemv_q8(__fmul_rn(w.y, id));
        const u32 q2 = gemv_q8(__fmul_rn(w.z, id)), q3 = gemv_q8(__fmul_rn(w.w, id));
        packed[j] = __byte_perm(__byte_perm(q0, q1, 0x0040u), __byte_perm(q2, q3, 0x0040u), 0x5410u);
        s[j] = gemv_dp4a((int)packed[j], 0x01010101, 0);
    }
#pragma unroll
    for (int m = 1; m <= 4; m <<= 1) {
#pragma unroll
        for (int j = 0; j < N; j++) s[j] += __shfl_xor_sync(0xFFFFFFFFu, s[j], m);
    }
#pragma unroll
    for (int j = 0; j < N; j++) {
        const int i = i0 + 32 * GEMV_W * j;
        if (i >= n4) continue;
        const int g = i >> 3, k = i & 7;
        uint4* grp = gemv_xq() + gemv_xq_base(g);
#if GEMV_XQ_EVENODD
        // Even-indexed values first (bytes 0..15), odd ones after:
        // x[4k], x[4k+2] are even values 2k, 2k+1; x[4k+1], x[4k+3] odd.
        unsigned short* halves = (unsigned short*)grp;
        halves[k] = (unsigned short)__byte_perm(packed[j], 0u, 0x0020u);
        halves[8 + k] = (unsigned short)__byte_perm(packed[j], 0u, 0x0031u);
#else
        ((u32*)grp)[k] = packed[j];
#endif
        if (k == 0) grp[2] = make_uint4(__float_as_uint(d[j]), (u32)s[j], 0u, 0u);
    }
}

// Quantize x into shared memory: each thread takes 4 consecutive values, 8
// lanes (aligned) a group. Float4 number i = lane + 32·(warp + W·j) for j =
// 0, 1, ...: a warp's 32 float4s of one step are 8 whole groups, and steps
// are warp-uniform, so the shuffles always have the full warp. The first
// GEMV_XPRE steps, and up to GEMV_XPRE_MAX when x is longer, were loaded
// by gemv_stage_begin (before the weights) and are quantized together, or
// only the first two where the third is past the end (a warp whose first
// step is past it has nothing to do); the rest go two steps per round
// trip.
template <int J0, int J1>
__device__ __forceinline__ void gemv_xq_pre(const float4 (&pre)[GEMV_XPRE_MAX], int first, int n4) {
    const int i0 = first + 32 * GEMV_W * J0 + (int)(threadIdx.x & 31);
    if (first + 32 * GEMV_W * (J0 + 2) < n4) gemv_xq_put<J1 - J0, J0>(pre, i0, n4);
    else if (first + 32 * GEMV_W * J0 < n4) gemv_xq_put<2, J0>(pre, i0, n4);
}

__device__ __forceinline__ void gemv_stage_xq(const float* __restrict__ x, int cols, const float4 (&pre)[GEMV_XPRE_MAX]) {
    const float4* x4 = (const float4*)x;
    const int n4 = cols >> 2;  // a multiple of 8: cols is a multiple of 32
    const int lane = threadIdx.x & 31;
    const int first = (threadIdx.x >> 5) * 32;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    gemv_xq_pre<0, GEMV_XPRE>(pre, first, n4);
    if (first + 32 * GEMV_W * GEMV_XPRE < n4) {
        gemv_xq_pre<GEMV_XPRE, GEMV_XPRE_MAX>(pre, first, n4);
        for (int base = first + 32 * GEMV_W * GEMV_XPRE_MAX; base < n4; base += 64 * GEMV_W) {
            const int i0 = base + lane, i1 = base + 32 * GEMV_W + lane;
            const float4 v[2] = {i0 < n4 ? gemv_ldx(x4 + i0) : zero, i1 < n4 ? gemv_ldx(x4 + i1) : zero};
            gemv_xq_put<2, 0>(v, i0, n4);
        }
    }
    __syncthreads();
}
#endif

// Staging x (s=1) in two halves. gemv_stage_begin loads this thread's first
// GEMV_XPRE float4s of x (float4 number lane + 32·(warp + W·j); the whole of
// x when cols <= 512·W), and with a=1 up to GEMV_XPRE_MAX when x is longer,
// into registers; the kernel calls it before it issues its first weight
// loads, so x (an L2 hit) is not queued behind them. The longer reach is
// behind a branch, so that an x of GEMV_XPRE steps or fewer runs the same
// instructions as without it (docs/kernels.md, "Loads ahead of use").
// gemv_stage_end stores those (with a=1 quantized, see above), loads and
// stores the rest, and waits for the block: 16-byte loads (cols is a
// multiple of 8 for every family, x is 16-byte aligned) stored at the padded
// positions gemv_x4 reads.
__device__ __forceinline__ void gemv_stage_begin(const float* __restrict__ x, int cols, float4 (&pre)[GEMV_XPRE_MAX]) {
#if GEMV_S
    const float4* x4 = (const float4*)x;
    const int n4 = cols >> 2;
    gemv_x_pre<0, GEMV_XPRE>(x4, n4, pre);
    if (((int)threadIdx.x & ~31) + 32 * GEMV_W * GEMV_XPRE < n4) gemv_x_pre<GEMV_XPRE, GEMV_XPRE_MAX>(x4, n4, pre);
#endif
}

__device__ __forceinline__ void gemv_stage_end(const float* __restrict__ x, int cols, const float4 (&pre)[GEMV_XPRE_MAX]) {
#if GEMV_A
    gemv_stage_xq(x, cols, pre);
#elif GEMV_S
    const float4* x4 = (const float4*)x;
    const int n4 = cols >> 2;
#pragma unroll
    for (int j = 0; j < GEMV_XPRE; j++) {
        const int i = (int)threadIdx.x + 32 * GEMV_W * j;
        if (i < n4) gemv_xs[(i / GEMV_X4_PER_CHUNK) * GEMV_XS_STRIDE + i % GEMV_X4_PER_CHUNK] = pre[j];
    }
#pragma unroll 4
    for (int i = threadIdx.x + 32 * GEMV_W * GEMV_XPRE; i < n4; i += 32 * GEMV_W)
        gemv_xs[(i / GEMV_X4_PER_CHUNK) * GEMV_XS_STRIDE + i % GEMV_X4_PER_CHUNK] = gemv_ldx(x4 + i);
    __syncthreads();
#endif
}

// Ask L2 to fetch the line holding p (no register, no wait).
__device__ __forceinline__ void gemv_pf(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
}

// Programmatic dependent launch (sm_90+; no-ops when the kernel was not
// launched with programmatic stream serialization, and compiled out below
// sm_90). gemv_pdl_wait waits until the previous kernel has finished and
// its writes are visible: every form calls it before it reads x or writes
// y, first thing but for the s=3 form's L2 prefetch of its first rows
// (GEMV_EARLY_L2_BYTES). gemv_pdl_release lets the next kernel in the stream
// launch its blocks once every block has called it (a block's first call
// counts, later ones do nothing). The s=0-2 forms call it after their last
// row group; an s=3 warp calls it as soon as it has issued its last copy,
// so the next kernel launches, and its blocks prefetch their first rows,
// while this one's last copies are still landing. Either way every block
// of this kernel is resident by then, so the next kernel's blocks, which
// only prefetch and wait, take no SM from rows still to be read.
__device__ __forceinline__ void gemv_pdl_release() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void gemv_pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#if GEMV_S >= 2
// Shared addresses are 32-bit (the .shared window).
__device__ __forceinline__ u32 gemv_smem_addr(const void* p) {
    u32 a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// Bytes of staged x before the weight ring (variants.family.Launch counts
// the same): int8 x with a=1, f32 x with its padding otherwise.
__device__ __forceinline__ u32 gemv_stage_bytes(int cols) {
#if GEMV_A
    return (u32)(cols / GEMV_CHUNK) * (GEMV_XQ_CHUNK_STRIDE * 16);
#else
    return (u32)(cols / GEMV_CHUNK) * (GEMV_XS_STRIDE * 16);
#endif
}
#endif

#if GEMV_S == 2
// s=2: weights travel through a ring in shared memory, copied with
// cp.async (sm_80+), so the chunks in flight hold no registers.
// gemv_cp16/gemv_cp4 copy 16 or 4 bytes, or write zeros when ok is false
// (src-size 0: nothing is read). The .ca form keeps the lines in L1: q4_K's
// parts share sectors.
__device__ __forceinline__ void gemv_cp16(u32 dst, const void* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void gemv_cp4(u32 dst, const void* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void gemv_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void gemv_cp_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ uint4 gemv_lds128(u32 a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ u32 gemv_lds32(u32 a) {
    u32 v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}

// One warp's ring: GEMV_U slots of GEMV_R rows; a chunk's 16-byte parts
// first (part j of slot k, row i at ((k*R + i)*P16 + j)*512 + 16*lane),
// then its 4-byte parts (at ((k*R + i)*P4 + j)*128 + 4*lane): each part a
// lane-contiguous run, so the lanes' reads are conflict-free.
#define GEMV_RING_P16_BYTES (GEMV_U * GEMV_R * GEMV_P16 * 512)
#define GEMV_RING_WARP_BYTES (GEMV_RING_P16_BYTES + GEMV_U * GEMV_R * GEMV_P4 * 128)
#define GEMV_SLOT16(k, i) (ring + ((k) * GEMV_R + (i)) * (GEMV_P16 * 512) + 16 * lane)
#define GEMV_SLOT4(k, i) (ring + GEMV_RING_P16_BYTES + ((k) * GEMV_R + (i)) * (GEMV_P4 * 128) + 4 * lane)
#endif

#if GEMV_S == 3
// s=3: weights travel through a ring in shared memory filled by bulk
// copies (cp.async.bulk, the Tensor Memory Accelerator; sm_90+). A warp
// step reads one whole tile of each of its rows (GEMV_TILE bytes: the 32
// chunks its lanes consume, one contiguous run in the layouts that allow
// s=3), so one instruction of one lane copies it, and completion is
// counted in bytes on an mbarrier per slot. Nothing in flight holds a
// register, and issuing costs a few instructions per tile, not per chunk.
#if __CUDA_ARCH__ < 900
#error "s=3 (bulk copies) needs sm_90 or newer"
#endif
#if __CUDACC_VER_MAJOR__ < 12
#error "s=3 (bulk copies) needs NVRTC 12.0 or newer (PTX ISA 8.0)"
#endif
__device__ __forceinline__ void gemv_bar_init(u32 bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
}
// Make the barriers' initialization visible to the bulk-copy unit.
__device__ __forceinline__ void gemv_bar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Order this thread's earlier shared-memory accesses before its later
// bulk copies (the async proxy).
__device__ __forceinline__ void gemv_fence_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// Arrive on bar (its one expected arrival) and expect bytes to land.
__device__ __forceinline__ void gemv_bar_expect(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
// Copy bytes (a multiple of 16, both addresses 16-byte aligned) from
// global src to shared dst; the landed bytes count on bar.
__device__ __forceinline__ void gemv_bulk(u32 dst, const void* src, u32 bytes, u32 bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(gemv_weight_policy()) : "memory");
}
// The bytes of each of its first rows that an s=3 warp prefetches to
// L2 before griddepcontrol.wait. Weights are nobody's output, and a
// prefetch returns nothing, so it cannot read early what the wait guards.
// In a PDL chain it starts the first rows during the kernel before's
// tail; x, an L2 hit every block waits for, is served behind whatever was
// issued before it, so more than this lost on the H200: a q4_0 token with
// PDL edges took 0.4, 0.8 and 1.4 % less time at 256, 512 and 1024 bytes
// a row, and 4.1 and 6.7 % more at 2048 and 4096; with the release at the
// last copy, 2048 still took 0.9 % more than 1024, and sent as line
// prefetches (below) 1536 and 2048 took 1.1 and 1.9 % more (docs/results.md).
#define GEMV_EARLY_L2_BYTES 1024
// Ask L2 for the first GEMV_EARLY_L2_BYTES of each of the warp's rows
// row0 .. row0+GEMV_R-1 below rows: eight lanes a row, one 128-byte line
// each per kilobyte. Plain line prefetches rather than one bulk prefetch
// per row by lane 0 (cp.async.bulk.prefetch.L2), which queues on the SM's
// bulk-copy unit ahead of the ring's first copies: on the H200 the q4_0
// token with PDL edges took 0.1-0.5 % less time, q4_K's 0.3-0.4 %, q8_0's
// and bf16's the same (docs/results.md, "seventeenth lease").
__device__ __forceinline__ void gemv_prefetch_first_rows(const unsigned char* W, size_t rowBytes,
                                                         int row0, int rows, int lane) {
    const size_t bytes = min((size_t)GEMV_EARLY_L2_BYTES, rowBytes);
    for (int i = lane >> 3; i < GEMV_R && row0 + i < rows; i += 4)
        for (size_t o = (size_t)(lane & 7) * 128; o < bytes; o += 1024)
            gemv_pf(W + (size_t)(row0 + i) * rowBytes + o);
}
// Wait until bar completes the phase with parity phase.
__device__ __forceinline__ void gemv_bar_wait(u32 bar, u32 phase) {
    u32 done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(phase) : "memory");
    } while (!done);
}
// One warp's ring: two slots (double buffering) of GEMV_R copies of up to
// GEMV_U tiles each (row i of slot k at (k*R + i)*U*TILE), after the
// staged x; every warp's two barriers come after all the rings (8 bytes
// each). Knob u is the tiles one copy moves: the chunks per lane and row
// that land together, as with s=0-2 the loads one lane has in flight per
// row and step.
#define GEMV_BULK_SLOTS 2
#define GEMV_BULK_COPY (GEMV_U * GEMV_TILE)
#define GEMV_BULK_WARP_BYTES (GEMV_BULK_SLOTS * GEMV_R * GEMV_BULK_COPY)
#endif

// The fixed lane reduction: xor butterfly 16, 8, 4, 2, 1.
__device__ __forceinline__ float gemv_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
    return v;
}

// The kernel contract. The generated header defines GEMV_CHUNK (weights
// per chunk) and the ring parts GEMV_P16, GEMV_P4 and GEMV_TILE; the family
// file defines, before GEMV_DEFINE_KERNEL:
//   struct Geo         per-launch geometry (row strides, plane offsets)
//   Geo  gemv_geo(rows, cols)
//   struct RowPtr      where one row's bytes start (per plane)
//   RowPtr row_ptr(W, const Geo&, size_t row)   once per row, not per chunk
//   struct Chunk       the raw loaded registers of one chunk of one row
//   void chunk_load(Chunk&, const RowPtr&, int c)               only loads
//   void chunk_zero(Chunk&)                                      for rows past the end
//   void chunk_prefetch(const RowPtr&, int c)                    an L2 prefetch of chunk c
//   void chunk_consume(float acc[GEMV_R], const Chunk ch[GEMV_R], x, int c)
//        loads x of chunk c once and adds the chunk of every row to its
//        acc; with GEMV_A = 1 the form that reads the staged int8 x
// and, for the stagings it offers (Family.Stagings):
//   s=2: void chunk_issue(u32 s16, u32 s4, const RowPtr&, int c, bool live)
//        cp.async of chunk c into the ring slot at shared addresses s16/s4
//        (zeros for a dead row), and
//        void chunk_land(Chunk&, u32 s16, u32 s4, int c)    the slot into registers
//   s=3: void chunk_land_tile(Chunk&, const unsigned char* tile, int j)
//        chunk j of a warp tile the bulk copy landed in shared memory
// Helpers a family keeps to itself (chunk_decode, q4k_parts, ...) are its
// own business.
//
// Row groups: a group is the GEMV_R*GEMV_W rows one block covers at a time
// (warp w takes rows (group*W + w)*R ..+R-1); with GEMV_LOOP block b walks
// groups b, b+gridDim.x, ... (launch knob g sets the grid), staging x once.
// The generated header sets GEMV_LOOP for staged variants (s=1, every g
// shares their cubin) and for s=0 only when g > 0; without it a block
// computes its one group and the loop's registers are not spent (the plain
// kernels, stock among them, stay as lean as before the loop existed).
//
// Loads run ahead of use, as a rolling pipeline:
// - A lane issues its first batch (GEMV_U chunks of GEMV_R rows) before x
//   is staged (x's own loads go first, see gemv_stage_begin), and with s=1
//   asks L2 for its second batch (chunk_prefetch: prefetch.global.L2, no
//   registers), so DRAM keeps streaming while the block stages. On the
//   H200 at 28672x8192 the prefetch took q4_0's and affine4's best from
//   34.1-34.4 to 33.6-34.1 µs; a second prefetched batch gained nothing.
// - As soon as slot k of the batch has been consumed, the lane issues the
//   chunk 32·GEMV_U further on into that slot, so about GEMV_U chunks per
//   row stay in flight all the time (a batch consumed whole before the
//   next was issued drained to none at every step).
// - When the row has no further full batch, the slots are refilled with
//   the next row group's first batch instead (with GEMV_LOOP), so the K
//   tail and the lane reduction run while those loads travel.
// Chunks of a row are consumed in the same order either way (c = lane,
// lane+32, ...), and rows past the end load nothing.
//
// Two forms of that loop, chosen by GEMV_PEEL (same results):
// - peeled (R·U <= 4): the loop refills from this row with loop-invariant
//   row pointers, and the last batch, peeled off after it, refills from the
//   next group. On the H200 this was 1-15 % faster than the single body
//   for these variants (q4_0 r1f0u2s1w16g5l1a1 at 28672x8192: 34.4 against
//   41.3 µs), but it doubles the unrolled body, and for large R·U compile
//   time: all variants peeled made a full tune's compile about 1.5 times
//   as long, for at most 0.6 % at R·U = 8.
// - single body (R·U > 4): one unrolled body; the last batch switches the
//   row pointers to the next group before it refills.
#define GEMV_PEEL (GEMV_R * GEMV_U <= 4)
// The kernel's signature and what every form starts from (GEMV_BOUNDS,
// the lane, the warp, the geometry), and how every form ends a row group:
// each row's lane sum, stored by lane 0 where the row exists.
#define GEMV_KERNEL_HEAD                                                                \
extern "C" __global__ void GEMV_BOUNDS gemv(const unsigned char* __restrict__ W,        \
        const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {       \
    const int lane = threadIdx.x & 31;                                                  \
    const int warp = threadIdx.x >> 5;                                                  \
    const Geo g = gemv_geo(rows, cols);
#define GEMV_STORE_ROWS                                                                 \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        const float v = gemv_warp_sum(acc[i]);                                          \
        if (lane == 0 && row0 + i < rows) y[row0 + i] = v;                              \
    }
// The K tail of s=0-2: the chunks c, c+32, ... < nch past the row's last
// full batch, loaded directly (nothing runs ahead for them) and consumed
// in order.
#define GEMV_K_TAIL                                                                     \
    if (c < nch) {                                                                      \
        bool tlive[GEMV_R];                                                             \
        RowPtr trp[GEMV_R];                                                             \
        _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                            \
            tlive[i] = row0 + i < rows;                                                 \
            trp[i] = row_ptr(W, g, (size_t)(tlive[i] ? row0 + i : 0));                  \
        }                                                                               \
        _Pragma("unroll 1") for (; c < nch; c += 32) {                                  \
            Chunk t[GEMV_R];                                                            \
            GEMV_LOAD_SLOT(t, trp, tlive, c)                                            \
            chunk_consume(acc, t, x, c);                                                \
        }                                                                               \
    }
#define GEMV_LOAD_SLOT(dst, ptrs, alive, c)                                             \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        if (alive[i]) chunk_load(dst[i], ptrs[i], (c));                                 \
        else chunk_zero(dst[i]);                                                        \
    }
#define GEMV_ROWS_AT(r0)                                                                \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        live[i] = (r0) + i < rows;                                                      \
        rp[i] = row_ptr(W, g, (size_t)(live[i] ? (r0) + i : 0));                        \
    }
// The head of a row group in the s=0-2 forms: its accumulators, and
// next0, the first row of the warp's next row group (rows when none).
#define GEMV_GROUP_HEAD                                                                 \
        float acc[GEMV_R];                                                              \
        _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) acc[i] = 0.0f;               \
        int next0 = rows;                                                               \
        if (GEMV_LOOP) {                                                                \
            grp += gridDim.x;                                                           \
            if (grp < ngroups) next0 = (grp * GEMV_W + warp) * GEMV_R;                  \
        }
// How the s=0-2 forms start: the head, the chunks per row, the row
// groups, whether a lane has a full first batch, its first row group's
// rows, and the PDL pair.
#define GEMV_PIPE_HEAD                                                                  \
GEMV_KERNEL_HEAD                                                                        \
    const int nch = cols / GEMV_CHUNK;                                                  \
    const int ngroups = (rows + GEMV_R * GEMV_W - 1) / (GEMV_R * GEMV_W);               \
    const bool batched = lane + 32 * (GEMV_U - 1) < nch;                                \
    int grp = blockIdx.x;                                                               \
    int row0 = (grp * GEMV_W + warp) * GEMV_R;                                          \
    bool live[GEMV_R];                                                                  \
    RowPtr rp[GEMV_R];                                                                  \
    GEMV_ROWS_AT(row0)                                                                  \
    gemv_pdl_wait();

#if GEMV_S == 3
// s=3: whole tiles through a two-slot ring. Lane 0 of each warp is the
// producer: an item is one copy per live row of the warp of the next u
// tiles of that row (fewer at the row's end), row group after row group
// (the groups the consumer walks), copied into slot item % 2 and counted
// on that slot's barrier. Every lane waits for the slot's phase, reads its
// chunk of each tile (chunk_land_tile) and consumes them in order; after
// __syncwarp (every lane has read the slot) lane 0 refills the slot with
// the item two further on, after a proxy fence that orders the lanes'
// reads of the slot before the copy's write. The first fill of each slot
// needs no fence (nothing has touched the ring yet) and gets none, so
// nothing orders the first copies after the x loads just issued (the
// fence is MEMBAR.ALL.CTA then FENCE.VIEW.ASYNC.S in the sm_90 SASS). With
// GEMV_BULK_LAND_FIRST (a family's choice, set in the generated header)
// every lane first reads all of a full slot into registers, lane 0
// refills it, and then the chunks are consumed: the refill leaves a
// decode earlier, for u·r chunks of registers. The
// producer stops where the consumer does, so no copy is pending at exit.
// Chunks are consumed in the same order as with every other s. Once the
// warp has nothing left to issue it releases the next kernel
// (gemv_pdl_release).
#define GEMV_BULK_ISSUE(k, refill)                                                      \
    if (prow < rows) {                                                                  \
        const int nq = min(GEMV_U, nt - pt);                                            \
        if (lane == 0) {                                                                \
            const int n = min(GEMV_R, rows - prow);                                     \
            const u32 bar = bars + 8u * (u32)(k);                                       \
            const u32 bytes = (u32)(nq * GEMV_TILE);                                    \
            if (refill) gemv_fence_async();                                             \
            gemv_bar_expect(bar, (u32)n * bytes);                                       \
            for (int i = 0; i < n; i++)                                                 \
                gemv_bulk(ring_s + (u32)(((k) * GEMV_R + i) * GEMV_BULK_COPY),          \
                          W + (size_t)(prow + i) * g.rowBytes + (size_t)pt * GEMV_TILE, \
                          bytes, bar);                                                  \
        }                                                                               \
        if ((pt += nq) == nt) {                                                         \
            pt = 0;                                                                     \
            pg += gridDim.x;                                                            \
            prow = pg < ngroups ? (pg * GEMV_W + warp) * GEMV_R : rows;                 \
        }                                                                               \
    }
// Tile j of a landed slot: each row's chunk of it, into registers.
#define GEMV_BULK_LAND(ch, slot, row0, rows, j, lane)                                   \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                                \
        if ((row0) + i < (rows))                                                        \
            chunk_land_tile((ch)[i], (slot) + i * GEMV_BULK_COPY + (j) * GEMV_TILE, (lane)); \
        else chunk_zero((ch)[i]);                                                       \
    }
// Tile j of a landed slot: each row's chunk of it, consumed.
#define GEMV_BULK_CONSUME(acc, slot, row0, rows, x, t, j, lane)                         \
    {                                                                                   \
        Chunk ch[GEMV_R];                                                               \
        GEMV_BULK_LAND(ch, slot, row0, rows, j, lane)                                   \
        chunk_consume(acc, ch, x, 32 * ((t) + (j)) + (lane));                           \
    }
#define GEMV_DEFINE_KERNEL                                                              \
GEMV_KERNEL_HEAD                                                                        \
    const int nt = cols / (32 * GEMV_CHUNK); /* tiles per row (the gate: whole) */     \
    const int ngroups = (rows + GEMV_R * GEMV_W - 1) / (GEMV_R * GEMV_W);               \
    const u32 stage = gemv_stage_bytes(cols);                                           \
    const unsigned char* ring = (const unsigned char*)gemv_xs + stage + warp * GEMV_BULK_WARP_BYTES; \
    const u32 ring_s = gemv_smem_addr(ring);                                            \
    const u32 bars = gemv_smem_addr(gemv_xs) + stage + GEMV_W * GEMV_BULK_WARP_BYTES    \
                     + 8u * GEMV_BULK_SLOTS * (u32)warp;                                \
    if (lane == 0) {                                                                    \
        _Pragma("unroll") for (int k = 0; k < GEMV_BULK_SLOTS; k++) gemv_bar_init(bars + 8u * k); \
        gemv_bar_init_fence();                                                          \
    }                                                                                   \
    __syncwarp();                                                                       \
    int pg = blockIdx.x, pt = 0;                                                        \
    int prow = (pg * GEMV_W + warp) * GEMV_R;                                           \
    gemv_prefetch_first_rows(W, g.rowBytes, prow, rows, lane);                          \
    gemv_pdl_wait();                                                                    \
    float4 xpre[GEMV_XPRE_MAX];                                                         \
    gemv_stage_begin(x, cols, xpre);                                                    \
    _Pragma("unroll") for (int k = 0; k < GEMV_BULK_SLOTS; k++) { GEMV_BULK_ISSUE(k, 0) } \
    gemv_stage_end(x, cols, xpre);                                                      \
    int grp = blockIdx.x;                                                               \
    int row0 = (grp * GEMV_W + warp) * GEMV_R;                                          \
    u32 item = 0;                                                                       \
    while (row0 < rows) {                                                               \
        float acc[GEMV_R];                                                              \
        _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) acc[i] = 0.0f;               \
        _Pragma("unroll 1") for (int t = 0; t < nt; t += GEMV_U, item++) {              \
            const int k = (int)(item & 1u);                                             \
            gemv_bar_wait(bars + 8u * (u32)k, (item >> 1) & 1u);                        \
            const unsigned char* slot = ring + k * GEMV_R * GEMV_BULK_COPY;            \
            if (GEMV_BULK_LAND_FIRST && t + GEMV_U <= nt) {                             \
                Chunk ch[GEMV_U][GEMV_R];                                               \
                _Pragma("unroll") for (int j = 0; j < GEMV_U; j++)                      \
                    { GEMV_BULK_LAND(ch[j], slot, row0, rows, j, lane) }                \
                __syncwarp();                                                           \
                GEMV_BULK_ISSUE(k, 1)                                                   \
                _Pragma("unroll") for (int j = 0; j < GEMV_U; j++)                      \
                    chunk_consume(acc, ch[j], x, 32 * (t + j) + lane);                  \
            } else {                                                                    \
                if (t + GEMV_U <= nt) {                                                 \
                    _Pragma("unroll") for (int j = 0; j < GEMV_U; j++)                  \
                        GEMV_BULK_CONSUME(acc, slot, row0, rows, x, t, j, lane);        \
                } else { /* the row's last copy, short */                               \
                    _Pragma("unroll 1") for (int j = 0; j < nt - t; j++)                \
                        GEMV_BULK_CONSUME(acc, slot, row0, rows, x, t, j, lane);        \
                }                                                                       \
                __syncwarp();                                                           \
                GEMV_BULK_ISSUE(k, 1)                                                   \
            }                                                                           \
            if (prow >= rows) gemv_pdl_release(); /* nothing left to issue */           \
        }                                                                               \
        GEMV_STORE_ROWS                                                                 \
        grp += gridDim.x;                                                               \
        row0 = grp < ngroups ? (grp * GEMV_W + warp) * GEMV_R : rows;                   \
    }                                                                                   \
    gemv_pdl_release(); /* a warp with no rows released nothing in the loop */          \
}
#elif GEMV_S == 2
// s=2: the same pipeline as the single-body form below, with the batch in
// the shared-memory ring instead of registers. Each slot refill is one
// cp.async group (empty when there is nothing to refill), so before slot k
// is read, waiting until at most GEMV_U - 1 groups are pending means its
// own has landed; a lane reads only what it copied itself, so no barrier.
// The slot is read (chunk_land) and consumed before its refill is issued,
// so the refill cannot overwrite it early. The K tail loads directly.
#define GEMV_ISSUE_SLOT(k, c)                                                           \
    _Pragma("unroll") for (int i = 0; i < GEMV_R; i++)                                  \
        chunk_issue(GEMV_SLOT16(k, i), GEMV_SLOT4(k, i), rp[i], (c), live[i]);
#define GEMV_DEFINE_KERNEL                                                              \
GEMV_PIPE_HEAD                                                                          \
    const u32 ring = gemv_smem_addr(gemv_xs) + gemv_stage_bytes(cols) + (u32)warp * GEMV_RING_WARP_BYTES; \
    float4 xpre[GEMV_XPRE_MAX];                                                         \
    gemv_stage_begin(x, cols, xpre);                                                    \
    if (batched) {                                                                      \
        _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                            \
            GEMV_ISSUE_SLOT(k, lane + 32 * k)                                           \
            gemv_cp_commit();                                                           \
        }                                                                               \
    }                                                                                   \
    gemv_stage_end(x, cols, xpre);                                                      \
    while (row0 < rows) {                                                               \
        GEMV_GROUP_HEAD                                                                 \
        int c = lane;                                                                   \
        bool more = batched;                                                            \
        _Pragma("unroll 1") while (more) {                                              \
            more = c + 32 * (2 * GEMV_U - 1) < nch;                                     \
            if (!more) { GEMV_ROWS_AT(next0) }                                          \
            const int nc = more ? c + 32 * GEMV_U : lane;                               \
            const bool refill = more || next0 < rows;                                   \
            _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                        \
                gemv_cp_wait<GEMV_U - 1>();                                             \
                Chunk t[GEMV_R];                                                        \
                _Pragma("unroll") for (int i = 0; i < GEMV_R; i++)                      \
                    chunk_land(t[i], GEMV_SLOT16(k, i), GEMV_SLOT4(k, i), c + 32 * k);  \
                chunk_consume(acc, t, x, c + 32 * k);                                   \
                if (refill) { GEMV_ISSUE_SLOT(k, nc + 32 * k) }                         \
                gemv_cp_commit();                                                       \
            }                                                                           \
            c += 32 * GEMV_U;                                                           \
        }                                                                               \
        GEMV_K_TAIL                                                                     \
        GEMV_STORE_ROWS                                                                 \
        if (!batched) { GEMV_ROWS_AT(next0) }                                           \
        row0 = next0;                                                                   \
    }                                                                                   \
    gemv_cp_wait<0>();                                                                  \
    gemv_pdl_release();                                                                 \
}
#else
#define GEMV_DEFINE_KERNEL                                                              \
GEMV_PIPE_HEAD                                                                          \
    float4 xpre[GEMV_XPRE_MAX];                                                         \
    gemv_stage_begin(x, cols, xpre);                                                    \
    Chunk ch[GEMV_U][GEMV_R];                                                           \
    if (batched) {                                                                      \
        _Pragma("unroll") for (int k = 0; k < GEMV_U; k++)                              \
            GEMV_LOAD_SLOT(ch[k], rp, live, lane + 32 * k)                              \
    }                                                                                   \
    if (GEMV_S && batched) {                                                            \
        _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                            \
            const int cc = lane + 32 * (GEMV_U + k);                                    \
            _Pragma("unroll") for (int i = 0; i < GEMV_R; i++)                          \
                if (cc < nch && live[i]) chunk_prefetch(rp[i], cc);                     \
        }                                                                               \
    }                                                                                   \
    gemv_stage_end(x, cols, xpre);                                                      \
    while (row0 < rows) {                                                               \
        GEMV_GROUP_HEAD                                                                 \
        int c = lane;                                                                   \
        if (GEMV_PEEL) {                                                                \
            if (batched) {                                                              \
                _Pragma("unroll 1") while (c + 32 * (2 * GEMV_U - 1) < nch) {           \
                    _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                \
                        chunk_consume(acc, ch[k], x, c + 32 * k);                       \
                        GEMV_LOAD_SLOT(ch[k], rp, live, c + 32 * (GEMV_U + k))          \
                    }                                                                   \
                    c += 32 * GEMV_U;                                                   \
                }                                                                       \
                bool nlive[GEMV_R];                                                     \
                RowPtr nrp[GEMV_R];                                                     \
                _Pragma("unroll") for (int i = 0; i < GEMV_R; i++) {                    \
                    nlive[i] = next0 + i < rows;                                        \
                    nrp[i] = row_ptr(W, g, (size_t)(nlive[i] ? next0 + i : 0));         \
                }                                                                       \
                _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                    \
                    chunk_consume(acc, ch[k], x, c + 32 * k);                           \
                    if (next0 < rows) { GEMV_LOAD_SLOT(ch[k], nrp, nlive, lane + 32 * k) } \
                }                                                                       \
                c += 32 * GEMV_U;                                                       \
            }                                                                           \
            _Pragma("unroll 1") for (; c < nch; c += 32) {                              \
                Chunk t[GEMV_R];                                                        \
                GEMV_LOAD_SLOT(t, rp, live, c)                                          \
                chunk_consume(acc, t, x, c);                                            \
            }                                                                           \
        } else {                                                                        \
            bool more = batched;                                                        \
            _Pragma("unroll 1") while (more) {                                          \
                more = c + 32 * (2 * GEMV_U - 1) < nch;                                 \
                if (!more) { GEMV_ROWS_AT(next0) }                                      \
                const int nc = more ? c + 32 * GEMV_U : lane;                           \
                const bool refill = more || next0 < rows;                               \
                _Pragma("unroll") for (int k = 0; k < GEMV_U; k++) {                    \
                    chunk_consume(acc, ch[k], x, c + 32 * k);                           \
                    if (refill) { GEMV_LOAD_SLOT(ch[k], rp, live, nc + 32 * k) }        \
                }                                                                       \
                c += 32 * GEMV_U;                                                       \
            }                                                                           \
            GEMV_K_TAIL                                                                 \
        }                                                                               \
        GEMV_STORE_ROWS                                                                 \
        if (GEMV_PEEL || !batched) { GEMV_ROWS_AT(next0) }                              \
        row0 = next0;                                                                   \
    }                                                                                   \
    gemv_pdl_release();                                                                 \
}
#endif
