//! Value statistics of f32 data, shared by `inspect` (per tensor) and the
//! SAEV scan (per layer).

/// Running statistics: mean and standard deviation of the finite values,
/// their range, and how many values were NaN or infinite.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValueStats {
    finite: u64,
    sum: f64,
    sum_of_squares: f64,
    min: Option<f32>,
    max: Option<f32>,
    nan: u64,
    inf: u64,
}

impl ValueStats {
    /// Statistics of `values`.
    pub fn of(values: &[f32]) -> ValueStats {
        let mut stats = ValueStats::default();
        stats.add(values);
        stats
    }

    /// Adds `values` (summed in f64, the chunk first, then into the total).
    pub fn add(&mut self, values: &[f32]) {
        let (mut sum, mut sum_of_squares) = (0.0f64, 0.0f64);
        for &v in values {
            if v.is_nan() {
                self.nan += 1;
            } else if v.is_infinite() {
                self.inf += 1;
            } else {
                sum += f64::from(v);
                sum_of_squares += f64::from(v) * f64::from(v);
                self.finite += 1;
                self.min = Some(self.min.map_or(v, |m| m.min(v)));
                self.max = Some(self.max.map_or(v, |m| m.max(v)));
            }
        }
        self.sum += sum;
        self.sum_of_squares += sum_of_squares;
    }

    /// How many finite values were added.
    pub fn finite(&self) -> u64 {
        self.finite
    }

    /// Mean of the finite values (0 when there is none).
    pub fn mean(&self) -> f64 {
        self.sum / self.finite.max(1) as f64
    }

    /// Population standard deviation of the finite values.
    pub fn std(&self) -> f64 {
        let mean = self.mean();
        (self.sum_of_squares / self.finite.max(1) as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }

    /// Smallest finite value.
    pub fn min(&self) -> Option<f32> {
        self.min
    }

    /// Largest finite value.
    pub fn max(&self) -> Option<f32> {
        self.max
    }

    /// How many values were NaN.
    pub fn nan(&self) -> u64 {
        self.nan
    }

    /// How many values were ±infinity.
    pub fn inf(&self) -> u64 {
        self.inf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_values_make_the_moments_and_the_rest_are_counted() {
        let mut stats = ValueStats::of(&[1.0, 3.0, f32::NAN]);
        stats.add(&[f32::INFINITY, -2.0, 6.0]);
        assert_eq!(stats.finite(), 4);
        assert_eq!(stats.mean(), 2.0);
        assert_eq!(
            stats.std(),
            (((1.0 + 9.0 + 4.0 + 36.0) / 4.0) - 4.0f64).sqrt()
        );
        assert_eq!((stats.min(), stats.max()), (Some(-2.0), Some(6.0)));
        assert_eq!((stats.nan(), stats.inf()), (1, 1));
        assert_eq!(ValueStats::of(&[]).mean(), 0.0);
        assert_eq!(ValueStats::of(&[]).std(), 0.0);
    }
}
