/*
 * engine: a small C engine that runs gemvtune's choices on the GPU through
 * libgemvtune and the CUDA driver API, as a C/C++ inference engine would.
 *
 * For the decode GEMVs of llama-3-8b in each format it opens the policy,
 * looks up every (format, shape), makes GGUF-layout weights, repacks them
 * through the ABI, loads the stored cubin (or compiles the source with
 * NVRTC when none is stored), launches with the choice's geometry and
 * checks every output against the float64 reference (within the class's
 * bound; exact-class choices bit for bit against stock). Then it times one
 * token's GEMV chain: every layer's qkv, o, gate_up and down in order, 32
 * layers, then the lm head, each kernel reading the x the kernel before it
 * wrote, captured in a CUDA graph; once with plain launches and once with
 * PDL edges where the choice says PDL pays.
 *
 *   engine [--formats q4_0,q4_K,q8_0,bf16] [--layers N] [--rounds N]
 *
 * Rollback without a rebuild: GEMV_FORCE_VARIANT=v1 engine. The cache is
 * $GEMV_TUNE_CACHE (or the default path). Build: see Makefile.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <inttypes.h>
#include <math.h>
#include <nvrtc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemvtune.h"

#define CU(call)                                                                     \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != CUDA_SUCCESS) {                                                    \
            const char* s_ = NULL;                                                   \
            cuGetErrorString(r_, &s_);                                               \
            fprintf(stderr, "engine: %s: %s (%d)\n", #call, s_ ? s_ : "?", (int)r_); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static void die(const char* what, const char* msg) {
    fprintf(stderr, "engine: %s: %s\n", what, msg);
    exit(1);
}

/* ---- the model ---- */

typedef struct shape {
    const char* name;
    int64_t rows, cols;
} shape;

/* llama-3-8b: hidden 4096, 32 heads of 128, 8 KV heads, FFN 14336, vocab 128256. */
static const shape checked[] = {
    {"q", 4096, 4096},     {"k/v", 1024, 4096},  {"qkv", 6144, 4096},     {"o", 4096, 4096},
    {"gate/up", 14336, 4096}, {"gate_up", 28672, 4096}, {"down", 4096, 14336}, {"lm_head", 128256, 4096},
};
enum { NCHECKED = sizeof checked / sizeof checked[0] };
/* One layer's GEMVs in decode order (fused qkv and gate_up), then the lm head. */
static const int layer_order[] = {2, 3, 5, 6};
static const int lm_head = 7;

/* ---- random GGUF-layout weights ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) {
    uint64_t x = rng_state;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}
static float uniform(void) { return (float)((next_u64() >> 40) * (1.0 / 16777216.0)); } /* [0, 1) */

/* f32 to IEEE half, rounding to nearest even, subnormal halves included
 * (q4_K's small dmin scales are subnormal); values past the largest finite
 * half give it. */
static uint16_t f16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, man = x & 0x7fffff;
    int e = (int)((x >> 23) & 0xff) - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7bff);
    if (e < -10) return (uint16_t)sign;
    /* the kept bits, and how many low bits round away: 13 for a normal half, more for a subnormal one */
    uint32_t full = e > 0 ? man : (man | 0x800000);
    int shift = e > 0 ? 13 : 14 - e;
    uint32_t kept = e > 0 ? ((uint32_t)e << 10) | (man >> 13) : full >> shift;
    uint32_t rest = full & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1))) kept++;
    return (uint16_t)(sign | kept);
}
static uint16_t bf16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
static void put16(uint8_t* p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

static void fill_random(uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = next_u64();
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++) p[i] = (uint8_t)next_u64();
}

/* The formats make_weights fills, and the message that names them. */
static const char* const made_formats[] = {"q4_0", "q8_0", "q4_K", "bf16"};
#define MADE_FORMATS "this engine makes weights for q4_0, q8_0, q4_K and bf16"

/* Stops, naming the first format of the comma-separated list that the
 * engine cannot make weights for, before any work is done. */
static void check_formats(const char* list) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list);
    for (char* f = strtok(copy, ","); f; f = strtok(NULL, ",")) {
        int known = 0;
        for (size_t i = 0; i < sizeof made_formats / sizeof made_formats[0]; i++) known |= strcmp(f, made_formats[i]) == 0;
        if (!known) die(f, MADE_FORMATS);
    }
}

