// Host shim for a family's kernel file (variants/kernels/<format>.cu): the
// prelude's loads, x access, int8 helpers and device intrinsics, written
// for one thread on the CPU, so TestFamiliesOnHost can run the family's
// chunk_load and chunk_consume (staging s=0, one row per warp) over a whole
// row lane by lane, as the GPU's warp would, and sum the lanes in the
// kernel's butterfly order. The shared-memory rings (s=2, s=3) and PTX are
// not emulated: a family file is compiled here with GEMV_S=0.
#include <math.h>
#include <stdint.h>
#include <string.h>

#define __device__
#define __forceinline__ inline
#define __restrict__
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

struct uint4 { u32 x, y, z, w; };
struct float4 { float x, y, z, w; };
static inline uint4 make_uint4(u32 a, u32 b, u32 c, u32 d) { uint4 v = {a, b, c, d}; return v; }
static inline float4 make_float4(float a, float b, float c, float d) { float4 v = {a, b, c, d}; return v; }
static struct { unsigned x; } threadIdx;

static inline float __uint_as_float(u32 u) { float f; memcpy(&f, &u, 4); return f; }
static inline u32 __float_as_uint(float f) { u32 u; memcpy(&u, &f, 4); return u; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __uint2float_rn(u32 u) { return (float)u; }
static inline float __int2float_rn(int i) { return (float)i; }
static inline u32 __funnelshift_r(u32 lo, u32 hi, u32 sh) { return (u32)((((u64)hi << 32) | lo) >> (sh & 31)); }
// CUDA's __byte_perm: byte i of the result is byte (s >> 4i) & 7 of {y, x}.
static inline u32 __byte_perm(u32 x, u32 y, u32 s) {
    u64 v = ((u64)y << 32) | x;
    u32 r = 0;
    for (int i = 0; i < 4; i++) r |= (u32)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i);
    return r;
}

#define GEMV_MAGIC 8388608.0f
// f16 bits to f32, exactly (subnormals, Inf, NaN).
static inline float gemv_h2f(u32 h) {
    u32 s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
static inline float gemv_bytef(u32 v, int k) { return __uint_as_float(__byte_perm(v, 0x4B000000u, 0x7440u + (u32)k)); }

static inline u32 gemv_ld32(const unsigned char* p) { u32 v; memcpy(&v, p, 4); return v; }
static inline u32 gemv_ld16(const unsigned char* p) { u16 v; memcpy(&v, p, 2); return v; }
static inline uint4 gemv_ld128(const unsigned char* p) { uint4 v; memcpy(&v, p, 16); return v; }
struct GemvGlobal {
    static inline uint4 v4(const unsigned char* p) { return gemv_ld128(p); }
    static inline u32 w32(const unsigned char* p) { return gemv_ld32(p); }
    static inline u32 h16(const unsigned char* p) { return gemv_ld16(p); }
};
typedef GemvGlobal GemvShared;
static inline void gemv_pf(const void*) {}

#define GEMV_X4_PER_CHUNK (GEMV_CHUNK / 4)
static inline float4 gemv_x4(const float* x, int c, int j) {
    float4 v;
    memcpy(&v, x + 4 * (c * GEMV_X4_PER_CHUNK + j), 16);
    return v;
}

static inline int gemv_dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; i++) c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
    return c;
}

// Int8 x (a=1) per group of 32, as the prelude's gemv_xq_put makes it:
// d = amax·(1/127), id = 1/d, q = rne(x·id) saturated, s = Σ q; the
// groups' q bytes in order (GEMV_XQ_EVENODD: even values first).
static uint4* hostemu_xq; // 3 uint4 per group: q[0..15], q[16..31], {d, s}
static void hostemu_stage_xq(const float* x, int cols) {
    int groups = cols / 32;
    hostemu_xq = new uint4[3 * groups];
    for (int g = 0; g < groups; g++) {
        float a = 0;
        for (int i = 0; i < 32; i++) a = fmaxf(a, fabsf(x[32 * g + i]));
        float d = a * (1.0f / 127.0f), id = d != 0 ? 1.0f / d : 0;
        int8_t q[32];
        int s = 0;
        for (int i = 0; i < 32; i++) {
            float v = nearbyintf(x[32 * g + i] * id);
            q[i] = (int8_t)fmaxf(-128, fminf(127, v));
            s += q[i];
        }
        unsigned char b[32];
        for (int i = 0; i < 32; i++) b[i] = (unsigned char)(GEMV_XQ_EVENODD ? q[(i < 16) ? 2 * i : 2 * (i - 16) + 1] : q[i]);
        memcpy(&hostemu_xq[3 * g], b, 16);
        memcpy(&hostemu_xq[3 * g + 1], b + 16, 16);
        hostemu_xq[3 * g + 2] = make_uint4(__float_as_uint(d), (u32)s, 0, 0);
    }
}
static inline void gemv_xq_load(int g, uint4& lo, uint4& hi, uint4& meta) {
    lo = hostemu_xq[3 * g];
    hi = hostemu_xq[3 * g + 1];
    meta = hostemu_xq[3 * g + 2];
}

#define GEMV_DEFINE_KERNEL
