//! `modelbin sae features`: for each latent, the inputs that activate it
//! most, shown with their surrounding text when the dataset kept the token
//! ids it was recorded from (`acts record` keeps them).

use std::path::PathBuf;

use clap::Args;
use modelbin_format::saev::LayerChoice;

use crate::failure::{Failure, at, invalid};
use crate::progress::Progress;
use crate::sae::ViewArgs;
use crate::stdout::{outln, print_json};
use crate::token_text::TokenText;

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

/// One input that activates a latent.
#[derive(Debug, Clone, serde::Serialize)]
struct Hit {
    value: f32,
    img: u64,
    layer: i64,
    token: u64,
    /// The text before the token, the token, and the text after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<[String; 3]>,
}

/// A latent with its density and strongest inputs.
#[derive(Debug, serde::Serialize)]
struct Feature {
    latent: usize,
    density: f64,
    top: Vec<Hit>,
}

/// Runs `modelbin sae features`.
pub fn features(args: &FeaturesArgs) -> Result<(), Failure> {
    let (sae, _, opened) = crate::sae::open_for_view(&args.sae, &args.view)?;
    let dataset = opened.dataset();
    let (d_in, examples) = (opened.d_in(), opened.examples());
    let failure = |e| crate::sae::sae_failure(e, &args.sae);
    if let Some(latent) = args.latent
        && latent >= sae.d_sae as u64
    {
        return Err(Failure::Usage(format!(
            "--latent {latent}: the autoencoder has {} latents",
            sae.d_sae
        )));
    }
    let text = TokenText::of(dataset)?;
    if text.is_none() {
        crate::stdout::errln!(
            "note: {} kept no token ids (tokens.bin), so inputs are shown by coordinates; `modelbin acts record` keeps them",
            dataset.dir().display()
        );
    }
    let top = args.top as usize;
    // Per latent: firing count and the strongest (value, example index).
    let mut fired = vec![0u64; sae.d_sae];
    let mut best: Vec<Vec<(f32, u64)>> = vec![Vec::new(); sae.d_sae];
    let mut progress = Progress::new("scanning");
    let mut index = 0u64;
    for batch in opened.loader(0, 0, false).map_err(failure)? {
        opened.check_finite(&batch.data).map_err(failure)?;
        let codes = sae.encode(&batch.data, batch.rows);
        for row in 0..batch.rows {
            for (j, value) in codes.active(row) {
                fired[j] += 1;
                keep_best(&mut best[j], (value, index + row as u64), top);
            }
        }
        index += batch.rows as u64;
        progress.update(index * d_in as u64 * 4, examples * d_in as u64 * 4);
    }
    progress.finish();
    let mut chosen: Vec<usize> = match args.latent {
        Some(latent) => vec![latent as usize],
        None => (0..sae.d_sae).filter(|&j| fired[j] > 0).collect(),
    };
    chosen.sort_by_key(|&j| (std::cmp::Reverse(fired[j]), j));
    if args.latent.is_none() {
        chosen.truncate(args.latents as usize);
    }
    let view = dataset
        .view(args.view.patches.into(), LayerChoice::One(args.view.layer))
        .map_err(invalid)?;
    let mut features = Vec::with_capacity(chosen.len());
    for j in chosen {
        let mut hits = Vec::with_capacity(best[j].len());
        for &(value, i) in &best[j] {
            let example = view.get(i).map_err(invalid)?;
            let context = text
                .as_ref()
                .map(|text| text.context(example.img, example.token));
            hits.push(Hit {
                value,
                img: example.img,
                layer: example.layer,
                token: example.token,
                context,
            });
        }
        features.push(Feature {
            latent: j,
            density: fired[j] as f64 / examples.max(1) as f64,
            top: hits,
        });
    }
    for feature in &features {
        if args.json {
            print_json(feature)?;
        } else {
            print_feature(feature)?;
        }
    }
    if let Some(path) = &args.html {
        write_html(path, &args.sae, &features)?;
    }
    Ok(())
}

/// Inserts `hit` into `list` (strongest first), keeping `top` entries.
fn keep_best(list: &mut Vec<(f32, u64)>, hit: (f32, u64), top: usize) {
    if list.len() == top && list.last().is_some_and(|last| last.0 >= hit.0) {
        return;
    }
    let at = list.partition_point(|other| other.0 >= hit.0);
    list.insert(at, hit);
    list.truncate(top);
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

/// One page with a section per latent; contexts with the token marked.
fn write_html(
    path: &std::path::Path,
    sae: &std::path::Path,
    features: &[Feature],
) -> Result<(), Failure> {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut page = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Features of {0}</title>\
         <style>body{{font-family:sans-serif;max-width:60em;margin:auto}}\
         td{{font-family:monospace;white-space:pre;padding:0 .5em}}mark{{background:#fd6}}</style>\
         <h1>Features of {0}</h1>",
        escape(&sae.display().to_string())
    );
    for feature in features {
        page.push_str(&format!(
            "<h2 id=\"latent-{0}\">Latent {0}</h2><p>fires on {1:.3}% of inputs</p><table>",
            feature.latent,
            100.0 * feature.density
        ));
        for hit in &feature.top {
            let shown = match &hit.context {
                Some([before, token, after]) => format!(
                    "{}<mark>{}</mark>{}",
                    escape(before),
                    escape(token),
                    escape(after)
                ),
                None => format!(
                    "image {}, layer {}, token {}",
                    hit.img, hit.layer, hit.token
                ),
            };
            page.push_str(&format!(
                "<tr><td>{:.4}</td><td>{shown}</td></tr>",
                hit.value
            ));
        }
        page.push_str("</table>");
    }
    let mut file = modelbin_format::output::OutputFile::create(path).map_err(|e| at(path, e))?;
    std::io::Write::write_all(&mut file, page.as_bytes())
        .map_err(|e| at(path, modelbin_format::Error::io(path, e)))?;
    file.commit().map_err(|e| at(path, e))
}