/* Fills n bytes of format with valid blocks whose rows have about unit
 * norm, so that the chain's activations stay finite. */
static void make_weights(const char* format, uint8_t* w, size_t n, int64_t cols) {
    float unit = 1.0f / sqrtf((float)cols);
    if (strcmp(format, "bf16") == 0) {
        for (size_t i = 0; i + 2 <= n; i += 2) put16(w + i, bf16_bits((2.0f * uniform() - 1.0f) * 1.7f * unit));
        return;
    }
    fill_random(w, n);
    if (strcmp(format, "q4_0") == 0) { /* f16 d, 16 bytes of nibbles; (q-8)*d */
        for (size_t b = 0; b + 18 <= n; b += 18) put16(w + b, f16_bits(unit / 4.6f * (0.5f + uniform())));
    } else if (strcmp(format, "q8_0") == 0) { /* f16 d, 32 int8 */
        for (size_t b = 0; b + 34 <= n; b += 34) put16(w + b, f16_bits(unit / 73.0f * (0.5f + uniform())));
    } else if (strcmp(format, "q4_K") == 0) { /* f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 of nibbles */
        for (size_t b = 0; b + 144 <= n; b += 144) {
            put16(w + b, f16_bits(unit / 225.0f * (0.5f + uniform())));
            put16(w + b + 2, f16_bits(unit / 450.0f * (0.5f + uniform())));
        }
    } else {
        die(format, MADE_FORMATS);
    }
}

/* ---- kernels ---- */

static CUmodule compile_and_load(const char* code, const char* name, const char* const* opts, size_t nopts) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, code, name, 0, NULL, NULL) != NVRTC_SUCCESS) die(name, "nvrtcCreateProgram failed");
    nvrtcResult r = nvrtcCompileProgram(prog, (int)nopts, opts);
    if (r != NVRTC_SUCCESS) {
        size_t n;
        nvrtcGetProgramLogSize(prog, &n);
        char* log = malloc(n + 1);
        nvrtcGetProgramLog(prog, log);
        fprintf(stderr, "%s\n", log);
        die(name, nvrtcGetErrorString(r));
    }
    size_t n;
    if (nvrtcGetCUBINSize(prog, &n) != NVRTC_SUCCESS || n == 0) die(name, "NVRTC made no cubin");
    char* cubin = malloc(n);
    nvrtcGetCUBIN(prog, cubin);
    nvrtcDestroyProgram(&prog);
    CUmodule m;
    CU(cuModuleLoadData(&m, cubin));
    free(cubin);
    return m;
}

/* A loaded kernel with its launch. */
typedef struct kernel {
    CUmodule mod;
    CUfunction fn;
    uint32_t grid[3], block[3], smem;
    uint32_t pdl_smem; /* dynamic shared memory of a PDL launch (abi 1.1) */
} kernel;

static int compiled_count, loaded_count;

/* Loads the choice's cubin, or compiles gemvtune_source's code for it. */
static kernel load_kernel(gemvtune_policy* pol, const char* arch, const char* format, const gemvtune_choice* c) {
    kernel k = {0};
    if (c->cubin != NULL) {
        CU(cuModuleLoadData(&k.mod, c->cubin));
        loaded_count++;
    } else {
        gemvtune_kernel_source s = {.size = sizeof s};
        char err[512];
        if (gemvtune_source(pol, arch, format, c->id, &s, err, sizeof err) != GEMVTUNE_OK) die("gemvtune_source", err);
        k.mod = compile_and_load(s.code, s.name, s.options, s.num_options);
        compiled_count++;
    }
    CU(cuModuleGetFunction(&k.fn, k.mod, c->entry));
    /* The limit covers both launches: pdl_shared_bytes >= shared_bytes. */
    if (c->needs_shared_optin || c->pdl_needs_shared_optin)
        CU(cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)c->pdl_shared_bytes));
    memcpy(k.grid, c->grid, sizeof k.grid);
    memcpy(k.block, c->block, sizeof k.block);
    k.smem = c->shared_bytes;
    k.pdl_smem = c->pdl_shared_bytes;
    return k;
}

