//! `modelbin acts`: SAEV activation datasets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Subcommand;
use modelbin_format::inspect::Summary;
use modelbin_format::saev::{
    self, LayerChoice, Loader, LoaderOptions, Metadata, Patches, Union, UnionSummary,
};

use crate::args::OutputPath;
use crate::failure::{Failure, at, invalid};
use crate::progress::Progress;
use crate::stdout::{outln, print_json};
use crate::verify::{Checked, ImageFiles};

#[derive(Debug, Subcommand)]
pub enum ActsCommand {
    /// Summarise a dataset (same as `modelbin inspect DIR`), or a union of
    /// several (repeated paths, or a union manifest).
    Inspect {
        /// The dataset directory (`<root>/<HASH>`); several, or a union
        /// manifest, are summarised as one union.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check metadata, hash and shards; `--values` also counts NaN/Inf per
    /// layer. Several datasets, or a union manifest, are checked as a union:
    /// each member, then that they agree (and match the manifest).
    Verify {
        /// The dataset directory; several, or a union manifest, form a union.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
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
    /// Write the manifest `OUT/union.json` of datasets read as one (in the
    /// order given; they must lie below OUT and agree on model, layers,
    /// geometry and width), check it by reading it back, and print its path.
    Union {
        /// The member datasets (or union manifests), in order.
        #[arg(required = true, num_args = 1..)]
        members: Vec<PathBuf>,
        /// The union's directory (usually the members' SAEV root).
        #[arg(short, long)]
        out: PathBuf,
        /// Print the union's summary as JSON.
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
        ActsCommand::Inspect { dirs, json } => match one_dataset(dirs) {
            Ok(dir) => crate::inspect::run(&crate::inspect::InspectArgs::dataset(dir, json)),
            Err(dirs) => inspect_union(&dirs, json),
        },
        ActsCommand::Verify { dirs, values, json } => match one_dataset(dirs) {
            Ok(dir) => verify(&dir, values, json),
            Err(dirs) => verify_union(&dirs, values, json),
        },
        ActsCommand::Union { members, out, json } => {
            let file = saev::write_union(&out, &members).map_err(|e| at(&out, e))?;
            let union = Union::open(&[&file]).map_err(|e| at(&file, e))?;
            if json {
                print_json(&UnionSummary::of(&union))?;
            } else {
                outln!("{}", UnionSummary::of(&union).one_line())?;
                outln!("{}", file.display())?;
            }
            Ok(())
        }
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

/// The one dataset `paths` names, or the paths back when they form a union
/// (several, or a manifest).
fn one_dataset(mut paths: Vec<PathBuf>) -> Result<PathBuf, Vec<PathBuf>> {
    match paths.as_slice() {
        [one] if !Union::is_manifest(one) => Ok(paths.remove(0)),
        _ => Err(paths),
    }
}

/// Opens the union of `paths`, errors named by the first path.
fn open_union(paths: &[PathBuf]) -> Result<Union, Failure> {
    Union::open(paths).map_err(|e| at(&paths[0], e))
}

/// `acts inspect` of a union: the summary, then one line per member.
fn inspect_union(paths: &[PathBuf], json: bool) -> Result<(), Failure> {
    let summary = UnionSummary::of(&open_union(paths)?);
    if json {
        return print_json(&summary);
    }
    outln!("{}", summary.one_line())?;
    for member in &summary.members {
        outln!(
            "  {}: {} images, data {}",
            member["path"].as_str().unwrap_or(""),
            member["n_imgs"],
            member["data"]
        )?;
    }
    Ok(())
}

/// `acts verify` of a union: each member's verdict, then the union's (the
/// members agree, and match the manifest when there is one).
fn verify_union(paths: &[PathBuf], values: bool, json: bool) -> Result<(), Failure> {
    let union = match open_union(paths) {
        Ok(union) => union,
        Err(failure) => return union_verdict(&paths[0], Err(failure), json),
    };
    let mut failed = false;
    for member in union.members() {
        failed |= verify(member.dir(), values, json).is_err();
    }
    let outcome = if failed {
        Err(Failure::Invalid(format!(
            "{}: a member of the union is not valid (see above)",
            paths[0].display()
        )))
    } else {
        Ok(UnionSummary::of(&union))
    };
    union_verdict(union.path(), outcome, json)
}

/// Prints the verdict on a union: `PATH: OK (...)`, or with `json` one
/// line `{"path", "valid", "union" | "error"}`.
fn union_verdict(
    path: &std::path::Path,
    outcome: Result<UnionSummary, Failure>,
    json: bool,
) -> Result<(), Failure> {
    if !json {
        let summary = outcome?;
        outln!("{}: OK ({})", path.display(), summary.one_line())?;
        return Ok(());
    }
    let error = match &outcome {
        Err(Failure::Invalid(message) | Failure::Usage(message)) => Some(message.clone()),
        _ => None,
    };
    print_json(&serde_json::json!({
        "path": path,
        "valid": outcome.is_ok(),
        "union": outcome.as_ref().ok(),
        "error": error,
    }))?;
    outcome.map(|_| ()).map_err(|_| Failure::Reported)
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
        crate::stderr::errln!(
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
            "--img {img}: the dataset has {n_imgs} windows"
        )));
    };
    if let Some((at, id)) = text.first_unknown(&ids) {
        return Err(Failure::Invalid(format!(
            "{}: tokens.bin holds id {id} at position {at} of window {img}, which names no token of the recording's model",
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
