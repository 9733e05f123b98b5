//! `modelbin sae features`: prints and pages what
//! `modelbin_infer::sae::features` finds.

use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_infer::SaeError;
use modelbin_infer::sae::features::{
    Feature, FeatureOptions, features as find_features, html_page,
};

use crate::failure::{Failure, at};
use crate::progress::Progress;
use crate::sae_view::{ViewArgs, open_for_view, sae_failure};
use crate::stdout::{errln, outln, print_json};

/// Arguments of `modelbin sae features`.
#[derive(Debug, Args)]
pub struct FeaturesArgs {
    /// The autoencoder's directory.
    sae: PathBuf,
    #[command(flatten)]
    view: ViewArgs,
    /// Show this latent only.
    #[arg(long)]
    latent: Option<u64>,
    /// Inputs shown per latent.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    top: u64,
    /// Without --latent: how many latents to show, the most often firing first.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    latents: u64,
    /// Print one JSON line per latent.
    #[arg(long)]
    json: bool,
    /// Also write one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// Runs `modelbin sae features`.
pub fn features(args: &FeaturesArgs) -> Result<(), Failure> {
    let (sae, _, view) = open_for_view(&args.sae, &args.view)?;
    let options = FeatureOptions {
        top: args.top as usize,
        latent: args
            .latent
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        latents: usize::try_from(args.latents).unwrap_or(usize::MAX),
    };
    if view.dataset().token_ids().is_none() {
        errln!(
            "note: {} kept no token ids (tokens.bin), so inputs are shown by coordinates; `modelbin acts record` keeps them",
            view.dataset().dir().display()
        );
    }
    let mut progress = Progress::new("scanning");
    let found = find_features(&sae, &view, options, &mut |done, total| {
        progress.update(done, total);
        true
    });
    progress.finish();
    let found = found.map_err(|e| match e {
        modelbin_infer::Error::Sae(SaeError::NoSuchLatent { latent, d_sae }) => Failure::Usage(
            format!("--latent {latent}: the autoencoder has {d_sae} latents"),
        ),
        e => sae_failure(e, &args.sae),
    })?;
    for feature in &found.features {
        if args.json {
            print_json(feature)?;
        } else {
            print_feature(feature)?;
        }
    }
    if let Some(path) = &args.html {
        write_html(path, &args.sae, &found.features)?;
    }
    Ok(())
}

fn print_feature(feature: &Feature) -> Result<(), Failure> {
    outln!(
        "latent {}: fires on {:.3}% of inputs",
        feature.latent,
        100.0 * feature.density
    )?;
    for hit in &feature.top {
        match &hit.context {
            Some([before, token, after]) => {
                outln!("  {:>9.4}  {before}[{token}]{after}", hit.value)
            }
            None => outln!(
                "  {:>9.4}  image {}, layer {}, token {}",
                hit.value,
                hit.img,
                hit.layer,
                hit.token
            ),
        }?;
    }
    Ok(())
}

/// Writes [`html_page`] to `path`, atomically.
fn write_html(path: &Path, sae: &Path, features: &[Feature]) -> Result<(), Failure> {
    let page = html_page(&sae.display().to_string(), features);
    let mut file = modelbin_format::output::OutputFile::create(path).map_err(|e| at(path, e))?;
    std::io::Write::write_all(&mut file, page.as_bytes())
        .map_err(|e| at(path, modelbin_format::Error::io(path, e)))?;
    file.commit().map_err(|e| at(path, e))
}