static void launch(const kernel* k, CUstream st, int pdl, CUdeviceptr w, CUdeviceptr x, CUdeviceptr y, int rows, int cols) {
    void* args[] = {&w, &x, &y, &rows, &cols};
    if (!pdl) {
        CU(cuLaunchKernel(k->fn, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], k->smem, st,
                          args, NULL));
        return;
    }
    CUlaunchAttribute attr = {0};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg = {0};
    cfg.gridDimX = k->grid[0], cfg.gridDimY = k->grid[1], cfg.gridDimZ = k->grid[2];
    cfg.blockDimX = k->block[0], cfg.blockDimY = k->block[1], cfg.blockDimZ = k->block[2];
    cfg.sharedMemBytes = k->pdl_smem, cfg.hStream = st, cfg.attrs = &attr, cfg.numAttrs = 1;
    CU(cuLaunchKernelEx(&cfg, k->fn, args, NULL));
}

/* ---- the read ceiling ---- */

static const char* ceiling_src =
    "extern \"C\" __global__ void read_ceiling(const uint4* __restrict__ p, unsigned n, unsigned* out) {\n"
    "    unsigned acc = 0;\n"
    "    const unsigned stride = gridDim.x * blockDim.x;\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    for (; i + 7 * stride < n; i += 8 * stride) {\n"
    "        uint4 v[8];\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < 8; k++) v[k] = __ldg(p + i + k * stride);\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;\n"
    "    }\n"
    "    for (; i < n; i += stride) { uint4 a = __ldg(p + i); acc ^= a.x ^ a.y ^ a.z ^ a.w; }\n"
    "    if (acc == 0x9e3779b9u) out[0] = acc;\n"
    "}\n";

static int cmp_float(const void* a, const void* b) {
    float x = *(const float*)a, y = *(const float*)b;
    return (x > y) - (x < y);
}

/* The best median GB/s of a 1 GiB streaming read over a few launch shapes. */
static double read_ceiling(const char* arch, int sms) {
    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
    const char* opts[] = {opt};
    CUmodule m = compile_and_load(ceiling_src, "read_ceiling.cu", opts, 1);
    CUfunction fn;
    CU(cuModuleGetFunction(&fn, m, "read_ceiling"));
    const size_t bytes = (size_t)1 << 30;
    CUdeviceptr buf, out;
    CU(cuMemAlloc(&buf, bytes));
    CU(cuMemAlloc(&out, 4));
    CU(cuMemsetD8(buf, 0x5a, bytes));
    unsigned n = (unsigned)(bytes / 16);
    void* args[] = {&buf, &n, &out};
    CUevent e0, e1;
    CU(cuEventCreate(&e0, 0));
    CU(cuEventCreate(&e1, 0));
    for (int i = 0; i < 200; i++) CU(cuLaunchKernel(fn, sms * 2, 1, 1, 1024, 1, 1, 0, 0, args, NULL)); /* warm-up */
    static const int shapes[][2] = {{1, 1024}, {2, 1024}, {2, 512}, {4, 512}, {8, 256}, {16, 128}, {32, 256}};
    double best = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        float t[10];
        for (int rep = 0; rep < 12; rep++) {
            CU(cuEventRecord(e0, 0));
            CU(cuLaunchKernel(fn, sms * shapes[s][0], 1, 1, shapes[s][1], 1, 1, 0, 0, args, NULL));
            CU(cuEventRecord(e1, 0));
            CU(cuEventSynchronize(e1));
            if (rep >= 2) CU(cuEventElapsedTime(&t[rep - 2], e0, e1));
        }
        qsort(t, 10, sizeof t[0], cmp_float);
        double gbs = bytes / (t[5] * 1e-3) / 1e9;
        if (gbs > best) best = gbs;
    }
    CU(cuEventDestroy(e0));
    CU(cuEventDestroy(e1));
    CU(cuMemFree(buf));
    CU(cuMemFree(out));
    CU(cuModuleUnload(m));
    return best;
}

/* ---- one format ---- */

typedef struct matrix {
    gemvtune_choice c;
    kernel k;
    size_t bytes;
    CUdeviceptr packed; /* layer 0's weights in the choice's layout */
} matrix;

static double rel_l2(const float* y, const double* ref, int64_t n, int* nonfinite) {
    double num = 0, den = 0;
    *nonfinite = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) (*nonfinite)++;
        double d = (double)y[i] - ref[i];
        num += d * d, den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int failures;

/* Checks one GEMV of format: the choice's kernel on repacked weights
 * against the float64 reference, and an exact-class choice against stock
 * bit for bit. Leaves the repacked weights and the kernel in *m. */
