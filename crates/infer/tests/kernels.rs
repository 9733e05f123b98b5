//! The kernel tiers as a library setting: the tiers a program sets before
//! the first model loads are the ones its models run, and they stay fixed.
//! A test binary of its own, because the setting is made once per process.

use std::path::PathBuf;

use modelbin_infer::{
    Embedder, Error, F32Tier, INT8_TIER_VARIABLE, Int8Kernel, Kernels, set_kernels,
};

#[test]
fn the_tiers_set_are_the_tiers_models_run() {
    // Tiers this CPU lacks are refused, and leave the setting open.
    for f32 in F32Tier::ALL.into_iter().filter(|t| !t.is_available()) {
        let kernels = Kernels {
            f32,
            int8: Int8Kernel::Portable,
        };
        assert!(
            matches!(set_kernels(kernels), Err(Error::KernelUnavailable(name)) if name == f32.name())
        );
    }
    for int8 in Int8Kernel::ALL.into_iter().filter(|k| !k.is_available()) {
        let kernels = Kernels {
            f32: F32Tier::Portable,
            int8,
        };
        assert!(
            matches!(set_kernels(kernels), Err(Error::KernelUnavailable(name)) if name == int8.name())
        );
    }
    // Not the defaults where this CPU has wider ones: AVX2 f32 kernels
    // (narrower than AVX-512) and the portable int8 kernel.
    let f32 = if F32Tier::Avx2.is_available() {
        F32Tier::Avx2
    } else {
        F32Tier::Portable
    };
    let wanted = Kernels {
        f32,
        int8: Int8Kernel::Portable,
    };
    set_kernels(wanted).unwrap();
    // The same tiers again are no change.
    set_kernels(wanted).unwrap();
    assert_eq!(modelbin_infer::elementwise_instruction_set(), f32.name());
    let chosen = Kernels::chosen().unwrap();
    assert_eq!(chosen.f32, f32);
    // The environment variable overrides the int8 tier.
    let int8 = match std::env::var(INT8_TIER_VARIABLE) {
        Ok(name) => name.parse().unwrap(),
        Err(_) => Int8Kernel::Portable,
    };
    assert_eq!(chosen.int8, int8);

    // A model loaded now runs the chosen int8 kernel.
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-data/all-MiniLM-L6-v2");
    assert!(
        dir.join("model.safetensors").is_file(),
        "{} is missing: run scripts/fetch-test-data.sh (scripts/test.sh does)",
        dir.display()
    );
    let embedder = Embedder::open_model(&dir).unwrap();
    assert_eq!(embedder.encoder().int8_kernel(), int8);

    // Other tiers, once chosen, are a typed error naming the tiers in use.
    let other = Kernels {
        f32: F32Tier::Portable,
        int8: Int8Kernel::best(),
    };
    if other != wanted {
        let refused = set_kernels(other);
        assert!(
            matches!(refused, Err(Error::KernelsAlreadyChosen { f32: set, .. }) if set == f32.name()),
            "{refused:?}"
        );
    }
}
