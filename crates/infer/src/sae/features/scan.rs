//! The two passes of [`super::features`] over a view, in order.

use modelbin_format::saev::LayerChoice;

use super::text::Layout;
use super::{
    Band, CONTEXT_AFTER, CONTEXT_BEFORE, Context, Feature, FeatureOptions, HISTOGRAM_BINS,
    Quantile, Shaded, four_digits,
};
use crate::sae::Sae;
use crate::sae::view::View;
use crate::{Result, SaeError};

/// Progress over both passes, in bytes read.
pub(super) struct Ticks<'p> {
    done: u64,
    total: u64,
    row_bytes: u64,
    progress: &'p mut dyn FnMut(u64, u64) -> bool,
}

impl<'p> Ticks<'p> {
    /// Progress over two passes of `view`.
    pub fn new(view: &View, progress: &'p mut dyn FnMut(u64, u64) -> bool) -> Self {
        let row_bytes = view.d_in() as u64 * 4;
        Ticks {
            done: 0,
            total: 2 * view.examples() * row_bytes,
            row_bytes,
            progress,
        }
    }

    /// Counts `rows` read; an error when the caller asks to stop.
    pub fn rows(&mut self, rows: usize) -> Result<()> {
        self.done += rows as u64 * self.row_bytes;
        if (self.progress)(self.done, self.total) {
            Ok(())
        } else {
            Err(SaeError::Interrupted.into())
        }
    }
}

/// What the first pass counts for every latent.
pub(super) struct Totals {
    fired: Vec<u64>,
    max: Vec<f32>,
    sum: Vec<f64>,
    /// The strongest (value, example) pairs, strongest first; (value,
    /// image) when counted by image.
    pub best: Vec<Vec<(f32, u64)>>,
}

/// Counts every latent's firings, largest and summed activation and its
/// `top` strongest inputs; with `per_image` (the view's examples per
/// image), its `top` strongest images instead, each by its strongest
/// input, as (value, image).
pub(super) fn first_pass(
    sae: &Sae<f32>,
    view: &View,
    top: usize,
    per_image: Option<u64>,
    ticks: &mut Ticks,
) -> Result<Totals> {
    let mut totals = Totals {
        fired: vec![0; sae.d_sae],
        max: vec![0.0; sae.d_sae],
        sum: vec![0.0; sae.d_sae],
        best: vec![Vec::new(); sae.d_sae],
    };
    // Each latent's strongest input in the image it last fired in, kept
    // until it fires in another (examples come image by image).
    let mut current: Vec<(f32, u64)> = vec![(0.0, u64::MAX); sae.d_sae];
    let mut index = 0u64;
    for batch in view.loader(0, 0, false)? {
        view.check_finite(&batch.data)?;
        let codes = sae.encode(&batch.data, batch.rows);
        for row in 0..batch.rows {
            let example = index + row as u64;
            for (j, value) in codes.active(row) {
                totals.fired[j] += 1;
                totals.max[j] = totals.max[j].max(value);
                totals.sum[j] += f64::from(value);
                match per_image {
                    None => keep_best(&mut totals.best[j], (value, example), top),
                    Some(per_image) => {
                        let img = example / per_image;
                        if current[j].1 == img {
                            current[j].0 = current[j].0.max(value);
                        } else {
                            if current[j].1 != u64::MAX {
                                keep_best(&mut totals.best[j], current[j], top);
                            }
                            current[j] = (value, img);
                        }
                    }
                }
            }
        }
        index += batch.rows as u64;
        ticks.rows(batch.rows)?;
    }
    for (best, last) in totals.best.iter_mut().zip(current) {
        if last.1 != u64::MAX {
            keep_best(best, last, top);
        }
    }
    Ok(totals)
}

