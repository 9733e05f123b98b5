//! What each latent of an autoencoder fires on over a dataset view, as a
//! feature browser shows it (after sae_vis and Neuronpedia's feature
//! pages): its firing density and density band, its largest and mean
//! activation, a histogram of its activations, the inputs it fires on most,
//! inputs sampled from intervals of its activation range, each input in its
//! text with every token's activation (when the dataset kept the token ids
//! it was recorded from; `acts record` keeps them), and, given the model,
//! what its decoder row does to tokens ([`effects`]). [`html_page`] lays
//! the result out as one self-contained page.
//!
//! Two passes over the view in order, memory bounded by the options and the
//! autoencoder's size, not by the dataset's: the first counts each latent's
//! firings, its largest activation and strongest inputs; the second, knowing
//! each latent's range, fills the histograms, samples inputs from each
//! interval and reads the activations around every input shown from a ring
//! of the last few rows' codes.
//!
//! The view may read a union of datasets: its inputs are numbered over the
//! union, and each is shown from its own member's text or image list
//! ([`modelbin_format::saev::TokenText::of_union`],
//! [`modelbin_format::saev::Union::images`]), so the union of a dataset's
//! slices is described exactly as the dataset.

pub mod effects;
mod image_pass;
mod page;
mod scan;
mod text;
mod thumbnails;

use std::cmp::Ordering;

pub use effects::{DecoderEffects, Effects, TokenEffect};
pub use page::{html_page, latent_page};
pub use thumbnails::{ModelView, THUMBNAIL_SIDE, Thumbnail, Thumbnails, model_view};

use modelbin_format::saev::{VisionInfo, alone};

use super::Sae;
use super::view::View;
use crate::{Result, SaeError};

/// Bins of each latent's activation histogram, of equal width from 0 to its
/// largest activation.
pub const HISTOGRAM_BINS: usize = 24;
/// Tokens of text shown before the token of a context.
pub const CONTEXT_BEFORE: usize = 12;
/// Tokens of text shown after it.
pub const CONTEXT_AFTER: usize = 4;

/// Which latents to describe and how many inputs each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureOptions {
    /// Inputs kept per latent, the strongest first.
    pub top: usize,
    /// Intervals of equal width the activation range is cut into for
    /// sampling (sae_vis's "quantiles").
    pub quantiles: usize,
    /// Inputs sampled from each interval.
    pub samples: usize,
    /// Only this latent.
    pub latent: Option<usize>,
    /// Without `latent`: the first this many latents in the browsing order
    /// ([`Feature::browsing_order`]); `None` for every latent.
    pub latents: Option<usize>,
}

impl Default for FeatureOptions {
    /// Five strongest inputs and two from each of five intervals, for every
    /// latent.
    fn default() -> Self {
        FeatureOptions {
            top: 5,
            quantiles: 5,
            samples: 2,
            latent: None,
            latents: None,
        }
    }
}

/// How often a latent fires, in bands of firing density (the fraction of
/// inputs it fires on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Band {
    /// Never fires.
    Dead,
    /// Below 1e-5.
    UltraRare,
    /// From 1e-5 to below 1e-3.
    Rare,
    /// From 1e-3 to below 1e-1.
    Typical,
    /// 1e-1 and above.
    Dense,
}

impl Band {
    /// The band of `density`.
    pub fn of(density: f64) -> Band {
        match density {
            d if d <= 0.0 => Band::Dead,
            d if d < 1e-5 => Band::UltraRare,
            d if d < 1e-3 => Band::Rare,
            d if d < 1e-1 => Band::Typical,
            _ => Band::Dense,
        }
    }

    /// Its name: `dead`, `ultra-rare`, `rare`, `typical` or `dense`.
    pub fn name(self) -> &'static str {
        match self {
            Band::Dead => "dead",
            Band::UltraRare => "ultra-rare",
            Band::Rare => "rare",
            Band::Typical => "typical",
            Band::Dense => "dense",
        }
    }

    /// Where the band comes in the browsing order: typical latents are the
    /// likeliest to be interpretable, dense ones the least among those that
    /// fire often enough to read.
    fn rank(self) -> u8 {
        match self {
            Band::Typical => 0,
            Band::Rare => 1,
            Band::Dense => 2,
            Band::UltraRare => 3,
            Band::Dead => 4,
        }
    }
}

impl serde::Serialize for Band {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The text around one input, with the latent's activation on each token.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Shaded {
    /// Each token's text (see `TokenText::pieces`).
    pub tokens: Vec<String>,
    /// The latent's activation on each token (0 where it does not fire or
    /// the token is not in the view), to four significant digits.
    pub acts: Vec<f32>,
    /// Where the input's token is in `tokens`.
    pub at: usize,
}

