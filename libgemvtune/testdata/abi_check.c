/*
 * abi_check: asks libgemvtune what the Go tests ask the Go policy, and
 * prints the answers in the canonical form of abi_test.go (one line per
 * answer, floats as their IEEE bits, the cubin in hex), so that the test
 * can compare them byte for byte.
 *
 *   abi_check lookup CACHE|- FLAGS QUERIES   one line per query of "arch gpu format rows cols" (gpu "-": NULL)
 *   abi_check threads CACHE|- FLAGS QUERIES  the same lookups from 8 threads, checked against each other
 *   abi_check source ARCH FORMAT ID          the source's name, entry, options and code
 *   abi_check launch FORMAT ID ROWS COLS     the launch, or the error
 *   abi_check repack FORMAT LAYOUT ROWS COLS IN OUT
 *   abi_check reference FORMAT ROWS COLS RAW X OUT  y = W x (float64) of RAW's bytes and X's float32s
 *   abi_check hostile                        NULLs, bad names and sizes: each must be an error
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemvtune.h"

static void hexbytes(FILE* f, const uint8_t* p, size_t n) {
    if (p == NULL) {
        fputs("-", f);
        return;
    }
    for (size_t i = 0; i < n; i++) fprintf(f, "%02x", p[i]);
}

static uint64_t bits(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* One answer in the canonical form (abi_test.go's canonical). */
static void print_choice(FILE* f, int st, const char* err, const gemvtune_choice* c) {
    fprintf(f, "%d|%s|%s|%s|%s|%s|%d,%d,%d,%d,%d,%d,%d,%d|%d|%s|", st, err, c->id, c->source, c->reason, c->class_name,
            c->params.r, c->params.f, c->params.u, c->params.s, c->params.w, c->params.g, c->params.l, c->params.a,
            c->layout, c->layout_name);
    hexbytes(f, c->cubin, c->cubin_len);
    fprintf(f, "|%zu|%s|%u,%u,%u|%u,%u,%u|%u|%d|%d|%d|%016" PRIx64 "|%d", c->cubin_len, c->entry, c->grid[0],
            c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->shared_bytes, c->needs_shared_optin,
            c->pdl_supported, c->pdl_pays, bits(c->error_bound), c->has_evidence);
    fprintf(f, "|%016" PRIx64 "|%016" PRIx64 "|%016" PRIx64 "|%016" PRIx64 "|%016" PRIx64 "|%016" PRIx64,
            bits(c->median_us), bits(c->gbs), bits(c->pct_ceiling), bits(c->speedup), bits(c->p_value),
            bits(c->pdl_us));
    fprintf(f, "|%s|%s|%" PRId64 "|%u|%d\n", c->gpu_name, c->tuned_shape, c->tuned_unix, c->pdl_shared_bytes,
            c->pdl_needs_shared_optin);
}

typedef struct query {
    char arch[32], gpu[64], format[32];
    long long rows, cols;
} query;

/* The query's GPU name: "-" is NULL, '_' stands for a space. */
static const char* gpu_of(query* q) {
    if (strcmp(q->gpu, "-") == 0) return NULL;
    for (char* c = q->gpu; *c; c++)
        if (*c == '_') *c = ' ';
    return q->gpu;
}

static query* read_queries(const char* path, int* n) {
    FILE* f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    int cap = 64;
    query* q = malloc(sizeof(query) * cap);
    *n = 0;
    while (1) {
        if (*n == cap) q = realloc(q, sizeof(query) * (cap *= 2));
        query* x = &q[*n];
        if (fscanf(f, "%31s %63s %31s %lld %lld", x->arch, x->gpu, x->format, &x->rows, &x->cols) != 5) break;
        (*n)++;
    }
    fclose(f);
    return q;
}

static gemvtune_policy* open_or_print(const char* cache, const char* flags) {
    char err[1024];
    gemvtune_policy* h = NULL;
    int st = gemvtune_open(strcmp(cache, "-") == 0 ? NULL : cache, (uint32_t)atoi(flags), &h, err, sizeof err);
    if (st != GEMVTUNE_OK) {
        printf("open|%d|%s|%s\n", st, err, h == NULL ? "null" : "handle");
        return NULL;
    }
    const char* ce = gemvtune_cache_error(h);
    printf("open|0|%s|%s\n", gemvtune_cache_path(h), ce ? ce : "-");
    for (size_t i = 0; i < gemvtune_warning_count(h); i++) printf("warning|%s\n", gemvtune_warning(h, i));
    return h;
}

