// Runs a family's chunks over every row of W as the kernel's warp does
// (GEMV_R rows per warp, the dead ones past the end zero chunks; lane l
// takes chunks l, l+32, ...; one f32 accumulator per lane and row; the xor
// butterfly 16, 8, 4, 2, 1) and writes y. Input on stdin: int32 rows,
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
    for (int r0 = 0; r0 < rows; r0 += GEMV_R) { // one warp's rows: r0 .. r0+R-1, the dead ones zero
        bool live[GEMV_R];
        RowPtr rp[GEMV_R];
        for (int i = 0; i < GEMV_R; i++) {
            live[i] = r0 + i < rows;
            rp[i] = row_ptr(W.data(), g, (size_t)(live[i] ? r0 + i : 0));
        }
        float lanes[GEMV_R][32];
        for (int lane = 0; lane < 32; lane++) {
            threadIdx.x = (unsigned)lane;
            float acc[GEMV_R];
            for (int i = 0; i < GEMV_R; i++) acc[i] = 0;
            for (int c = lane; c < nch; c += 32) {
                Chunk ch[GEMV_R];
                for (int i = 0; i < GEMV_R; i++) {
                    if (live[i]) chunk_load(ch[i], rp[i], c);
                    else chunk_zero(ch[i]);
                }
                chunk_consume(acc, ch, x.data(), c);
            }
            for (int i = 0; i < GEMV_R; i++) lanes[i][lane] = acc[i];
        }
        for (int i = 0; i < GEMV_R && r0 + i < rows; i++) {
            float* v = lanes[i];
            for (int o = 16; o > 0; o >>= 1) {
                float next[32];
                for (int l = 0; l < 32; l++) next[l] = v[l] + v[l ^ o];
                for (int l = 0; l < 32; l++) v[l] = next[l];
            }
            y[r0 + i] = v[0];
        }
    }
    fwrite(y.data(), 4, rows, stdout);
    return 0;
}