impl Totals {
    /// Every latent's figures, without inputs yet.
    pub fn summaries(&self, examples: u64) -> Vec<Feature> {
        (0..self.fired.len())
            .map(|j| {
                let density = self.fired[j] as f64 / examples.max(1) as f64;
                Feature {
                    latent: j,
                    density,
                    band: Band::of(density),
                    fired: self.fired[j],
                    max: self.max[j],
                    mean: (self.sum[j] / self.fired[j].max(1) as f64) as f32,
                    histogram: vec![0; HISTOGRAM_BINS],
                    top: Vec::new(),
                    quantiles: Vec::new(),
                    effects: None,
                }
            })
            .collect()
    }
}

/// Inserts `hit` into `list` (strongest first, the earlier input first
/// among equals), keeping `top` entries.
fn keep_best(list: &mut Vec<(f32, u64)>, hit: (f32, u64), top: usize) {
    if list.len() == top && list.last().is_some_and(|last| last.0 >= hit.0) {
        return;
    }
    let at = list.partition_point(|other| other.0 >= hit.0);
    list.insert(at, hit);
    list.truncate(top);
}

/// Rows the second pass looks at an input after reading it, so that the
/// tokens after it are read too (a `[CLS]` row may sit between any two
/// text tokens of an `all` view, hence the doubling).
const DELAY: usize = 2 * CONTEXT_AFTER + 2;
/// Rows of codes kept: the delay and the rows before an input.
const RING: usize = DELAY + 2 * CONTEXT_BEFORE + 3;

/// The codes of the last [`RING`] rows read, of the latents described
/// (by their slot in the list described).
struct Ring {
    rows: Vec<Vec<(u32, f32)>>,
    /// Rows read so far.
    read: u64,
}

impl Ring {
    fn push(&mut self, entries: impl Iterator<Item = (u32, f32)>) {
        let row = &mut self.rows[(self.read % RING as u64) as usize];
        row.clear();
        row.extend(entries);
        self.read += 1;
    }

    /// Example `i`'s codes, if still kept.
    fn row(&self, i: u64) -> Option<&[(u32, f32)]> {
        (i < self.read && self.read - i <= RING as u64)
            .then(|| self.rows[(i % RING as u64) as usize].as_slice())
    }

    /// The activation of the latent in `slot` on example `i`.
    fn value(&self, i: u64, slot: u32) -> f32 {
        self.row(i)
            .and_then(|row| row.iter().find(|e| e.0 == slot))
            .map_or(0.0, |e| e.1)
    }
}

/// One interval's count and its samples so far: (hash, example, context),
/// the smallest hashes kept.
#[derive(Default)]
struct Interval {
    fired: u64,
    kept: Vec<(u64, u64, Context)>,
}

/// The second pass's accumulators for the latents described.
struct Spread<'a> {
    latents: &'a mut [Feature],
    quantiles: usize,
    samples: usize,
    intervals: Vec<Vec<Interval>>,
    /// The strongest inputs, (example, slot, rank, value), by example.
    wanted: Vec<(u64, u32, usize, f32)>,
    next_wanted: usize,
    top: Vec<Vec<Option<Context>>>,
}

