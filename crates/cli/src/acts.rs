//! `modelbin acts`: SAEV activation datasets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Subcommand;
use modelbin_format::inspect::Summary;
use modelbin_format::saev::{self, LayerChoice, Loader, LoaderOptions, Metadata, Patches};

use crate::args::OutputPath;
use crate::failure::{Failure, at, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};
use crate::verify::{Checked, ImageFiles};

#[derive(Debug, Subcommand)]
pub enum ActsCommand {
    /// Summarise a dataset (same as `modelbin inspect DIR`).
    Inspect {
        /// The dataset directory (`<root>/<HASH>`).
        dir: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check metadata, hash and shards; `--values` also counts NaN/Inf per layer.
    Verify {
        /// The dataset directory.
        dir: PathBuf,
        /// Scan every value.
        #[arg(long)]
        values: bool,
        /// Print a JSON verdict.
        #[arg(long)]
        json: bool,
    },
    /// Print one activation vector as JSON.
    Get {
        /// The dataset directory.
        dir: PathBuf,
        /// Image index.
        #[arg(long)]
        img: u64,
        /// Layer value as recorded (e.g. -2).
        #[arg(long, allow_negative_numbers = true)]
        layer: i64,
        /// Token index (0 is CLS when the dataset has one).
        #[arg(long)]
        token: u64,
        /// Accepted for uniformity: the output is always JSON.
        #[arg(long)]
        json: bool,
    },
    /// Per-layer mean, std, NaN and Inf in one streaming pass.
    Stats {
        /// The dataset directory.
        dir: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure loader throughput over one epoch.
    Bench {
        /// The dataset directory.
        dir: PathBuf,
        /// Examples per batch.
        #[arg(long, default_value_t = 4096)]
        batch_size: usize,
        /// I/O threads (at most 256).
        #[arg(long, default_value_t = 2, value_parser = crate::args::parse_threads)]
        threads: usize,
        /// Shuffle buffer in MiB.
        #[arg(long, default_value_t = 64)]
        buffer_mib: u64,
        /// Use the ordered loader instead of the shuffled one.
        #[arg(long)]
        ordered: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Record a model's residual stream over text files as a dataset.
    Record(crate::record::RecordArgs),
    /// Print the token ids (and their text) an image was recorded from.
    Tokens {
        /// The dataset directory.
        dir: PathBuf,
        /// Image index.
        #[arg(long)]
        img: u64,
        /// Print JSON: {img, ids, text}.
        #[arg(long)]
        json: bool,
    },
    /// Write a synthetic dataset (random normal values) under a root directory.
    WriteSynthetic {
        /// The root directory, where `<HASH>/` is created (-o ROOT, or positional).
        #[command(flatten)]
        root: OutputPath,
        /// Images.
        #[arg(long)]
        n_imgs: u64,
        /// Layers recorded, comma-separated (e.g. -2,-1).
        #[arg(
            long,
            value_delimiter = ',',
            allow_hyphen_values = true,
            default_value = "-2,-1"
        )]
        layers: Vec<i64>,
        /// Image patches per image.
        #[arg(long, default_value_t = 49)]
        patches: u64,
        /// Leave out the CLS token.
        #[arg(long)]
        no_cls: bool,
        /// Activation width.
        #[arg(long, default_value_t = 768)]
        d_vit: u64,
        /// Vectors per shard budget.
        #[arg(long, default_value_t = 2_400_000)]
        max_patches_per_shard: u64,
        /// Seed of the values (also recorded in the metadata).
        #[arg(long, default_value_t = 0)]
        seed: i64,
        /// Draw one random image and write it for every image, so the time
        /// measured is the writer's, not the random generator's.
        #[arg(long)]
        repeat: bool,
        /// Print a JSON report.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: ActsCommand) -> Result<(), Failure> {
    match command {
        ActsCommand::Inspect { dir, json } => {
            crate::inspect::run(&crate::inspect::InspectArgs::dataset(dir, json))
        }
        ActsCommand::Verify { dir, values, json } => verify(&dir, values, json),
        ActsCommand::Record(args) => crate::record::record(&args),
        ActsCommand::Tokens { dir, img, json } => tokens(&dir, img, json),
        ActsCommand::Get {
            dir,
            img,
            layer,
            token,
            ..
        } => {
            let dataset = open(&dir)?;
            print_json(&dataset.vector(img, layer, token).map_err(invalid)?)?;
            Ok(())
        }
        ActsCommand::Stats { dir, json } => stats(&dir, json),
        ActsCommand::Bench {
            dir,
            batch_size,
            threads,
            buffer_mib,
            ordered,
            json,
        } => {
            let options = LoaderOptions {
                batch_size,
                threads,
                buffer_bytes: buffer_mib << 20,
                ..LoaderOptions::default()
            };
            bench(&dir, options, ordered, json)
        }
        ActsCommand::WriteSynthetic {
            root,
            n_imgs,
            layers,
            patches,
            no_cls,
            d_vit,
            max_patches_per_shard,
            seed,
            repeat,
            json,
        } => {
            let metadata = Metadata {
                vit_family: "synthetic".into(),
                vit_ckpt: "modelbin acts write-synthetic".into(),
                layers,
                n_patches_per_img: patches,
                cls_token: !no_cls,
                d_vit,
                seed,
                n_imgs,
                max_patches_per_shard,
                data: "synthetic normal(0, 1) values".into(),
            };
            write_synthetic(root.path()?, metadata, repeat, json)
        }
    }
}

fn open(dir: &std::path::Path) -> Result<saev::Dataset, Failure> {
    if crate::inspect::is_not_a_dataset(dir) {
        return Err(Failure::Invalid(crate::inspect::unknown_directory(dir)));
    }
    saev::open(dir).map_err(|e| at(dir, e))
}

fn verify(dir: &std::path::Path, values: bool, json: bool) -> Result<(), Failure> {
    crate::verify::report(dir, check(dir, values), json)
}

/// Opens the dataset and, with `values`, scans it for NaN and Inf.
fn check(dir: &std::path::Path, values: bool) -> Result<Checked, Failure> {
    let dataset = open(dir)?;
    dataset.verify().map_err(|e| at(dir, e))?;
    let image_files = ImageFiles::of(&dataset).map_err(|e| at(dir, e))?;
    let summary = Summary::Saev(modelbin_format::saev::SaevSummary::of(&dataset));
    if dataset.has_extra_empty_shard() {
        crate::stdout::errln!(
            "warning: {}: an extra all-zero shard past the last image (the reference writer adds one when S divides n_imgs); accepted",
            dir.display()
        );
    }
    if values {
        let mut progress = Progress::new("scanning");
        let verified = dataset.verify_values(&mut |done, total| progress.update(done, total));
        progress.finish();
        match verified {
            Ok(()) => {}
            // Named by the path as given (a root stands for its dataset).
            Err(modelbin_format::Error::Saev(modelbin_format::SaevError::NonFiniteValues {
                layers,
                ..
            })) => {
                let layers: Vec<String> = layers.iter().map(ToString::to_string).collect();
                return Err(Failure::Invalid(format!(
                    "{}: {}",
                    dir.display(),
                    layers.join("; ")
                )));
            }
            Err(e) => return Err(at(dir, e)),
        }
    }
    Ok(Checked {
        summary,
        image_files,
    })
}

/// `acts tokens`: the ids of one image's window and their text.
fn tokens(dir: &std::path::Path, img: u64, json: bool) -> Result<(), Failure> {
    let dataset = open(dir)?;
    let Some(text) = modelbin_format::saev::TokenText::of(&dataset)? else {
        return Err(Failure::Invalid(format!(
            "{}: the dataset kept no token ids (tokens.bin; `modelbin acts record` writes it)",
            dir.display()
        )));
    };
    let n_imgs = dataset.metadata().n_imgs;
    let Some(ids) = text.window(img) else {
        return Err(Failure::Usage(format!(
            "--img {img}: the dataset has {n_imgs} images"
        )));
    };
    if let Some((at, id)) = text.first_unknown(&ids) {
        return Err(Failure::Invalid(format!(
            "{}: tokens.bin holds id {id} at position {at} of image {img}, which names no token of the recording's model",
            dir.display()
        )));
    }
    let shown = text.render(&ids);
    if json {
        print_json(&serde_json::json!({"img": img, "ids": ids, "text": shown}))?;
    } else {
        let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
        outln!("{}", ids.join(" "))?;
        outln!("{}", modelbin_format::saev::visible(&shown))?;
    }
    Ok(())
}

fn stats(dir: &std::path::Path, json: bool) -> Result<(), Failure> {
    let dataset = open(dir)?;
    let mut progress = Progress::new("scanning");
    let stats = dataset.layer_stats(&mut |done, total| progress.update(done, total));
    progress.finish();
    if json {
        print_json(&stats)?;
    } else {
        outln!(
            "{:>7} {:>12} {:>12} {:>14} {:>6} {:>6}",
            "LAYER",
            "MEAN",
            "STD",
            "VALUES",
            "NAN",
            "INF"
        )?;
        for s in &stats {
            outln!(
                "{:>7} {:>12.6} {:>12.6} {:>14} {:>6} {:>6}",
                s.layer,
                s.mean,
                s.std,
                s.count,
                s.nan,
                s.inf
            )?;
        }
    }
    Ok(())
}

fn bench(
    dir: &std::path::Path,
    options: LoaderOptions,
    ordered: bool,
    json: bool,
) -> Result<(), Failure> {
    let dataset = Arc::new(open(dir)?);
    let started = Instant::now();
    let loader = if ordered {
        Loader::ordered(dataset.clone(), Patches::All, LayerChoice::All, options)
    } else {
        Loader::shuffled(dataset.clone(), Patches::All, LayerChoice::All, options)
    }
    .map_err(invalid)?;
    let (mut vectors, mut checksum) = (0u64, 0.0f32);
    for batch in loader {
        vectors += batch.rows as u64;
        checksum += batch.data[0];
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes = vectors * dataset.metadata().d_vit * 4;
    #[derive(serde::Serialize)]
    struct Report {
        loader: &'static str,
        vectors: u64,
        bytes: u64,
        seconds: f64,
        gb_per_second: f64,
        vectors_per_second: f64,
        checksum: f32,
    }
    let report = Report {
        loader: if ordered { "ordered" } else { "shuffled" },
        vectors,
        bytes,
        seconds,
        gb_per_second: bytes as f64 / seconds / 1e9,
        vectors_per_second: vectors as f64 / seconds,
        checksum,
    };
    if json {
        print_json(&report)?;
    } else {
        outln!(
            "{} loader: {} vectors ({:.2} GB) in {:.3} s: {:.2} GB/s, {:.0} vectors/s",
            report.loader,
            vectors,
            bytes as f64 / 1e9,
            seconds,
            report.gb_per_second,
            report.vectors_per_second
        )?;
    }
    Ok(())
}

fn write_synthetic(
    root: &std::path::Path,
    metadata: Metadata,
    repeat: bool,
    json: bool,
) -> Result<(), Failure> {
    let values = metadata.vectors_per_img() as f64 * metadata.d_vit as f64;
    crate::work::check_memory(values * 4.0 * 2.0, "one image of this dataset")?;
    let bytes = metadata.n_imgs * metadata.vectors_per_img() * metadata.d_vit * 4;
    let n_imgs = metadata.n_imgs;
    let mut progress = Progress::new("writing");
    let started = Instant::now();
    let dir = saev::write_synthetic(root, metadata, repeat, &mut |done, total| {
        progress.update(done, total)
    })
    .map_err(invalid)?;
    progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    if json {
        print_json(&serde_json::json!({
            "path": dir, "images": n_imgs, "bytes_written": bytes, "seconds": seconds
        }))?;
    } else {
        outln!(
            "{}: {n_imgs} images, {bytes} bytes in {seconds:.2} s ({:.2} GB/s)",
            dir.display(),
            bytes as f64 / seconds / 1e9
        )?;
    }
    Ok(())
}
