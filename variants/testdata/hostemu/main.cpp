// Runs a family's chunks over every row of W as the kernel's warp does
// (lane l takes chunks l, l+32, ...; one f32 accumulator per lane; the
// xor butterfly 16, 8, 4, 2, 1) and writes y. Input on stdin: int32 rows,
// cols, then the weight bytes (in the layout GEMV_L names), then cols
// float32 x; output on stdout: rows float32 y.
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include DEFINES_FILE
#include "shim.h"
#include FAMILY_FILE

int main() {
    int32_t rc[2];
    if (fread(rc, 4, 2, stdin) != 2) return 2;
    int rows = rc[0], cols = rc[1];
    long nb = 0;
    if (fread(&nb, 8, 1, stdin) != 1) return 2;
    std::vector<unsigned char> W(nb + 64);
    if (fread(W.data(), 1, nb, stdin) != (size_t)nb) return 2;
    std::vector<float> x(cols);
    if (fread(x.data(), 4, cols, stdin) != (size_t)cols) return 2;
#if GEMV_A
    hostemu_stage_xq(x.data(), cols);
#endif
    const Geo g = gemv_geo(rows, cols);
    const int nch = cols / GEMV_CHUNK;
    std::vector<float> y(rows);
    for (int r = 0; r < rows; r++) {
        float lanes[32];
        const RowPtr rp = row_ptr(W.data(), g, (size_t)r);
        for (int lane = 0; lane < 32; lane++) {
            threadIdx.x = (unsigned)lane;
            float acc[GEMV_R] = {0};
            for (int c = lane; c < nch; c += 32) {
                Chunk ch[GEMV_R];
                chunk_load(ch[0], rp, c);
                chunk_consume(acc, ch, x.data(), c);
            }
            lanes[lane] = acc[0];
        }
        for (int o = 16; o > 0; o >>= 1) {
            float next[32];
            for (int l = 0; l < 32; l++) next[l] = lanes[l] + lanes[l ^ o];
            for (int l = 0; l < 32; l++) lanes[l] = next[l];
        }
        y[r] = lanes[0];
    }
    fwrite(y.data(), 4, rows, stdout);
    return 0;
}
