//! The kernel tiers a process runs: which instruction set the f32 kernels
//! ([`F32Tier`]) and the int8 kernels ([`Int8Kernel`]) use.
//!
//! The choice is process-wide rather than a field of each model's load
//! options: the f32 kernels (LayerNorm, GELU, softmax, packed products) are
//! free functions shared by every model and by training, so a per-model
//! tier would have to travel through every call of every engine. It is also
//! made once: a program may [set](set_kernels) it before the first model
//! loads or kernel runs, after which it stays fixed, so that one process
//! never mixes tiers (the portable f32 tier rounds multiply-adds apart and
//! differs from the FMA tiers in the last bits). Unset, the first use
//! takes the fastest tiers this CPU runs, detected at run time.
//!
//! The environment variable [`INT8_TIER_VARIABLE`] overrides the int8 tier
//! of the setting (read once), so that a benchmark or a user can force a
//! kernel without changing the program.

use std::sync::OnceLock;

use crate::nn::f32_tier::F32Tier;
use crate::nn::int8::Int8Kernel;
use crate::{Error, Result};

/// The environment variable that overrides the int8 tier of every model a
/// process loads (read once): an int8 kernel [name](Int8Kernel::name). It
/// takes precedence over [`set_kernels`]; unset, the setting holds.
pub const INT8_TIER_VARIABLE: &str = "MODELBIN_INT8_TIER";

/// The kernel tiers of a process: one for the f32 kernels, one for the
/// int8 products.
///
/// ```
/// use modelbin_infer::{F32Tier, Int8Kernel, Kernels};
///
/// // Before any model runs: the portable kernels, as on a CPU without SIMD.
/// modelbin_infer::set_kernels(Kernels { f32: F32Tier::Portable, int8: Int8Kernel::Portable })?;
/// assert_eq!(Kernels::chosen()?.f32, F32Tier::Portable);
/// # Ok::<(), modelbin_infer::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kernels {
    /// The tier of the f32 kernels.
    pub f32: F32Tier,
    /// The tier of the int8 products.
    pub int8: Int8Kernel,
}

/// The process's setting, fixed by [`set_kernels`] or by the first use.
static SETTING: OnceLock<Kernels> = OnceLock::new();

impl Kernels {
    /// The fastest tiers this CPU runs.
    pub fn best() -> Kernels {
        Kernels {
            f32: F32Tier::best(),
            int8: Int8Kernel::best(),
        }
    }

    /// `self` if this CPU runs both tiers.
    ///
    /// # Errors
    /// [`Error::KernelUnavailable`] naming the first tier it cannot run.
    pub fn check(self) -> Result<Kernels> {
        if !self.f32.is_available() {
            return Err(Error::KernelUnavailable(self.f32.name()));
        }
        if !self.int8.is_available() {
            return Err(Error::KernelUnavailable(self.int8.name()));
        }
        Ok(self)
    }

    /// The tiers models use: the setting (fixed now if it was not yet),
    /// with the int8 tier [`INT8_TIER_VARIABLE`] names if it is set.
    ///
    /// # Errors
    /// [`Error::UnknownKernel`] if the variable names no int8 kernel,
    /// [`Error::KernelUnavailable`] if it names one this CPU cannot run.
    pub fn chosen() -> Result<Kernels> {
        static VARIABLE: OnceLock<Option<String>> = OnceLock::new();
        let mut kernels = *SETTING.get_or_init(Kernels::best);
        if let Some(name) = VARIABLE.get_or_init(|| std::env::var(INT8_TIER_VARIABLE).ok()) {
            let int8 =
                Int8Kernel::from_name(name).ok_or_else(|| Error::UnknownKernel(name.clone()))?;
            if !int8.is_available() {
                return Err(Error::KernelUnavailable(int8.name()));
            }
            kernels.int8 = int8;
        }
        Ok(kernels)
    }
}

/// Makes `kernels` the process's tiers. Call it before the first model
/// loads or kernel runs: the tiers are fixed at first use.
///
/// # Errors
/// [`Error::KernelUnavailable`] if this CPU cannot run one of the tiers;
/// [`Error::KernelsAlreadyChosen`] if the process chose other tiers
/// already (setting the same ones again is no error).
pub fn set_kernels(kernels: Kernels) -> Result<()> {
    let kernels = kernels.check()?;
    let set = *SETTING.get_or_init(|| kernels);
    if set != kernels {
        return Err(Error::KernelsAlreadyChosen {
            f32: set.f32.name(),
            int8: set.int8.name(),
        });
    }
    Ok(())
}

/// The f32 tier of the setting (fixed now if it was not yet): what the f32
/// kernels run at most.
pub(crate) fn chosen_f32() -> F32Tier {
    SETTING.get_or_init(Kernels::best).f32
}

impl F32Tier {
    /// The tier the kernels run: the process's [choice](crate::Kernels)
    /// (in tests, held to the thread's cap).
    pub(crate) fn chosen() -> F32Tier {
        let limit = chosen_f32();
        [F32Tier::Avx512, F32Tier::Avx2]
            .into_iter()
            .find(|&t| t <= limit && t.usable())
            .unwrap_or(F32Tier::Portable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tier is found by its name, and a name of none is a typed
    /// error.
    #[test]
    fn tiers_parse_from_their_names() {
        for tier in F32Tier::ALL {
            assert_eq!(tier.name().parse::<F32Tier>().unwrap(), tier);
        }
        for kernel in Int8Kernel::ALL {
            assert_eq!(kernel.name().parse::<Int8Kernel>().unwrap(), kernel);
        }
        for name in ["", "avx", "AVX2", "avx512-vnni "] {
            assert!(matches!(
                name.parse::<F32Tier>(),
                Err(Error::UnknownTier { .. })
            ));
            assert!(matches!(
                name.parse::<Int8Kernel>(),
                Err(Error::UnknownTier { .. })
            ));
        }
        assert!(matches!(
            "avx512".parse::<Int8Kernel>(),
            Err(Error::UnknownTier { .. })
        ));
        assert!(matches!(
            "avx-vnni".parse::<F32Tier>(),
            Err(Error::UnknownTier { .. })
        ));
    }

    /// The tiers this CPU runs pass the check; the others are a typed
    /// error naming the tier.
    #[test]
    fn the_check_refuses_tiers_this_cpu_lacks() {
        let available = F32Tier::available();
        assert_eq!(available[0], F32Tier::Portable);
        assert_eq!(F32Tier::best(), *available.last().unwrap());
        for f32 in F32Tier::ALL {
            for int8 in Int8Kernel::ALL {
                let kernels = Kernels { f32, int8 };
                match kernels.check() {
                    Ok(checked) => {
                        assert_eq!(checked, kernels);
                        assert!(f32.is_available() && int8.is_available());
                    }
                    Err(Error::KernelUnavailable(name)) => {
                        let missing = if f32.is_available() {
                            int8.name()
                        } else {
                            f32.name()
                        };
                        assert_eq!(name, missing);
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        assert_eq!(Kernels::best().check().unwrap(), Kernels::best());
    }
}