static int lookup_main(int argc, char** argv) {
    if (argc != 5) return 2;
    gemvtune_policy* h = open_or_print(argv[2], argv[3]);
    if (!h) return 0;
    int n;
    query* q = read_queries(argv[4], &n);
    for (int i = 0; i < n; i++) {
        gemvtune_choice c = {.size = sizeof c};
        char err[1024] = "";
        int st = gemvtune_lookup(h, q[i].arch, gpu_of(&q[i]), q[i].format, q[i].rows, q[i].cols, &c, err, sizeof err);
        print_choice(stdout, st, err, &c);
    }
    gemvtune_close(h);
    free(q);
    return 0;
}

typedef struct worker {
    gemvtune_policy* h;
    query* q;
    int n;
    char* out;
    size_t len;
} worker;

static void* run_worker(void* arg) {
    worker* w = arg;
    FILE* f = open_memstream(&w->out, &w->len);
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < w->n; i++) {
            gemvtune_choice c = {.size = sizeof c};
            char err[1024] = "";
            int st = gemvtune_lookup(w->h, w->q[i].arch, w->q[i].gpu, w->q[i].format, w->q[i].rows, w->q[i].cols, &c, err,
                                     sizeof err);
            if (round == 19) print_choice(f, st, err, &c);
        }
    fclose(f);
    return NULL;
}

static int threads_main(int argc, char** argv) {
    if (argc != 5) return 2;
    gemvtune_policy* h = open_or_print(argv[2], argv[3]);
    if (!h) return 1;
    int n;
    query* q = read_queries(argv[4], &n);
    for (int i = 0; i < n; i++)
        if (gpu_of(&q[i]) == NULL) q[i].gpu[0] = '\0';
    enum { T = 8 };
    pthread_t t[T];
    worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (worker){h, q, n, NULL, 0};
        pthread_create(&t[i], NULL, run_worker, &w[i]);
    }
    for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
    int bad = 0;
    for (int i = 1; i < T; i++)
        if (w[i].len != w[0].len || memcmp(w[i].out, w[0].out, w[0].len) != 0) bad++;
    printf("threads %d, differing %d, bytes %zu\n", T, bad, w[0].len);
    fwrite(w[0].out, 1, w[0].len, stdout);
    for (int i = 0; i < T; i++) free(w[i].out);
    gemvtune_close(h);
    free(q);
    return bad ? 1 : 0;
}

static int source_main(int argc, char** argv) {
    if (argc != 5) return 2;
    char err[1024];
    gemvtune_policy* h = NULL;
    if (gemvtune_open(NULL, GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR, &h, err, sizeof err) != GEMVTUNE_OK) {
        printf("open failed: %s\n", err);
        return 1;
    }
    gemvtune_kernel_source s = {.size = sizeof s};
    int st = gemvtune_source(h, argv[2], argv[3], argv[4], &s, err, sizeof err);
    if (st != GEMVTUNE_OK) {
        printf("%d|%s\n", st, err);
    } else {
        printf("0|%s|%s|%zu", s.name, s.entry, s.num_options);
        for (size_t i = 0; i < s.num_options; i++) printf("|%s", s.options[i]);
        printf("\n%s", s.code);
    }
    gemvtune_close(h);
    return 0;
}

static int launch_main(int argc, char** argv) {
    if (argc != 6) return 2;
    uint32_t grid[3], block[3], smem;
    char err[1024] = "";
    int st = gemvtune_launch(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]), grid, block, &smem, err, sizeof err);
    if (st != GEMVTUNE_OK)
        printf("%d|%s\n", st, err);
    else
        printf("0|%u,%u,%u|%u,%u,%u|%u\n", grid[0], grid[1], grid[2], block[0], block[1], block[2], smem);
    return 0;
}

