// gemvtune f16 family (IEEE binary16): f16 -> f32 is cvt.f32.f16 (exact).
// The kernel is dense16.cu's.
#define DENSE16_LO(v) gemv_h2f(v)
#define DENSE16_HI(v) gemv_h2f((v) >> 16)