static void check_matrix(gemvtune_policy* pol, const char* arch, const char* gpu, const char* format, const shape* sh,
                         matrix* m, kernel* stock) {
    char err[512];
    m->c = (gemvtune_choice){.size = sizeof m->c};
    if (gemvtune_lookup(pol, arch, gpu, format, sh->rows, sh->cols, &m->c, err, sizeof err) != GEMVTUNE_OK)
        die("gemvtune_lookup", err);
    if (gemvtune_repack_size(format, m->c.layout, sh->rows, sh->cols, &m->bytes, err, sizeof err) != GEMVTUNE_OK)
        die("gemvtune_repack_size", err);
    uint8_t* raw = malloc(m->bytes);
    uint8_t* packed = malloc(m->bytes);
    make_weights(format, raw, m->bytes, sh->cols);
    if (gemvtune_repack(format, m->c.layout, raw, m->bytes, sh->rows, sh->cols, packed, m->bytes, err, sizeof err) !=
        GEMVTUNE_OK)
        die("gemvtune_repack", err);
    m->k = load_kernel(pol, arch, format, &m->c);

    float* x = malloc(sizeof(float) * sh->cols);
    for (int64_t i = 0; i < sh->cols; i++) x[i] = 2.0f * uniform() - 1.0f;
    double* ref = malloc(sizeof(double) * sh->rows);
    if (gemvtune_reference(format, raw, m->bytes, x, sh->rows, sh->cols, ref, sh->rows, err, sizeof err) != GEMVTUNE_OK)
        die("gemvtune_reference", err);
    CUdeviceptr dw, dx, dy;
    CU(cuMemAlloc(&m->packed, m->bytes));
    CU(cuMemcpyHtoD(m->packed, packed, m->bytes));
    CU(cuMemAlloc(&dx, sizeof(float) * sh->cols));
    CU(cuMemAlloc(&dy, sizeof(float) * sh->rows));
    CU(cuMemcpyHtoD(dx, x, sizeof(float) * sh->cols));
    CU(cuMemsetD32(dy, 0x7fc00000u, sh->rows)); /* poison: NaN */
    launch(&m->k, 0, 0, m->packed, dx, dy, (int)sh->rows, (int)sh->cols);
    CU(cuCtxSynchronize());
    float* y = malloc(sizeof(float) * sh->rows);
    CU(cuMemcpyDtoH(y, dy, sizeof(float) * sh->rows));
    int nonfinite;
    double e = rel_l2(y, ref, sh->rows, &nonfinite);
    int ok = nonfinite == 0 && e <= m->c.error_bound;
    const char* exact = "";
    if (strcmp(m->c.class_name, "exact") == 0 && strcmp(m->c.id, "v1") != 0) {
        /* stock on the raw bytes, bit for bit */
        float* ys = malloc(sizeof(float) * sh->rows);
        CU(cuMemAlloc(&dw, m->bytes));
        CU(cuMemcpyHtoD(dw, raw, m->bytes));
        CU(cuMemsetD32(dy, 0x7fc00000u, sh->rows));
        if (gemvtune_launch(format, "v1", sh->rows, sh->cols, stock->grid, stock->block, &stock->smem, err,
                            sizeof err) != GEMVTUNE_OK)
            die("gemvtune_launch", err);
        launch(stock, 0, 0, dw, dx, dy, (int)sh->rows, (int)sh->cols);
        CU(cuCtxSynchronize());
        CU(cuMemcpyDtoH(ys, dy, sizeof(float) * sh->rows));
        int same = memcmp(ys, y, sizeof(float) * sh->rows) == 0;
        exact = same ? ", bit-identical to stock" : ", DIFFERS from stock";
        ok = ok && same;
        CU(cuMemFree(dw));
        free(ys);
    }
    printf("  %-8s %-7s %6" PRId64 "x%-6" PRId64 " %-20s %-9s %-18s l=%d %s grid %u block %u smem %u%s  rel err %.2e (bound %.0e)%s  %s\n",
           format, sh->name, sh->rows, sh->cols, m->c.id, m->c.class_name, m->c.source, m->c.layout,
           m->c.cubin ? "cubin" : "nvrtc", m->c.grid[0], m->c.block[0], m->c.shared_bytes,
           m->c.pdl_pays ? " pdl-pays" : "", e, m->c.error_bound, exact, ok ? "ok" : "FAIL");
    if (!ok) failures++;
    CU(cuMemFree(dx));
    CU(cuMemFree(dy));
    free(raw), free(packed), free(x), free(ref), free(y);
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Times one token's chain of GEMVs (layers × qkv, o, gate_up, down, then
 * the lm head) in a CUDA graph; pdl: PDL edges where the choice says it
 * pays. Returns the median µs per token and the spread in lo, hi. */