static int repack_main(int argc, char** argv) {
    if (argc != 8) return 2;
    const char* format = argv[2];
    int layout = atoi(argv[3]);
    long long rows = atoll(argv[4]), cols = atoll(argv[5]);
    char err[1024];
    size_t n;
    if (gemvtune_repack_size(format, layout, rows, cols, &n, err, sizeof err) != GEMVTUNE_OK) {
        fprintf(stderr, "repack_size: %s\n", err);
        return 1;
    }
    FILE* in = fopen(argv[6], "rb");
    if (!in) return 1;
    uint8_t* raw = malloc(n);
    uint8_t* out = malloc(n);
    if (fread(raw, 1, n, in) != n) return 1;
    fclose(in);
    if (gemvtune_repack(format, layout, raw, n, rows, cols, out, n, err, sizeof err) != GEMVTUNE_OK) {
        fprintf(stderr, "repack: %s\n", err);
        return 1;
    }
    FILE* o = fopen(argv[7], "wb");
    fwrite(out, 1, n, o);
    fclose(o);
    free(raw);
    free(out);
    return 0;
}

/* reference FORMAT ROWS COLS RAW X OUT: y = W x in float64 of the raw
 * bytes in RAW and the cols float32 in X, written to OUT. */
static int reference_main(int argc, char** argv) {
    if (argc != 8) return 2;
    const char* format = argv[2];
    long long rows = atoll(argv[3]), cols = atoll(argv[4]);
    char err[1024];
    size_t n;
    if (gemvtune_repack_size(format, 0, rows, cols, &n, err, sizeof err) != GEMVTUNE_OK) {
        fprintf(stderr, "repack_size: %s\n", err);
        return 1;
    }
    uint8_t* raw = malloc(n);
    float* x = malloc(sizeof(float) * (size_t)cols);
    double* y = malloc(sizeof(double) * (size_t)rows);
    FILE* in = fopen(argv[5], "rb");
    if (!in || fread(raw, 1, n, in) != n) return 1;
    fclose(in);
    in = fopen(argv[6], "rb");
    if (!in || fread(x, sizeof(float), (size_t)cols, in) != (size_t)cols) return 1;
    fclose(in);
    if (gemvtune_reference(format, raw, n, x, rows, cols, y, (size_t)rows, err, sizeof err) != GEMVTUNE_OK) {
        fprintf(stderr, "reference: %s\n", err);
        return 1;
    }
    FILE* o = fopen(argv[7], "wb");
    fwrite(y, sizeof(double), (size_t)rows, o);
    fclose(o);
    free(raw);
    free(x);
    free(y);
    return 0;
}

/* Each hostile call and the status it must return. */
static int failures, checks;
static void expect(const char* what, int got, int want, const char* err) {
    checks++;
    if (got != want || (want != GEMVTUNE_OK && err[0] == '\0')) {
        failures++;
        printf("FAIL %s: status %d, want %d (%s)\n", what, got, want, err);
    } else {
        printf("ok %s: %s\n", what, err);
    }
}

