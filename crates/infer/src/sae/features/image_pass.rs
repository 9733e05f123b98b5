//! The second pass of [`super::features`] over an image dataset: the view
//! read image by image, each latent's activation on every patch of the
//! images it shows.

use modelbin_format::saev::{Images, Patches};

use super::scan::{Ticks, Totals, mix};
use super::{Context, Feature, FeatureOptions, HISTOGRAM_BINS, ImageActs, Quantile, four_digits};
use crate::Result;
use crate::sae::Sae;
use crate::sae::view::View;

/// One image of a latent kept so far: (hash, image, context).
type Kept = (u64, u64, Context);

/// What the pass keeps for the latents described.
struct Gathered<'a> {
    latents: &'a mut [Feature],
    quantiles: usize,
    samples: usize,
    /// Per latent (slot), per interval: inputs in it and, of the images
    /// with an input in it, those with the smallest hashes.
    intervals: Vec<Vec<(u64, Vec<Kept>)>>,
    /// The strongest images, (image, slot, rank), by image.
    wanted: Vec<(u64, u32, usize)>,
    next_wanted: usize,
    top: Vec<Vec<Option<Context>>>,
}

/// Where an image's rows of the view lie: the patch of each row (`None`
/// for CLS) and the grid's geometry.
struct Rows {
    per_image: usize,
    cls: bool,
    patches: Patches,
    grid: [u64; 2],
    layer: i64,
}

impl Rows {
    /// The patch of row `row` of an image in the view; `None` for CLS.
    fn patch(&self, row: usize) -> Option<usize> {
        match self.patches {
            Patches::Cls => None,
            Patches::Image => Some(row),
            Patches::All if self.cls => row.checked_sub(1),
            Patches::All => Some(row),
        }
    }

    /// The physical token of row `row` (0 is CLS when recorded).
    fn token(&self, row: usize) -> u64 {
        match self.patches {
            Patches::Cls => 0,
            Patches::Image => row as u64 + u64::from(self.cls),
            Patches::All => row as u64,
        }
    }
}

/// Fills the histograms and, per latent described, the top images and the
/// images sampled from each interval, each with the latent's activation on
/// every patch (and on CLS, when the view holds it).
pub(super) fn second_pass(
    sae: &Sae<f32>,
    view: &View,
    images: &Images,
    options: &FeatureOptions,
    totals: &Totals,
    latents: &mut [Feature],
    ticks: &mut Ticks,
) -> Result<()> {
    const NONE: u32 = u32::MAX;
    let mut slot_of = vec![NONE; sae.d_sae];
    let mut wanted = Vec::new();
    for (slot, feature) in latents.iter().enumerate() {
        slot_of[feature.latent] = slot as u32;
        for (rank, &(_, img)) in totals.best[feature.latent].iter().enumerate() {
            wanted.push((img, slot as u32, rank));
        }
    }
    wanted.sort_unstable();
    let rows = Rows {
        per_image: (view.examples() / view.union().n_imgs().max(1)) as usize,
        cls: view.union().metadata().cls_token,
        patches: view.patches(),
        grid: images.vision.patch_grid,
        layer: view.layer(),
    };
    let quantiles = options.quantiles.max(1);
    let mut gathered = Gathered {
        quantiles,
        samples: options.samples,
        intervals: latents
            .iter()
            .map(|f| {
                let n = if f.fired > 0 { quantiles } else { 0 };
                (0..n).map(|_| (0, Vec::new())).collect()
            })
            .collect(),
        top: latents
            .iter()
            .map(|f| vec![None; totals.best[f.latent].len()])
            .collect(),
        latents,
        wanted,
        next_wanted: 0,
    };
    // The current image's firings of the latents described: (slot, row,
    // value).
    let mut firings: Vec<(u32, u32, f32)> = Vec::new();
    let (mut img, mut row) = (0u64, 0usize);
    for batch in view.loader(0, 0, false)? {
        let codes = sae.encode(&batch.data, batch.rows);
        for r in 0..batch.rows {
            firings.extend(
                codes
                    .active(r)
                    .filter(|&(j, _)| slot_of[j] != NONE)
                    .map(|(j, v)| (slot_of[j], row as u32, v)),
            );
            row += 1;
            if row == rows.per_image {
                gathered.image(img, &mut firings, &rows, images);
                firings.clear();
                (img, row) = (img + 1, 0);
            }
        }
        ticks.rows(batch.rows)?;
    }
    gathered.finish();
    Ok(())
}