static double time_chain(matrix* ms, CUdeviceptr* layers, int nlayers, int pdl, int rounds, double* lo, double* hi) {
    CUstream st;
    CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    size_t maxrows = 0;
    for (int i = 0; i < NCHECKED; i++) maxrows = checked[i].rows > (int64_t)maxrows ? (size_t)checked[i].rows : maxrows;
    CUdeviceptr act[2];
    for (int i = 0; i < 2; i++) {
        CU(cuMemAlloc(&act[i], sizeof(float) * maxrows));
        float* h = malloc(sizeof(float) * maxrows);
        for (size_t j = 0; j < maxrows; j++) h[j] = 2.0f * uniform() - 1.0f;
        CU(cuMemcpyHtoD(act[i], h, sizeof(float) * maxrows));
        free(h);
    }
    CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    int cur = 0, n = 0;
    for (int l = 0; l < nlayers; l++)
        for (int j = 0; j < 4; j++) {
            int s = layer_order[j];
            matrix* m = &ms[s];
            launch(&m->k, st, pdl && m->c.pdl_pays && n > 0, layers[l * 4 + j], act[cur], act[cur ^ 1],
                   (int)checked[s].rows, (int)checked[s].cols);
            cur ^= 1, n++;
        }
    matrix* m = &ms[lm_head];
    launch(&m->k, st, pdl && m->c.pdl_pays, m->packed, act[cur], act[cur ^ 1], (int)checked[lm_head].rows,
           (int)checked[lm_head].cols);
    CUgraph g;
    CUgraphExec ge;
    CU(cuStreamEndCapture(st, &g));
    CU(cuGraphInstantiate(&ge, g, 0));
    CUevent e0, e1;
    CU(cuEventCreate(&e0, 0));
    CU(cuEventCreate(&e1, 0));
    for (int i = 0; i < 5; i++) CU(cuGraphLaunch(ge, st)); /* warm-up */
    enum { PER_ROUND = 10 };
    double* t = malloc(sizeof(double) * rounds);
    for (int r = 0; r < rounds; r++) {
        CU(cuEventRecord(e0, st));
        for (int i = 0; i < PER_ROUND; i++) CU(cuGraphLaunch(ge, st));
        CU(cuEventRecord(e1, st));
        CU(cuEventSynchronize(e1));
        float ms_;
        CU(cuEventElapsedTime(&ms_, e0, e1));
        t[r] = ms_ * 1e3 / PER_ROUND;
    }
    qsort(t, rounds, sizeof t[0], cmp_double);
    double med = t[rounds / 2];
    *lo = t[0], *hi = t[rounds - 1];
    free(t);
    CU(cuEventDestroy(e0));
    CU(cuEventDestroy(e1));
    CU(cuGraphExecDestroy(ge));
    CU(cuGraphDestroy(g));
    CU(cuMemFree(act[0]));
    CU(cuMemFree(act[1]));
    CU(cuStreamDestroy(st));
    return med;
}