static int hostile_main(void) {
    char err[256];
    gemvtune_policy* h = NULL;
#define CALL(what, want, call) \
    do {                       \
        err[0] = '\0';         \
        expect(what, call, want, err); \
    } while (0)
    CALL("open out NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_open(NULL, 1, NULL, err, sizeof err));
    CALL("open flags unknown", GEMVTUNE_ERR_ARGUMENT, gemvtune_open(NULL, 6, &h, err, sizeof err));
    CALL("open missing cache", GEMVTUNE_ERR_CACHE, gemvtune_open("/nonexistent/gemvtune/tune.db", 0, &h, err, sizeof err));
    if (h != NULL) {
        failures++;
        printf("FAIL a failed open left a handle\n");
    }
    CALL("open", GEMVTUNE_OK, gemvtune_open("/nonexistent/gemvtune/tune.db", 1, &h, err, sizeof err));
    if (h == NULL) return 1;
    gemvtune_choice c = {.size = sizeof c};
    CALL("lookup handle NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_lookup(NULL, "sm_90", "NVIDIA H200", "q4_0", 4096, 4096, &c, err, sizeof err));
    CALL("lookup out NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 4096, 4096, NULL, err, sizeof err));
    CALL("lookup arch NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_lookup(h, NULL, "NVIDIA H200", "q4_0", 4096, 4096, &c, err, sizeof err));
    CALL("lookup format NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_lookup(h, "sm_90", "NVIDIA H200", NULL, 4096, 4096, &c, err, sizeof err));
    /* A caller built against abi 1.0 passes 1.0's size: it is filled up to
     * tuned_unix, and nothing past it is written. */
    gemvtune_choice old;
    memset(&old, 0x5A, sizeof old);
    old.size = GEMVTUNE_CHOICE_SIZE_1_0;
    CALL("lookup abi 1.0 struct", GEMVTUNE_OK, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 4096, 4096, &old, err, sizeof err));
    checks++;
    if (old.pdl_shared_bytes != 0x5A5A5A5Au || old.pdl_needs_shared_optin != 0x5A5A5A5A || strcmp(old.id, "v1") != 0) {
        failures++;
        printf("FAIL an abi 1.0 struct was written past its size, or not filled\n");
    }
    gemvtune_choice small = {.size = GEMVTUNE_CHOICE_SIZE_1_0 - 8};
    CALL("lookup struct too small", GEMVTUNE_ERR_ARGUMENT, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 4096, 4096, &small, err, sizeof err));
    CALL("lookup unknown format", GEMVTUNE_ERR_FORMAT, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q3_K", 4096, 4096, &c, err, sizeof err));
    if (strcmp(c.id, "v1") != 0) {
        failures++;
        printf("FAIL a failed lookup did not leave the stock choice: %s\n", c.id);
    }
    CALL("lookup bad arch", GEMVTUNE_ERR_ARCH, gemvtune_lookup(h, "sm90", "NVIDIA H200", "q4_0", 4096, 4096, &c, err, sizeof err));
    CALL("lookup 0 rows", GEMVTUNE_ERR_SHAPE, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 0, 4096, &c, err, sizeof err));
    CALL("lookup negative cols", GEMVTUNE_ERR_SHAPE, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 4096, -32, &c, err, sizeof err));
    CALL("lookup huge rows", GEMVTUNE_ERR_SHAPE, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 1LL << 40, 4096, &c, err, sizeof err));
    CALL("lookup cols not a block multiple", GEMVTUNE_ERR_SHAPE, gemvtune_lookup(h, "sm_90", "NVIDIA H200", "q4_0", 4096, 4100, &c, err, sizeof err));
    checks++;
    if (gemvtune_lookup(h, "sm_90", "NVIDIA H200", "nope", 1, 32, &c, NULL, 0) != GEMVTUNE_ERR_FORMAT) {
        failures++;
        printf("FAIL lookup without errbuf\n");
    }
    gemvtune_kernel_source s = {.size = sizeof s};
    CALL("source bad id", GEMVTUNE_ERR_VARIANT, gemvtune_source(h, "sm_90", "q4_0", "r9f0u1s0w8", &s, err, sizeof err));
    CALL("source bad arch", GEMVTUNE_ERR_ARCH, gemvtune_source(h, "90", "q4_0", "v1", &s, err, sizeof err));
    CALL("source unknown format", GEMVTUNE_ERR_FORMAT, gemvtune_source(h, "sm_90", "fp4", "v1", &s, err, sizeof err));
    CALL("source layout not in family", GEMVTUNE_ERR_SHAPE, gemvtune_source(h, "sm_90", "bf16", "r1f0u1s0w8l2", &s, err, sizeof err));
    CALL("source id NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_source(h, "sm_90", "q4_0", NULL, &s, err, sizeof err));
    gemvtune_kernel_source ss = {.size = 4};
    CALL("source struct too small", GEMVTUNE_ERR_ARGUMENT, gemvtune_source(h, "sm_90", "q4_0", "v1", &ss, err, sizeof err));
    uint32_t g3[3], b3[3], sm;
    CALL("launch grid NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_launch("q4_0", "v1", 64, 256, NULL, b3, &sm, err, sizeof err));
    CALL("launch id NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_launch("q4_0", NULL, 64, 256, g3, b3, &sm, err, sizeof err));
    CALL("launch gate fails", GEMVTUNE_ERR_SHAPE, gemvtune_launch("q4_0", "r1f0u4s3w16", 64, 32, g3, b3, &sm, err, sizeof err));
    size_t n = 0;
    CALL("repack_size size NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_repack_size("q4_0", 1, 64, 256, NULL, err, sizeof err));
    CALL("repack_size 0 rows", GEMVTUNE_ERR_SHAPE, gemvtune_repack_size("q4_0", 1, 0, 256, &n, err, sizeof err));
    CALL("repack_size bad layout", GEMVTUNE_ERR_SHAPE, gemvtune_repack_size("q4_0", 7, 64, 256, &n, err, sizeof err));
    CALL("repack_size unknown format", GEMVTUNE_ERR_FORMAT, gemvtune_repack_size("q2_K", 0, 64, 256, &n, err, sizeof err));
    CALL("repack_size", GEMVTUNE_OK, gemvtune_repack_size("q4_0", 1, 64, 256, &n, err, sizeof err));
    uint8_t* raw = calloc(1, n + 64);
    uint8_t* out = calloc(1, n + 64);
    CALL("repack raw NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_repack("q4_0", 1, NULL, n, 64, 256, out, n, err, sizeof err));
    CALL("repack out NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_repack("q4_0", 1, raw, n, 64, 256, NULL, n, err, sizeof err));
    CALL("repack raw too short", GEMVTUNE_ERR_BUFFER, gemvtune_repack("q4_0", 1, raw, n - 1, 64, 256, out, n, err, sizeof err));
    CALL("repack raw too long", GEMVTUNE_ERR_BUFFER, gemvtune_repack("q4_0", 1, raw, n + 1, 64, 256, out, n, err, sizeof err));
    CALL("repack out too small", GEMVTUNE_ERR_BUFFER, gemvtune_repack("q4_0", 1, raw, n, 64, 256, out, n - 1, err, sizeof err));
    CALL("repack", GEMVTUNE_OK, gemvtune_repack("q4_0", 1, raw, n, 64, 256, out, n + 64, err, sizeof err));
    float x[256] = {0};
    double y[64];
    CALL("reference y too small", GEMVTUNE_ERR_BUFFER, gemvtune_reference("q4_0", raw, n, x, 64, 256, y, 63, err, sizeof err));
    CALL("reference x NULL", GEMVTUNE_ERR_ARGUMENT, gemvtune_reference("q4_0", raw, n, NULL, 64, 256, y, 64, err, sizeof err));
    CALL("reference", GEMVTUNE_OK, gemvtune_reference("q4_0", raw, n, x, 64, 256, y, 64, err, sizeof err));
    /* A one-byte error buffer gets only the NUL. */
    char tiny[1] = {'x'};
    int st = gemvtune_lookup(h, "sm_90", "NVIDIA H200", "nope", 1, 32, &c, tiny, 1);
    checks++;
    if (st != GEMVTUNE_ERR_FORMAT || tiny[0] != '\0') {
        failures++;
        printf("FAIL one-byte errbuf: status %d, byte %d\n", st, tiny[0]);
    }
    if (gemvtune_cache_path(NULL) != NULL || gemvtune_cache_error(NULL) != NULL) {
        failures++;
        printf("FAIL cache_path/cache_error of NULL are not NULL\n");
    }
    gemvtune_close(NULL);
    gemvtune_close(h);
    free(raw);
    free(out);
    if (gemvtune_abi_version() != GEMVTUNE_ABI_VERSION) {
        failures++;
        printf("FAIL abi version %d, header %d\n", gemvtune_abi_version(), GEMVTUNE_ABI_VERSION);
    }
    printf("%s; %d checks, %d failed\n", gemvtune_version(), checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char** argv) {
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0) return lookup_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "threads") == 0) return threads_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "source") == 0) return source_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "repack") == 0) return repack_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "launch") == 0) return launch_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "reference") == 0) return reference_main(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "hostile") == 0) return hostile_main();
    fprintf(stderr, "usage: abi_check lookup|threads|source|launch|repack|hostile ...\n");
    return 2;
}