impl Gathered<'_> {
    /// Counts image `img`'s `firings` (sorted here by latent) and keeps
    /// the image for each latent that shows it: among its top images, and
    /// as a sample of every interval it has an input in, shown there by its
    /// strongest input in that interval. An interval counts inputs
    /// (patches) and samples images, so an image is offered to each
    /// interval its patches fall in, not only to its strongest patch's:
    /// else an interval of many patches, all in images with a stronger
    /// patch elsewhere, would count them and show none.
    fn image(&mut self, img: u64, firings: &mut [(u32, u32, f32)], rows: &Rows, images: &Images) {
        let quantiles = self.quantiles;
        firings.sort_unstable_by_key(|f| (f.0, f.1));
        // Per interval, this image's strongest input in it.
        let mut in_interval: Vec<Option<(u32, u32, f32)>> = vec![None; quantiles];
        for group in firings.chunk_by(|a, b| a.0 == b.0) {
            let slot = group[0].0;
            let feature = &mut self.latents[slot as usize];
            let bin = |value: f32, n: usize| ((value / feature.max * n as f32) as usize).min(n - 1);
            in_interval.fill(None);
            let mut strongest = group[0];
            for &firing in group {
                feature.histogram[bin(firing.2, HISTOGRAM_BINS)] += 1;
                let q = bin(firing.2, quantiles);
                self.intervals[slot as usize][q].0 += 1;
                // The first row among equals.
                if in_interval[q].is_none_or(|best| firing.2 > best.2) {
                    in_interval[q] = Some(firing);
                }
                if firing.2 > strongest.2 {
                    strongest = firing;
                }
            }
            let context = |shown: (u32, u32, f32)| {
                let (grid, cls) = shading(group, rows);
                Context {
                    value: shown.2,
                    img,
                    layer: rows.layer,
                    token: rows.token(shown.1 as usize),
                    text: None,
                    image: Some(ImageActs {
                        path: images.entries[img as usize].path.clone(),
                        grid: rows.grid,
                        acts: grid,
                        cls,
                    }),
                }
            };
            for (q, shown) in in_interval.iter().enumerate() {
                let Some(shown) = *shown else { continue };
                let interval = &mut self.intervals[slot as usize][q].1;
                // A hash of the image and the interval, so that an image
                // drawn for one interval is not thereby drawn for all.
                let hash = mix(img * quantiles as u64 + q as u64, feature.latent as u64);
                let full = interval.len() >= self.samples;
                if self.samples > 0 && !(full && interval.last().is_some_and(|k| k.0 <= hash)) {
                    let at = interval.partition_point(|k| k.0 <= hash);
                    interval.insert(at, (hash, img, context(shown)));
                    interval.truncate(self.samples);
                }
            }
            while let Some(&(wanted, wanted_slot, rank)) = self.wanted.get(self.next_wanted)
                && (wanted, wanted_slot) <= (img, slot)
            {
                if (wanted, wanted_slot) == (img, slot) {
                    self.top[slot as usize][rank] = Some(context(strongest));
                }
                self.next_wanted += 1;
            }
        }
        // Wanted images of latents that did not fire here cannot be (the
        // first pass saw them fire); skip past this image all the same.
        while self
            .wanted
            .get(self.next_wanted)
            .is_some_and(|w| w.0 <= img)
        {
            self.next_wanted += 1;
        }
    }

    /// Moves the images into the features.
    fn finish(self) {
        let quantiles = self.quantiles;
        for ((feature, intervals), top) in self.latents.iter_mut().zip(self.intervals).zip(self.top)
        {
            feature.top = top.into_iter().flatten().collect();
            feature.quantiles = intervals
                .into_iter()
                .enumerate()
                .map(|(q, (fired, kept))| {
                    Quantile::of_interval(q, quantiles, feature.max, fired, kept)
                })
                .collect();
        }
    }
}

/// A latent's activation on every patch of an image (row-major over the
/// grid; empty for a CLS view) and on its CLS token when the view holds it,
/// from the image's firings of the latent.
fn shading(group: &[(u32, u32, f32)], rows: &Rows) -> (Vec<f32>, Option<f32>) {
    let patches = match rows.patches {
        Patches::Cls => 0,
        _ => (rows.grid[0] * rows.grid[1]) as usize,
    };
    let mut grid = vec![0.0; patches];
    let has_cls = rows.cls && rows.patches != Patches::Image;
    let mut cls = has_cls.then_some(0.0);
    for &(_, row, value) in group {
        match rows.patch(row as usize) {
            Some(patch) => grid[patch] = four_digits(value),
            None => cls = Some(four_digits(value)),
        }
    }
    (grid, cls)
}