int main(int argc, char** argv) {
    const char* formats = "q4_0,q4_K,q8_0,bf16";
    int nlayers = 32, rounds = 15;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--formats") == 0 && i + 1 < argc) formats = argv[++i];
        else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc) nlayers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: engine [--formats q4_0,q4_K,q8_0,bf16] [--layers N] [--rounds N]\n");
            return 2;
        }
    }
    if (nlayers < 1 || rounds < 3) die("arguments", "--layers must be at least 1 and --rounds at least 3");
    check_formats(formats);
    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    int major, minor, sms;
    CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    char arch[16], name[256];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    CU(cuDeviceGetName(name, sizeof name, dev));

    char err[1024];
    gemvtune_policy* pol;
    if (gemvtune_open(NULL, GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR, &pol, err, sizeof err) != GEMVTUNE_OK)
        die("gemvtune_open", err);
    const char* ce = gemvtune_cache_error(pol);
    const char* force = getenv("GEMV_FORCE_VARIANT");
    printf("%s, %s, %d SMs; %s; cache %s%s%s; GEMV_FORCE_VARIANT=%s\n", name, arch, sms, gemvtune_version(),
           gemvtune_cache_path(pol), ce ? ": " : "", ce ? ce : "", force ? force : "(unset)");
    double ceiling = read_ceiling(arch, sms);
    printf("read ceiling %.0f GB/s (1 GiB streaming read, best median of 7 launch shapes)\n", ceiling);

    char list[256];
    snprintf(list, sizeof list, "%s", formats);
    printf("\n%-6s %-26s %12s %16s %12s %14s %8s %10s\n", "format", "chain", "us/token", "(min-max)", "MB/token",
           "bytes/ceiling", "% ceil", "tok/s");
    char table[8192] = "";
    for (char* format = strtok(list, ","); format; format = strtok(NULL, ",")) {
        printf("checks of %s:\n", format);
        matrix ms[NCHECKED];
        memset(ms, 0, sizeof ms);
        /* stock, compiled from its source: the bit-for-bit yardstick of exact choices */
        gemvtune_kernel_source s = {.size = sizeof s};
        if (gemvtune_source(pol, arch, format, "v1", &s, err, sizeof err) != GEMVTUNE_OK) die("gemvtune_source", err);
        kernel stock = {0};
        stock.mod = compile_and_load(s.code, s.name, s.options, s.num_options);
        CU(cuModuleGetFunction(&stock.fn, stock.mod, s.entry));
        for (int i = 0; i < NCHECKED; i++) check_matrix(pol, arch, name, format, &checked[i], &ms[i], &stock);
        CU(cuModuleUnload(stock.mod));
        /* every layer's weights in their own memory (copies of layer 0's) */
        CUdeviceptr* layers = malloc(sizeof(CUdeviceptr) * nlayers * 4);
        double bytes = (double)ms[lm_head].bytes;
        for (int l = 0; l < nlayers; l++)
            for (int j = 0; j < 4; j++) {
                matrix* m = &ms[layer_order[j]];
                if (l == 0) {
                    layers[j] = m->packed;
                } else {
                    CU(cuMemAlloc(&layers[l * 4 + j], m->bytes));
                    CU(cuMemcpyDtoD(layers[l * 4 + j], m->packed, m->bytes));
                }
                bytes += (double)m->bytes;
            }
        double at_ceiling = bytes / (ceiling * 1e9) * 1e6;
        int any_pdl = 0;
        for (int j = 0; j < NCHECKED; j++) any_pdl |= ms[j].c.pdl_pays;
        for (int pdl = 0; pdl <= any_pdl; pdl++) {
            double lo, hi;
            double us = time_chain(ms, layers, nlayers, pdl, rounds, &lo, &hi);
            char line[256];
            snprintf(line, sizeof line, "%-6s %-26s %12.1f %7.1f-%-8.1f %12.1f %14.1f %8.1f %10.1f\n", format,
                     force && strcmp(force, "v1") == 0 ? "stock (GEMV_FORCE_VARIANT=v1)"
                     : pdl                             ? "tuned, PDL where it pays"
                                                       : "tuned, plain launches",
                     us, lo, hi, bytes / 1e6, at_ceiling, 100.0 * at_ceiling / us, 1e6 / us);
            strncat(table, line, sizeof table - strlen(table) - 1);
            fputs(line, stdout);
        }
        for (int l = 1; l < nlayers; l++)
            for (int j = 0; j < 4; j++) CU(cuMemFree(layers[l * 4 + j]));
        free(layers);
        for (int i = 0; i < NCHECKED; i++) {
            CU(cuMemFree(ms[i].packed));
            CU(cuModuleUnload(ms[i].k.mod));
        }
    }
    printf("\nkernels: %d from stored cubins, %d compiled with NVRTC; %d check(s) failed\n", loaded_count,
           compiled_count, failures);
    printf("\n%-6s %-26s %12s %16s %12s %14s %8s %10s\n%s", "format", "chain (llama-3-8b, 1 token)", "us/token",
           "(min-max)", "MB/token", "bytes/ceiling", "% ceil", "tok/s", table);
    gemvtune_close(pol);
    CU(cuDevicePrimaryCtxRelease(dev));
    return failures ? 1 : 0;
}
