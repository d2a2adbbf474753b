//! Random weights in each format's raw ecosystem layout (GGUF blocks, MLX
//! groups, plain 16-bit), valid and with rows of about unit norm, so that a
//! token's chain of 129 GEMVs keeps its activations finite.

/// A GGUF block format: its block bytes and its f16 scale fields as
/// (offset, scale of the field against 1/sqrt(cols)).
struct BlockFormat {
    name: &'static str,
    bytes: usize,
    scales: &'static [(usize, f32)],
}

const BLOCK_FORMATS: &[BlockFormat] = &[
    BlockFormat { name: "q4_0", bytes: 18, scales: &[(0, 1.0 / 4.6)] },
    BlockFormat { name: "q8_0", bytes: 34, scales: &[(0, 1.0 / 73.0)] },
    BlockFormat { name: "q4_K", bytes: 144, scales: &[(0, 1.0 / 225.0), (2, 1.0 / 450.0)] },
    BlockFormat { name: "q5_K", bytes: 176, scales: &[(0, 1.0 / 690.0), (2, 1.0 / 1380.0)] },
    BlockFormat { name: "q6_K", bytes: 210, scales: &[(208, 1.0 / 1370.0)] },
];

/// The formats make fills: every format gemvtune has.
pub fn formats() -> Vec<&'static str> {
    let mut f: Vec<&str> = BLOCK_FORMATS.iter().map(|b| b.name).collect();
    f.extend(["affine4", "bf16", "f16"]);
    f
}

/// xorshift64*: reproducible weights and inputs without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / 16_777_216.0
    }

    /// Uniform in [-1, 1).
    pub fn signed(&mut self) -> f32 {
        2.0 * self.uniform() - 1.0
    }

    fn fill(&mut self, b: &mut [u8]) {
        for c in b.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}

/// f32 to IEEE half, rounding to nearest even, subnormals included
/// (GGUF's small block scales are subnormal halves); values past the
/// largest finite half give it.
pub fn f16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let e = ((x >> 23) & 0xff) as i32 - 127 + 15;
    let man = x & 0x7f_ffff;
    if e >= 31 {
        return sign | 0x7bff;
    }
    if e < -10 {
        return sign;
    }
    // The kept bits and how many low bits round away: 13 for a normal
    // half, more for a subnormal one (the implicit bit made explicit).
    let full = if e > 0 { man } else { man | 0x80_0000 };
    let shift = if e > 0 { 13 } else { (14 - e) as u32 };
    let kept = if e > 0 { ((e as u32) << 10) | (man >> 13) } else { full >> shift };
    let rest = full & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    let up = rest > half || (rest == half && kept & 1 == 1);
    sign | (kept + up as u32) as u16
}

/// IEEE half to f32 (finite values).
fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f32;
    if e == 0 {
        return sign * m * 2f32.powi(-24);
    }
    sign * (1.0 + m / 1024.0) * 2f32.powi(e - 15)
}

/// f32 to bfloat16, rounding to nearest even.
pub fn bf16_bits(f: f32) -> u16 {
    let x = f.to_bits();
    (x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16) as u16
}

/// `bytes` raw bytes of format for a rows x cols tensor (bytes from
/// gemvtune::repack_size with layout 0).
pub fn make(format: &str, rows: usize, cols: usize, bytes: usize, rng: &mut Rng) -> Vec<u8> {
    let unit = 1.0 / (cols as f32).sqrt();
    let mut w = vec![0u8; bytes];
    match format {
        "bf16" | "f16" => {
            for c in w.chunks_exact_mut(2) {
                let v = rng.signed() * 1.7 * unit;
                c.copy_from_slice(&(if format == "f16" { f16_bits(v) } else { bf16_bits(v) }).to_le_bytes());
            }
        }
        "affine4" => {
            // The nibble plane, then an f16 scale and an f16 bias per 64 weights.
            rng.fill(&mut w);
            let (plane, groups) = (rows * cols / 2, rows * cols / 64);
            for g in 0..groups {
                let s = f16_bits(unit / 4.7 * (0.5 + rng.uniform()));
                let bias = f16_bits(-7.5 * f16_value(s));
                w[plane + 2 * g..plane + 2 * g + 2].copy_from_slice(&s.to_le_bytes());
                w[plane + 2 * groups + 2 * g..plane + 2 * groups + 2 * g + 2].copy_from_slice(&bias.to_le_bytes());
            }
        }
        _ => {
            rng.fill(&mut w);
            let f = BLOCK_FORMATS.iter().find(|b| b.name == format).expect("a format of formats()");
            for block in w.chunks_exact_mut(f.bytes) {
                for (off, k) in f.scales {
                    let d = f16_bits(k * unit * (0.5 + rng.uniform()));
                    block[*off..*off + 2].copy_from_slice(&d.to_le_bytes());
                }
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_trip() {
        for v in [1.0f32, -2.5, 0.000_1, 65504.0, 0.333_333] {
            let h = f16_bits(v);
            assert!((f16_value(h) - v).abs() <= v.abs() / 1024.0, "{} -> {:#x} -> {}", v, h, f16_value(h));
        }
        // Subnormals: steps of 2^-24, to nearest even.
        let tiny = 2f32.powi(-24);
        for (v, want) in [
            (tiny, 1u16),
            (2.5 * tiny, 2),
            (3.5 * tiny, 4),
            (0.4 * tiny, 0),
            (-5.0 * tiny, 0x8005),
            (1023.6 * tiny, 0x400),
        ] {
            assert_eq!(f16_bits(v), want, "{:e}", v);
        }
        assert_eq!(f16_value(0x0003), 3.0 * tiny);
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(f16_bits(1e9), 0x7bff);
    }

    /// Every format's weights are what gemvtune reads as finite rows of
    /// about unit norm: y = W x for x uniform in [-1, 1) (variance 1/3)
    /// has a root mean square near sqrt(1/3).
    #[test]
    fn every_format_gives_unit_rows() {
        assert_eq!(formats().len(), 8);
        let (rows, cols) = (256usize, 1024usize);
        for f in formats() {
            let mut rng = Rng::new(7);
            let bytes = gemvtune::repack_size(f, 0, rows as i64, cols as i64).unwrap();
            let w = make(f, rows, cols, bytes, &mut rng);
            let x: Vec<f32> = (0..cols).map(|_| rng.signed()).collect();
            let y = gemvtune::reference(f, &w, &x, rows as i64, cols as i64).unwrap();
            let rms = (y.iter().map(|v| v * v).sum::<f64>() / rows as f64).sqrt() / (1.0f64 / 3.0).sqrt();
            assert!(y.iter().all(|v| v.is_finite()), "{}: y not finite", f);
            assert!((0.75..1.33).contains(&rms), "{}: rows of norm about {:.3}, want about 1", f, rms);
        }
    }
}