/// Fills the histograms, samples from the intervals and gathers the
/// contexts of the `latents` described; returns whether they have text.
pub(super) fn second_pass(
    sae: &Sae<f32>,
    view: &View,
    options: &FeatureOptions,
    totals: &Totals,
    latents: &mut [Feature],
    ticks: &mut Ticks,
) -> Result<bool> {
    const NONE: u32 = u32::MAX;
    let mut slot_of = vec![NONE; sae.d_sae];
    let mut wanted = Vec::new();
    for (slot, feature) in latents.iter().enumerate() {
        slot_of[feature.latent] = slot as u32;
        for (rank, &(value, example)) in totals.best[feature.latent].iter().enumerate() {
            wanted.push((example, slot as u32, rank, value));
        }
    }
    wanted.sort_by_key(|w| (w.0, w.1));
    let union = view.union();
    let layout = Layout::of(union, view.patches())?;
    let examples = union.view(view.patches(), LayerChoice::One(view.layer()))?;
    let quantiles = options.quantiles.max(1);
    let mut spread = Spread {
        quantiles,
        samples: options.samples,
        intervals: latents
            .iter()
            .map(|f| {
                let n = if f.fired > 0 { quantiles } else { 0 };
                (0..n).map(|_| Interval::default()).collect()
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
    let mut ring = Ring {
        rows: vec![Vec::new(); RING],
        read: 0,
    };
    let visit = |ring: &Ring, spread: &mut Spread, i: u64| -> Result<()> {
        let example = examples.get(i)?;
        let context = |slot: u32, value: f32| Context {
            value,
            img: example.img,
            layer: example.layer,
            token: example.token,
            text: layout.span(example.img, example.token).map(|span| Shaded {
                acts: span
                    .examples
                    .iter()
                    .map(|e| e.map_or(0.0, |e| four_digits(ring.value(e, slot))))
                    .collect(),
                tokens: span.pieces,
                at: span.at,
            }),
            image: None,
        };
        spread.visit(i, ring.row(i).unwrap_or_default(), context);
        Ok(())
    };
    for batch in view.loader(0, 0, false)? {
        let codes = sae.encode(&batch.data, batch.rows);
        for row in 0..batch.rows {
            ring.push(
                codes
                    .active(row)
                    .filter(|&(j, _)| slot_of[j] != NONE)
                    .map(|(j, v)| (slot_of[j], v)),
            );
            if ring.read > DELAY as u64 {
                visit(&ring, &mut spread, ring.read - 1 - DELAY as u64)?;
            }
        }
        ticks.rows(batch.rows)?;
    }
    for i in ring.read.saturating_sub(DELAY as u64)..ring.read {
        visit(&ring, &mut spread, i)?;
    }
    spread.finish();
    Ok(layout.has_text())
}

impl Spread<'_> {
    /// Counts example `i`, whose codes are `row`, and keeps its context
    /// (made by `context(slot, value)`) where it is sampled or among the
    /// strongest.
    fn visit(&mut self, i: u64, row: &[(u32, f32)], context: impl Fn(u32, f32) -> Context) {
        for &(slot, value) in row {
            let feature = &mut self.latents[slot as usize];
            let bin = |n: usize| ((value / feature.max * n as f32) as usize).min(n - 1);
            feature.histogram[bin(HISTOGRAM_BINS)] += 1;
            let interval = &mut self.intervals[slot as usize][bin(self.quantiles)];
            interval.fired += 1;
            let hash = mix(i, feature.latent as u64);
            let full = interval.kept.len() >= self.samples;
            if self.samples == 0 || (full && interval.kept.last().is_some_and(|k| k.0 <= hash)) {
                continue;
            }
            let at = interval.kept.partition_point(|k| k.0 <= hash);
            interval.kept.insert(at, (hash, i, context(slot, value)));
            interval.kept.truncate(self.samples);
        }
        while let Some(&(example, slot, rank, value)) = self.wanted.get(self.next_wanted)
            && example == i
        {
            self.top[slot as usize][rank] = Some(context(slot, value));
            self.next_wanted += 1;
        }
    }

    /// Moves the contexts into the features.
    fn finish(self) {
        let quantiles = self.quantiles;
        for ((feature, intervals), top) in self.latents.iter_mut().zip(self.intervals).zip(self.top)
        {
            feature.top = top.into_iter().flatten().collect();
            feature.quantiles = intervals
                .into_iter()
                .enumerate()
                .map(|(q, interval)| {
                    Quantile::of_interval(q, quantiles, feature.max, interval.fired, interval.kept)
                })
                .collect();
        }
    }
}

/// A hash of (example, latent) that decides which inputs are sampled: the
/// same inputs whatever the batch size (SplitMix64's finaliser).
pub(super) fn mix(example: u64, latent: u64) -> u64 {
    let mut z = example ^ latent.rotate_left(40) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
