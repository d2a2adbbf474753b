// gen_kquants writes kquants_ggml.txt: GGUF q6_K and q5_K super-blocks made
// by ggml's own reference quantizers (quantize_row_q6_K_ref,
// quantize_row_q5_K_ref) from deterministic weights, and the sha256 of what
// ggml's dequantize_row_q6_K / _q5_K make of them (float32, little endian).
// variants' TestKQuantsAgainstGGML decodes the same bytes and compares.
//
// Build against a ggml checkout (any C compiler, no GPU):
//   cc -O2 -I$GGML/include -I$GGML/src -I$GGML/src/ggml-cpu \
//      gen_kquants.c $GGML/src/ggml-quants.c -lcrypto -lm -o gen && ./gen > kquants_ggml.txt
// (SHA-256 from OpenSSL's libcrypto; the stubs below stand in for the few
// ggml functions ggml-quants.c links). The file was made from ggml-org/ggml
// at d99724f2.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "ggml-common.h"
#include "ggml-quants.h"

void ggml_abort(const char *file, int line, const char *fmt, ...) { fprintf(stderr, "abort %s:%d\n", file, line); exit(1); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; return 0; }
const char *ggml_type_name(enum ggml_type type) { (void)type; return "?"; }
size_t ggml_type_size(enum ggml_type type) { (void)type; return 0; }

static uint64_t state = 0x9E3779B97F4A7C15ull;
static double uniform(void) { // xorshift64*, in (0, 1)
    state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
    return ((state * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
}
static float normal(void) { return (float)(sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform())); }

// Cases of two super-blocks each: what a weight tensor holds, and the edges
// of the encodings (all zero, one sign only, an outlier, tiny and large
// magnitudes, values on the quantization grid).
static void fill(int c, float *w) {
    for (int i = 0; i < 512; i++) {
        float v = normal();
        switch (c) {
        case 0: w[i] = 0.02f * v; break;                      // a weight tensor's scale
        case 1: w[i] = 0; break;                              // all zero
        case 2: w[i] = fabsf(v); break;                       // positive only
        case 3: w[i] = -fabsf(v) * 3; break;                  // negative only
        case 4: w[i] = (i % 97 == 5) ? 40 * v : 0.01f * v; break; // outliers
        case 5: w[i] = 1e-6f * v; break;                      // tiny (subnormal f16 scales)
        case 6: w[i] = 3000 * v; break;                       // large
        case 7: w[i] = (float)((int)(8 * uniform()) - 4); break; // on a grid
        }
    }
}

static void hex(const uint8_t *b, size_t n) { for (size_t i = 0; i < n; i++) printf("%02x", b[i]); }

int main(void) {
    const char *names[2] = {"q6_K", "q5_K"};
    const size_t sizes[2] = {sizeof(block_q6_K), sizeof(block_q5_K)};
    printf("# ggml-quants.c reference quantizers and dequantizers; see gen_kquants.c\n");
    for (int f = 0; f < 2; f++) {
        for (int c = 0; c < 8; c++) {
            float w[512], y[512];
            uint8_t q[2 * 256];
            fill(c, w);
            if (f == 0) {
                quantize_row_q6_K_ref(w, (block_q6_K *)q, 512);
                dequantize_row_q6_K((block_q6_K *)q, y, 512);
            } else {
                quantize_row_q5_K_ref(w, (block_q5_K *)q, 512);
                dequantize_row_q5_K((block_q5_K *)q, y, 512);
            }
            uint8_t d[32];
            SHA256((const unsigned char *)y, sizeof y, d);
            printf("%s %d ", names[f], c);
            hex(q, 2 * sizes[f]);
            printf(" ");
            hex(d, 32);
            printf("\n");
        }
    }
    return 0;
}