/// One input a latent fires on.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Context {
    /// The latent's activation.
    pub value: f32,
    /// The input's image (window) in the dataset; over a union, in the
    /// union (its members' images one after the other).
    pub img: u64,
    /// Its layer.
    pub layer: i64,
    /// Its token in the image.
    pub token: u64,
    /// Its text, when the dataset kept its token ids.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub text: Option<Shaded>,
    /// Its image with the latent's activation on every patch, for a
    /// dataset recorded from images.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageActs>,
}

impl Context {
    /// The input as one line of text: its text with the token it sits on
    /// in brackets, shown by itself ([`alone`]: `[␣]` for a space, `[∅]`
    /// for a later byte of a character);
    /// without text, its image (file name) and token, or its coordinates.
    /// Token texts are already visible ([`modelbin_format::saev::visible`]).
    pub fn line(&self) -> String {
        match (&self.text, &self.image) {
            (Some(text), _) => format!(
                "{}[{}]{}",
                text.tokens[..text.at].concat(),
                alone(&text.tokens[text.at]),
                text.tokens[text.at + 1..].concat()
            ),
            (None, Some(image)) => format!(
                "image {} ({}), token {}",
                self.img,
                std::path::Path::new(&image.path)
                    .file_name()
                    .map_or_else(|| image.path.clone().into(), |n| n.to_string_lossy()),
                self.token
            ),
            (None, None) => format!(
                "image {}, layer {}, token {}",
                self.img, self.layer, self.token
            ),
        }
    }
}

/// An image a latent fires on, with its activation on each patch: what a
/// heat map over the image shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImageActs {
    /// The image file, as `images.jsonl` lists it.
    pub path: String,
    /// The patch grid, `[rows, cols]`.
    pub grid: [u64; 2],
    /// The latent's activation on each patch, row by row (0 where it does
    /// not fire), to four significant digits; empty in a `cls` view.
    pub acts: Vec<f32>,
    /// Its activation on the image's CLS token, when the view holds it
    /// (`cls` and `all` views of a dataset with CLS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cls: Option<f32>,
}

/// One interval of a latent's activations, `(low, high]`, with inputs
/// sampled from it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Quantile {
    /// The interval's lower end (excluded).
    pub low: f32,
    /// Its upper end (included).
    pub high: f32,
    /// How many inputs the latent fires on in it (patches, for an image
    /// dataset).
    pub fired: u64,
    /// Inputs drawn from it without bias (by a hash of their position), in
    /// the order of the view: `samples` of them, or every one when it has
    /// fewer. For an image dataset, images with an input in it, each shown
    /// by its strongest input there, as many as there are such images up
    /// to `samples`.
    pub samples: Vec<Context>,
}

impl Quantile {
    /// Interval `q` of `quantiles` equal ones from 0 to a latent's largest
    /// activation `max`, with the inputs the latent fires on in it and the
    /// samples kept from it, `(hash, position in the view, context)`, put
    /// in the view's order.
    fn of_interval(
        q: usize,
        quantiles: usize,
        max: f32,
        fired: u64,
        mut kept: Vec<(u64, u64, Context)>,
    ) -> Quantile {
        kept.sort_by_key(|k| k.1);
        let step = max / quantiles as f32;
        Quantile {
            low: step * q as f32,
            high: if q + 1 == quantiles {
                max
            } else {
                step * (q + 1) as f32
            },
            fired,
            samples: kept.into_iter().map(|k| k.2).collect(),
        }
    }
}

/// What one latent fires on.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Feature {
    /// The latent's index.
    pub latent: usize,
    /// The fraction of inputs it fires on.
    pub density: f64,
    /// The band of that density.
    pub band: Band,
    /// How many inputs it fires on.
    pub fired: u64,
    /// Its largest activation (0 when it never fires).
    pub max: f32,
    /// Its mean activation where it fires.
    pub mean: f32,
    /// Counts of its activations in [`HISTOGRAM_BINS`] bins of equal width
    /// from 0 to `max`.
    pub histogram: Vec<u64>,
    /// Its strongest inputs, strongest first (ties: the earlier input).
    pub top: Vec<Context>,
    /// Inputs sampled from each interval of its range, lowest first.
    pub quantiles: Vec<Quantile>,
    /// What its decoder row does to tokens, when the model was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effects: Option<Effects>,
}

impl Feature {
    /// The order a browser lists latents in by default: by band (typical,
    /// rare, dense, ultra-rare, dead), within a band the density closest to
    /// 1% (on a log scale) first, then by index.
    pub fn browsing_order(&self, other: &Feature) -> Ordering {
        let distance = |f: &Feature| (f.density.max(f64::MIN_POSITIVE).log10() + 2.0).abs();
        self.band
            .rank()
            .cmp(&other.band.rank())
            .then(distance(self).total_cmp(&distance(other)))
            .then(self.latent.cmp(&other.latent))
    }
}

