//! A small deterministic random number generator (SplitMix64) with normal
//! samples (Box–Muller). Hand-rolled on purpose: a seed must give the same
//! model and the same generated text in every version of modelbin, which the
//! `rand` crate does not promise for its standard generators.

/// SplitMix64.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` ≥ 1).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Normal with mean 0 and standard deviation `std`.
    pub fn normal(&mut self, std: f64) -> f64 {
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        std * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn deterministic_and_roughly_normal() {
        assert_eq!(Rng::new(7).next_u64(), Rng::new(7).next_u64());
        let mut rng = Rng::new(1);
        let samples: Vec<f64> = (0..20_000).map(|_| rng.normal(2.0)).collect();
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / samples.len() as f64;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.05, "{var}");
        let u: Vec<f64> = (0..1000).map(|_| rng.uniform()).collect();
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
    }
}
