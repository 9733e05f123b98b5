//! The instruction sets the f32 kernels are compiled for, and the cap a
//! test puts on them; the process's choice among them is `tiers`'.

/// The instruction sets of the f32 kernels (the element-wise ones:
/// LayerNorm, GELU, softmax, and the quantization of int8 layers' inputs;
/// and the products against packed f32 weights), the narrowest first. The
/// process uses one, [chosen](crate::Kernels) once: by default the widest
/// this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum F32Tier {
    /// Plain code for any CPU (on x86-64, compiled without FMA; products go
    /// through the `gemm` crate on the unpacked weights).
    Portable,
    /// x86-64 AVX2 with FMA: element-wise loops eight lanes wide.
    Avx2,
    /// x86-64 AVX-512F (with AVX2, FMA and F16C): element-wise loops
    /// sixteen lanes wide. The reductions keep eight partial sums, so
    /// both FMA tiers add in the same order, and this tier performs the
    /// same operations as [`F32Tier::Avx2`] and gives the same bits in fewer
    /// instructions. The exponentials and GELU are bound by how many
    /// instructions wait on long dependency chains, not by arithmetic, so
    /// fewer instructions make them faster even where a 512-bit operation
    /// takes two cycles.
    Avx512,
}

#[cfg(test)]
thread_local! {
    /// The widest tier this thread's kernels may use (tests lower it to
    /// check each tier).
    static WIDEST: std::cell::Cell<F32Tier> = const { std::cell::Cell::new(F32Tier::Avx512) };
}

impl F32Tier {
    /// Every tier, the narrowest first.
    pub const ALL: [F32Tier; 3] = [F32Tier::Portable, F32Tier::Avx2, F32Tier::Avx512];

    /// Whether this CPU has the tier's features.
    pub fn is_available(self) -> bool {
        match self {
            F32Tier::Portable => true,
            #[cfg(target_arch = "x86_64")]
            F32Tier::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            F32Tier::Avx512 => {
                F32Tier::Avx2.is_available()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("f16c")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every tier this CPU runs, the portable one first, the widest last.
    pub fn available() -> Vec<F32Tier> {
        F32Tier::ALL
            .into_iter()
            .filter(|t| t.is_available())
            .collect()
    }

    /// The widest tier this CPU runs.
    pub fn best() -> F32Tier {
        F32Tier::available().pop().unwrap_or(F32Tier::Portable)
    }

    /// The tier named `name` (see [`F32Tier::name`]).
    pub fn from_name(name: &str) -> Option<F32Tier> {
        F32Tier::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The tier's name: `portable`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            F32Tier::Portable => "portable",
            F32Tier::Avx2 => "avx2",
            F32Tier::Avx512 => "avx512",
        }
    }

    /// Whether the kernels may run this tier: the CPU has its features
    /// (and, in tests, the thread allows it).
    pub(crate) fn usable(self) -> bool {
        #[cfg(test)]
        if self > WIDEST.get() {
            return false;
        }
        self.is_available()
    }

    /// Runs `f` with the kernels of this thread held to `widest` at most
    /// (work `f` hands to other threads is not held unless it chose its
    /// tier here).
    #[cfg(test)]
    pub(crate) fn capped<T>(widest: F32Tier, f: impl FnOnce() -> T) -> T {
        /// Puts the thread's cap back, even if `f` panics.
        struct Restore(F32Tier);
        impl Drop for Restore {
            fn drop(&mut self) {
                WIDEST.set(self.0);
            }
        }
        let _restore = Restore(WIDEST.replace(widest));
        f()
    }
}

impl std::str::FromStr for F32Tier {
    type Err = crate::Error;

    /// The tier named `name`; [`Error::UnknownTier`](crate::Error::UnknownTier)
    /// if none is.
    fn from_str(name: &str) -> crate::Result<F32Tier> {
        F32Tier::from_name(name).ok_or_else(|| crate::Error::UnknownTier {
            name: name.to_string(),
            known: "portable, avx2 or avx512",
        })
    }
}
