/*
 * gemvtune.h: the C ABI of gemvtune's policy (libgemvtune).
 *
 * An engine opens the policy once at start-up (it reads the GEMV_*
 * environment and the tuning cache then), looks up one kernel choice per
 * (arch, format, shape), repacks its weights at load when the choice's
 * layout is not 0, and launches the choice's cubin (or compiles its source
 * with NVRTC when no cubin is stored) with the choice's geometry. The
 * rollback is GEMV_FORCE_VARIANT=v1 in the environment: no rebuild.
 * docs/engines.md is the guide; this header is the reference.
 *
 * Every kernel has one signature:
 *   extern "C" __global__ void gemv(const unsigned char* W, const float* x,
 *                                   float* y, int rows, int cols);
 * W in the choice's layout, x [cols] f32, y [rows] f32.
 *
 * Errors: every function that can fail returns a gemvtune_status. With a
 * non-NULL errbuf of errlen > 0 bytes it also writes a one-line message
 * there, NUL-terminated and truncated to fit. Nothing here aborts, exits
 * or lets a Go panic cross into C.
 *
 * Ownership: a policy handle owns every pointer it returns (strings, the
 * cubin, sources); they stay valid until gemvtune_close. The caller owns
 * the buffers it passes in. Every call is safe from several threads at
 * once after gemvtune_open returns, except gemvtune_close, which must be
 * the last call on its handle.
 */
#ifndef GEMVTUNE_H
#define GEMVTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI's version: a new major version may change or remove what an
 * older one had; a new minor version only adds. gemvtune_abi_version()
 * returns the library's GEMVTUNE_ABI_VERSION. */
#define GEMVTUNE_ABI_MAJOR 1
#define GEMVTUNE_ABI_MINOR 1
#define GEMVTUNE_ABI_VERSION (GEMVTUNE_ABI_MAJOR * 1000 + GEMVTUNE_ABI_MINOR)

/* Return codes. */
typedef enum gemvtune_status {
    GEMVTUNE_OK = 0,
    GEMVTUNE_ERR_ARGUMENT = 1,      /* a NULL pointer, a struct of the wrong size, a negative count */
    GEMVTUNE_ERR_ENV = 2,           /* a GEMV_* variable has a value the policy does not accept */
    GEMVTUNE_ERR_CACHE = 3,         /* the cache is missing or unreadable (without GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR) */
    GEMVTUNE_ERR_FORMAT = 4,        /* an unknown format name */
    GEMVTUNE_ERR_SHAPE = 5,         /* a shape the format or variant cannot hold */
    GEMVTUNE_ERR_ARCH = 6,          /* not an arch such as "sm_90" */
    GEMVTUNE_ERR_VARIANT = 7,       /* not "v1" or a variant ID such as "r2f3u1s0w8" */
    GEMVTUNE_ERR_BUFFER = 8,        /* a buffer of the wrong length or too small */
    GEMVTUNE_ERR_INTERNAL = 9       /* a defect in gemvtune: please report the message */
} gemvtune_status;

/* gemvtune_open flags. */
#define GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR 1u /* a missing or unreadable cache gives stock everywhere, not an error */

/* An open policy (opaque). */
typedef struct gemvtune_policy gemvtune_policy;

/* A variant's knobs (docs/design.md, "Knobs and variant IDs"). */
typedef struct gemvtune_params {
    int32_t r, f, u, s, w, g, l, a;
} gemvtune_params;

/* What an engine runs for one (arch, format, shape). Set size to
 * sizeof(gemvtune_choice) before the call. */
typedef struct gemvtune_choice {
    uint32_t size;
    const char* id;          /* canonical variant ID, or "v1" for stock */
    const char* source;      /* tuned, nearest, other-model, forced, forced-gate-failed, default, stale, untuned-arch, no-cache, corrupt-cache, busy-cache, disabled */
    const char* reason;      /* one sentence: why this choice */
    const char* class_name;  /* "exact" (bit-identical to stock) or "tolerance" */
    gemvtune_params params;
    int32_t layout;          /* weight layout (knob l): 0 raw bytes, else repack once at load (gemvtune_repack) */
    const char* layout_name; /* the layout in words, e.g. "interleaved warp tiles (variants.RepackInterleaved)" */
    const uint8_t* cubin;    /* the stored cubin for this arch, or NULL: compile gemvtune_source's code */
    size_t cubin_len;
    const char* entry;       /* the kernel's name in the cubin: "gemv" */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t shared_bytes;       /* dynamic shared memory of the launch */
    int32_t needs_shared_optin;  /* 1: raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to shared_bytes first */
    int32_t pdl_supported;       /* 1: may be launched with programmatic stream serialization (sm_90+) */
    int32_t pdl_pays;            /* 1: the tuner recorded this winner, at exactly this shape, in PDL launch mode:
                                    launch it with PDL and pdl_shared_bytes (abi 1.1; a whole token: bench --chain) */
    double error_bound;          /* relative L2 error vs the float64 reference it was verified within */
    int32_t has_evidence;        /* 1: the figures below are a tuned measurement (tuned or nearest) */
    double median_us;            /* winner's median µs per launch at the tuned shape */
    double gbs;                  /* effective GB/s */
    double pct_ceiling;          /* % of the measured read ceiling */
    double speedup;              /* over stock */
    double p_value;              /* Mann-Whitney U vs stock */
    double pdl_us;               /* µs per launch in a PDL chain, 0 if not measured */
    const char* gpu_name;        /* GPU it was measured on, "" without evidence */
    const char* tuned_shape;     /* e.g. "4096x14336", "" without evidence */
    int64_t tuned_unix;          /* when, seconds since 1970, 0 without evidence */
    /* abi 1.1: a struct of 1.0's size is filled up to tuned_unix. */
    uint32_t pdl_shared_bytes;      /* dynamic shared memory of a PDL launch: shared_bytes, or more where that keeps
                                       an SM from taking more than the grid's even share of blocks */
    int32_t pdl_needs_shared_optin; /* 1: raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to pdl_shared_bytes */
} gemvtune_choice;

