//! `modelbin sae features`: prints and pages what
//! `modelbin_infer::sae::features` finds.

use std::path::{Path, PathBuf};

use clap::Args;
use modelbin_infer::SaeError;
use modelbin_infer::sae::features::{
    DecoderEffects, Effects, Feature, FeatureOptions, Thumbnails, TokenEffect,
    features as find_features, html_page, model_view,
};

use crate::failure::{Failure, at};
use crate::progress::Progress;
use crate::sae_view::{ViewArgs, open_for_view, sae_failure};
use crate::stderr::errln;
use crate::stdout::{outln, print_json};

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
    /// Strongest inputs kept per latent.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    top: u64,
    /// Intervals of equal width the activation range is cut into, inputs sampled from each.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    quantiles: u64,
    /// Inputs sampled from each interval.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(0..=100))]
    samples: u64,
    /// Without --latent: how many latents to print, mid-density first (the page has every latent).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    latents: u64,
    /// Print one JSON line per latent printed.
    #[arg(long)]
    json: bool,
    /// Also write the feature browser: one self-contained HTML page of every latent.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The model the dataset was recorded from: adds each latent's direct effect on the next
    /// token (TLLM; a language model's directory: W_dec · W_U) or its nearest word pieces
    /// (BERT).
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
}

/// Runs `modelbin sae features`.
pub fn features(args: &FeaturesArgs) -> Result<(), Failure> {
    if let Some(html) = &args.html {
        // Checked before the scan too, which can take minutes.
        modelbin_format::io::output::refuse_input_as_output(&page_inputs(args), html)?;
    }
    let (sae, _, view) = open_for_view(&args.sae, &args.view)?;
    let latents = usize::try_from(args.latents).unwrap_or(usize::MAX);
    let options = FeatureOptions {
        top: args.top as usize,
        quantiles: args.quantiles as usize,
        samples: args.samples as usize,
        latent: args
            .latent
            .map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        latents: if args.html.is_some() {
            None
        } else {
            Some(latents)
        },
    };
    let effects = match &args.model {
        Some(model) => {
            Some(DecoderEffects::open(model, view.dataset()).map_err(|e| sae_failure(e, model))?)
        }
        None => None,
    };
    let union = view.union();
    let images = union.images().map_err(|e| at(union.path(), e))?;
    let untokenized = union.members().iter().find(|m| m.token_ids().is_none());
    if let (None, Some(member)) = (&images, untokenized) {
        errln!(
            "note: {} kept no token ids (tokens.bin), so inputs are shown by coordinates; `modelbin acts record` keeps them",
            member.dir().display()
        );
    }
    let mut progress = Progress::new("scanning");
    let found = find_features(
        &sae,
        &view,
        options,
        effects.as_ref(),
        &mut |done, total| {
            progress.update(done, total);
            true
        },
    );
    progress.finish();
    let found = found.map_err(|e| match e {
        modelbin_infer::Error::Sae(SaeError::NoSuchLatent { latent, d_sae }) => Failure::Usage(
            format!("--latent {latent}: the autoencoder has {d_sae} latents"),
        ),
        e => sae_failure(e, &args.sae),
    })?;
    for feature in found.latents.iter().take(latents) {
        if args.json {
            print_json(feature)?;
        } else {
            print_feature(feature)?;
        }
    }
    if let Some(path) = &args.html {
        let thumbnails = match images {
            Some(images) => {
                let model_view = model_view(&images).map_err(|e| sae_failure(e, &args.sae))?;
                Some(Thumbnails::of_features(&images, &found, &model_view))
            }
            None => None,
        };
        let page = html_page(
            &args.sae.display().to_string(),
            &found,
            None,
            thumbnails.as_ref(),
        );
        modelbin_format::io::output::write_derived(path, page.as_bytes(), &page_inputs(args))
            .map_err(|e| at(path, e))?;
    }
    Ok(())
}

/// A latent as text: its figures, its strongest inputs one a line (the
/// token each sits on in brackets), and with `--model` its decoder
/// effects, the tokens as the page shows them.
fn print_feature(feature: &Feature) -> Result<(), Failure> {
    outln!(
        "latent {} ({}): fires on {:.3}% of inputs, max {:.4}",
        feature.latent,
        feature.band.name(),
        100.0 * feature.density,
        feature.max
    )?;
    for context in &feature.top {
        outln!("  {:>9.4}  {}", context.value, context.line())?;
    }
    let tokens = |list: &[TokenEffect]| -> String {
        let shown: Vec<String> = list
            .iter()
            .map(|t| format!("{} {:.3}", t.token, t.value))
            .collect();
        shown.join(", ")
    };
    match &feature.effects {
        Some(Effects::Logits { raised, lowered }) => {
            outln!("  raises the next token: {}", tokens(raised))?;
            outln!("  lowers the next token: {}", tokens(lowered))?;
        }
        Some(Effects::Nearest { pieces }) => {
            outln!("  nearest word pieces (cosine): {}", tokens(pieces))?;
        }
        None => {}
    }
    Ok(())
}

/// The files the page is made from, which it may not be written over.
fn page_inputs(args: &FeaturesArgs) -> Vec<&Path> {
    let model = args.model.as_deref().into_iter();
    std::iter::once(args.sae.as_path())
        .chain(args.view.paths())
        .chain(model)
        .collect()
}
