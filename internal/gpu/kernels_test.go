package gpu_test

// gemvSrc is a small f32 GEMV: one warp per output row, y = alpha * W·x.
// It takes every argument type Args accepts.
const gemvSrc = `
extern "C" __global__ void gemv_f32(const float* __restrict__ W, const float* __restrict__ x,
                                    float* __restrict__ y, unsigned int rows, int cols, float alpha) {
    unsigned int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;  // whole warps leave together
    const float* w = W + (size_t)row * cols;
    float acc = 0.f;
    for (int k = lane; k < cols; k += 32) acc += w[k] * x[k];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = alpha * acc;
}
`

// spinSrc spins one thread for ms milliseconds of GPU wall time, then sets
// *done = 1. It always ends.
const spinSrc = `
extern "C" __global__ void spin(unsigned int ms, int* done) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < (unsigned long long)ms * 1000000ull);
    *done = 1;
}
`