/* sizeof(gemvtune_choice) in abi 1.0, the smallest size the library fills. */
#define GEMVTUNE_CHOICE_SIZE_1_0 offsetof(gemvtune_choice, pdl_shared_bytes)

/* A variant's complete CUDA source and how to compile it. Set size to
 * sizeof(gemvtune_kernel_source) before the call. */
typedef struct gemvtune_kernel_source {
    uint32_t size;
    const char* code;            /* the source; it includes nothing */
    const char* name;            /* a file name for nvrtcCreateProgram */
    const char* entry;           /* "gemv" */
    const char* const* options;  /* NVRTC options, e.g. "--gpu-architecture=sm_90" */
    size_t num_options;
} gemvtune_kernel_source;

/* The library's version string, e.g. "gemvtune 0.9.0 (abi 1.0)"; static. */
const char* gemvtune_version(void);

/* GEMVTUNE_ABI_VERSION of the library: compare with the header's. */
int32_t gemvtune_abi_version(void);

/* Reads the GEMV_* environment (as the process has it now) and the cache
 * once, exactly as the Go gemvtune.Open. cache_path NULL or "" means
 * $GEMV_TUNE_CACHE, else the default path. On success *out is a new
 * handle; on failure *out is NULL. */
gemvtune_status gemvtune_open(const char* cache_path, uint32_t flags, gemvtune_policy** out,
                              char* errbuf, size_t errlen);

/* Frees the handle and everything it returned. NULL is a no-op. */
void gemvtune_close(gemvtune_policy* h);

/* The cache file the handle read (or would have read), "" when disabled. */
const char* gemvtune_cache_path(gemvtune_policy* h);

/* Why the cache was unusable or which entries were skipped, or NULL. */
const char* gemvtune_cache_error(gemvtune_policy* h);

/* What gemvtune_open noticed in the environment and ignored, one line
 * each (a GEMV_* name it does not read, with the one it may have meant; an
 * invalid value under GEMV_TUNE_DISABLE=1): the count, and warning i
 * (NULL past the last). An engine should log them. */
size_t gemvtune_warning_count(gemvtune_policy* h);
const char* gemvtune_warning(gemvtune_policy* h, size_t i);

/* The choice for format on arch ("sm_90") at rows x cols for the GPU
 * named gpu_name (as cuDeviceGetName or NVML names it, "NVIDIA H200"; NULL
 * or "" if unknown), environment applied: records of that GPU model first,
 * then another model's of the same arch (source "other-model"). On an
 * error *out still holds the stock choice saying why. */
gemvtune_status gemvtune_lookup(gemvtune_policy* h, const char* arch, const char* gpu_name, const char* format,
                                int64_t rows, int64_t cols, gemvtune_choice* out,
                                char* errbuf, size_t errlen);

/* The source of variant id ("v1" or an ID; a choice's id) of format for
 * arch, the code its stored cubin was compiled from. */
gemvtune_status gemvtune_source(gemvtune_policy* h, const char* arch, const char* format, const char* id,
                                gemvtune_kernel_source* out, char* errbuf, size_t errlen);

/* The launch of variant id ("v1" or an ID) of format at rows x cols, for
 * an engine that runs a variant it did not get from gemvtune_lookup (a
 * choice carries its own): grid[3], block[3] and the dynamic shared
 * memory; above 48 KiB the function's limit must be raised first. */
gemvtune_status gemvtune_launch(const char* format, const char* id, int64_t rows, int64_t cols, uint32_t* grid,
                                uint32_t* block, uint32_t* shared_bytes, char* errbuf, size_t errlen);

/* The bytes of a rows x cols tensor of format, the same in every layout. */
gemvtune_status gemvtune_repack_size(const char* format, int32_t layout, int64_t rows, int64_t cols,
                                     size_t* size, char* errbuf, size_t errlen);

/* Repacks raw ecosystem bytes (GGUF, MLX) of a rows x cols tensor into
 * layout, writing gemvtune_repack_size bytes to out. raw_len must be
 * exactly that size; out_len at least. raw and out must not overlap. */
gemvtune_status gemvtune_repack(const char* format, int32_t layout, const void* raw, size_t raw_len,
                                int64_t rows, int64_t cols, void* out, size_t out_len,
                                char* errbuf, size_t errlen);

/* y = W x in float64 from raw bytes (layout 0), the reference every
 * variant is verified against: for an engine's own checks. x has cols
 * floats, y room for y_len >= rows doubles. */
gemvtune_status gemvtune_reference(const char* format, const void* raw, size_t raw_len, const float* x,
                                   int64_t rows, int64_t cols, double* y, size_t y_len,
                                   char* errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* GEMVTUNE_H */
