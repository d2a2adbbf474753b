// gemvtune bf16 family: bf16 -> f32 is bits << 16 (exact). The kernel is
// dense16.cu's.
#define DENSE16_LO(v) __uint_as_float((v) << 16)
#define DENSE16_HI(v) __uint_as_float((v) & 0xFFFF0000u)