/// What [`features`] found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Features {
    /// Inputs in the view.
    pub examples: u64,
    /// Latents of the autoencoder.
    pub d_sae: usize,
    /// Whether contexts have text (the dataset, or every member of the
    /// union, kept token ids).
    pub has_text: bool,
    /// For a dataset recorded from images, the vision transformer and the
    /// geometry of its input (`vision.json`); then every context is an
    /// image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vision: Option<VisionInfo>,
    /// The latents described, in the browsing order.
    pub latents: Vec<Feature>,
}

/// Encodes every input of `view` with `sae`, twice, and describes the
/// latents `options` choose; with `effects`, also what each one's decoder
/// row does to tokens. `progress` is told the bytes done and the total
/// (both passes) after each batch and returns `false` to stop
/// ([`SaeError::Interrupted`]).
pub fn features(
    sae: &Sae<f32>,
    view: &View,
    options: FeatureOptions,
    effects: Option<&DecoderEffects>,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Features> {
    if let Some(latent) = options.latent
        && latent >= sae.d_sae
    {
        return Err(SaeError::NoSuchLatent {
            latent,
            d_sae: sae.d_sae,
        }
        .into());
    }
    let images = view.union().images()?;
    let per_image = view.examples() / view.union().n_imgs().max(1);
    let mut ticks = scan::Ticks::new(view, progress);
    let totals = scan::first_pass(
        sae,
        view,
        options.top.max(1),
        images.as_ref().map(|_| per_image),
        &mut ticks,
    )?;
    let mut latents = totals.summaries(view.examples());
    latents.sort_by(Feature::browsing_order);
    match options.latent {
        Some(latent) => latents.retain(|f| f.latent == latent),
        None => latents.truncate(options.latents.unwrap_or(usize::MAX)),
    }
    let has_text = match &images {
        Some(images) => {
            image_pass::second_pass(
                sae,
                view,
                images,
                &options,
                &totals,
                &mut latents,
                &mut ticks,
            )?;
            false
        }
        None => scan::second_pass(sae, view, &options, &totals, &mut latents, &mut ticks)?,
    };
    if let Some(effects) = effects {
        let chosen: Vec<usize> = latents.iter().map(|f| f.latent).collect();
        for (feature, effect) in latents.iter_mut().zip(effects.of(sae, &chosen)?) {
            feature.effects = Some(effect);
        }
    }
    Ok(Features {
        examples: view.examples(),
        d_sae: sae.d_sae,
        has_text,
        vision: images.map(|i| i.vision),
        latents,
    })
}

/// `value` to four significant digits, which is what a page shows and
/// keeps a page of many contexts small.
fn four_digits(value: f32) -> f32 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let scale = 10f32.powi(3 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_and_the_browsing_order() {
        let bands = [0.0, 1e-6, 1e-5, 5e-4, 1e-3, 0.05, 0.1, 0.6].map(Band::of);
        assert_eq!(
            bands,
            [
                Band::Dead,
                Band::UltraRare,
                Band::Rare,
                Band::Rare,
                Band::Typical,
                Band::Typical,
                Band::Dense,
                Band::Dense
            ]
        );
        let feature = |latent, density| Feature {
            latent,
            density,
            band: Band::of(density),
            fired: 0,
            max: 0.0,
            mean: 0.0,
            histogram: Vec::new(),
            top: Vec::new(),
            quantiles: Vec::new(),
            effects: None,
        };
        let mut latents = [
            feature(0, 0.5),
            feature(1, 0.0),
            feature(2, 0.002),
            feature(3, 0.01),
            feature(4, 1e-4),
            feature(5, 0.03),
            feature(6, 1e-6),
        ];
        latents.sort_by(Feature::browsing_order);
        let order: Vec<usize> = latents.iter().map(|f| f.latent).collect();
        assert_eq!(order, [3, 5, 2, 4, 0, 6, 1]);
    }

    #[test]
    fn a_context_line_shows_the_token_it_sits_on_by_itself() {
        let context = |tokens: &[&str], at| Context {
            value: 1.0,
            img: 3,
            layer: -1,
            token: 5,
            text: Some(Shaded {
                tokens: tokens.iter().map(|t| t.to_string()).collect(),
                acts: vec![0.0; tokens.len()],
                at,
            }),
            image: None,
        };
        assert_eq!(context(&["a", " ", "b"], 1).line(), "a[␣]b");
        assert_eq!(context(&["a", "⇥", "b"], 1).line(), "a[⇥]b");
        assert_eq!(context(&["x", " the", " end"], 1).line(), "x[␣the] end");
        assert_eq!(context(&["_", "a"], 0).line(), "[_]a");
        assert_eq!(context(&["é", "", "a"], 1).line(), "é[∅]a");
        let coordinates = Context {
            text: None,
            ..context(&[], 0)
        };
        assert_eq!(coordinates.line(), "image 3, layer -1, token 5");
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(four_digits(1.234567), 1.235);
        assert_eq!(four_digits(0.000123456), 0.0001235);
        assert_eq!(four_digits(-98765.0), -98770.0);
        assert_eq!(four_digits(0.0), 0.0);
    }
}
