//! Sparse autoencoders from Python: the autoencoder itself (encoding and
//! decoding through the engine's kernels), and `modelbin.sae.train` and
//! `modelbin.sae.evaluate`, the library runs `modelbin sae train|eval`
//! drive.

use std::path::PathBuf;

use modelbin_format::saev::Patches;
use modelbin_infer::sae::config::{Kind, SaeConfig};
use modelbin_infer::sae::evaluate::{check_fits_view, evaluate, open_for_view};
use modelbin_infer::sae::features::{
    DecoderEffects, FeatureOptions, Thumbnails, features, html_page, latent_page, model_view,
};
use modelbin_infer::sae::run::{TrainRun, TrainSettings};
use modelbin_infer::sae::splice::Splice;
use modelbin_infer::sae::train::{Architecture, ArchitectureParams};
use modelbin_infer::sae::view::View;
use modelbin_infer::sae::{Activation, Codes, Normalization, Sae};
use modelbin_infer::{SaeError, Stepped};
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::infer_error;

/// An autoencoder's parameters and configuration, held by the engine.
#[pyclass(module = "modelbin._native", frozen)]
pub struct NativeSae {
    pub(crate) sae: Sae<f32>,
    pub(crate) config: SaeConfig,
    /// Where it was read from, or what errors call it when it was built
    /// from arrays.
    pub(crate) dir: PathBuf,
}

#[pymethods]
impl NativeSae {
    /// From SAELens's arrays: `W_enc [d_in, d_sae]`, `W_dec [d_sae, d_in]`,
    /// `b_enc [d_sae]`, `b_dec [d_in]`, `threshold [d_sae]` (jumprelu), and
    /// the `cfg.json` text, read by the library as `modelbin sae` reads it
    /// (its architecture, `k`, and the keys that change what is computed);
    /// `path` is where it was read from, for errors.
    #[new]
    #[pyo3(signature = (w_enc, w_dec, b_enc, b_dec, threshold, cfg, path=None))]
    fn new(
        w_enc: PyReadonlyArray2<'_, f32>,
        w_dec: PyReadonlyArray2<'_, f32>,
        b_enc: PyReadonlyArray1<'_, f32>,
        b_dec: PyReadonlyArray1<'_, f32>,
        threshold: Option<PyReadonlyArray1<'_, f32>>,
        cfg: &str,
        path: Option<PathBuf>,
    ) -> PyResult<Self> {
        let dir = path.unwrap_or_else(|| PathBuf::from("an autoencoder built from arrays"));
        let json: serde_json::Value = serde_json::from_str(cfg)
            .map_err(|e| PyValueError::new_err(format!("the cfg is not JSON: {e}")))?;
        let config = SaeConfig::parse(&dir, &json).map_err(infer_error)?;
        let (d_in, d_sae) = (config.d_in, config.d_sae);
        if w_enc.shape() != [d_in, d_sae]
            || w_dec.shape() != [d_sae, d_in]
            || b_enc.len() != d_sae
            || b_dec.len() != d_in
        {
            return Err(PyValueError::new_err(format!(
                "shapes W_enc {:?}, W_dec {:?}, b_enc [{}], b_dec [{}] are not those of d_in {d_in}, d_sae {d_sae}",
                w_enc.shape(),
                w_dec.shape(),
                b_enc.len(),
                b_dec.len()
            )));
        }
        let activation = match (config.kind, threshold) {
            (Kind::TopK(k), _) => Activation::TopK(k),
            (Kind::JumpRelu, Some(threshold)) if threshold.len() == d_sae => {
                Activation::JumpRelu(threshold.as_array().to_vec())
            }
            (Kind::JumpRelu, _) => {
                return Err(PyValueError::new_err(format!(
                    "a jumprelu autoencoder needs threshold [{d_sae}]"
                )));
            }
            (Kind::Standard, _) => Activation::Relu,
        };
        // The engine holds the encoder one row per latent.
        let w_enc = w_enc.as_array().t().iter().copied().collect();
        Ok(NativeSae {
            sae: Sae {
                d_in,
                d_sae,
                activation,
                w_enc,
                b_enc: b_enc.as_array().to_vec(),
                w_dec: w_dec.as_array().iter().copied().collect(),
                b_dec: b_dec.as_array().to_vec(),
                io: config.io,
            },
            config,
            dir,
        })
    }

    /// SAELens's name of the architecture (`topk`, `jumprelu`, `standard`).
    #[getter]
    fn architecture(&self) -> &'static str {
        self.sae.activation.saelens_name()
    }

    /// The latents a TopK autoencoder keeps per input (`None` for the
    /// others).
    #[getter]
    fn k(&self) -> Option<usize> {
        match self.sae.activation {
            Activation::TopK(k) => Some(k),
            _ => None,
        }
    }

    /// Whether decoding needs the statistics of an encoding (the inputs
    /// are normalised: `decode` alone cannot restore their scale).
    #[getter]
    fn normalizes(&self) -> bool {
        self.sae.io.normalization != Normalization::None
    }

    /// Latent activations `[rows, d_sae]` of inputs `[rows, d_in]`.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (rows, input) = rows_of("inputs", &x, self.sae.d_in)?;
        let d_sae = self.sae.d_sae;
        let dense = py.detach(|| {
            let codes = self.sae.encode(&input, rows);
            let mut dense = vec![0f32; rows * d_sae];
            for row in 0..rows {
                for (j, value) in codes.active(row) {
                    dense[row * d_sae + j] = value;
                }
            }
            dense
        });
        numpy::PyArray1::from_vec(py, dense).reshape([rows, d_sae])
    }

    /// `decode(encode(x))`: reconstructions `[rows, d_in]` of inputs
    /// `[rows, d_in]` (what `decode` alone cannot give a normalising
    /// autoencoder).
    fn forward<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (rows, input) = rows_of("inputs", &x, self.sae.d_in)?;
        let recon = py.detach(|| self.sae.forward(&input, rows));
        numpy::PyArray1::from_vec(py, recon).reshape([rows, self.sae.d_in])
    }

    /// Reconstructions `[rows, d_in]` of latent activations `[rows, d_sae]`.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        z: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let [rows, width] = <[usize; 2]>::try_from(z.shape()).expect("two dimensions");
        check_width("codes", width, self.sae.d_sae)?;
        if self.normalizes() {
            return Err(PyValueError::new_err(format!(
                "this autoencoder normalises its inputs (normalize_activations {:?}): decode needs the statistics of their encoding; use forward",
                self.sae.io.normalization.saelens_name()
            )));
        }
        let z = z.as_array();
        let mut codes = Codes {
            offsets: Vec::with_capacity(rows + 1),
            latents: Vec::new(),
            values: Vec::new(),
            norms: Vec::new(),
        };
        codes.offsets.push(0);
        for row in z.rows() {
            for (j, &value) in row.iter().enumerate() {
                if value != 0.0 {
                    codes.latents.push(j as u32);
                    codes.values.push(value);
                }
            }
            codes.offsets.push(codes.latents.len());
        }
        let recon = py.detach(|| self.sae.decode(&codes));
        numpy::PyArray1::from_vec(py, recon).reshape([rows, self.sae.d_in])
    }
}

/// An autoencoder's arrays as SAELens names them (`W_enc [d_in, d_sae]`,
/// `W_dec`, `b_enc`, `b_dec`, and `threshold` for jumprelu) with its
/// `cfg.json` as JSON text.
type LoadedSae<'py> = (
    Bound<'py, PyArray2<f32>>,
    Bound<'py, PyArray2<f32>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<f32>>,
    Option<Bound<'py, PyArray1<f32>>>,
    String,
);

/// Reads the autoencoder in `path` with the library's loader, the one
/// `modelbin sae` commands use: `cfg.json` through the capped JSON reader
/// (a FIFO or device is refused at once), the weights mapped, checked
/// against the configuration and refused when they hold a NaN or an
/// infinity (`FormatError`).
#[pyfunction]
pub fn sae_load<'py>(py: Python<'py>, path: PathBuf) -> PyResult<LoadedSae<'py>> {
    let (sae, config) = py
        .detach(|| modelbin_infer::sae::layouts::load(&path))
        .map(|(sae, config)| (sae, config.json))
        .map_err(|e| match e {
            // Worded as SAE.load has always worded a missing tensor.
            modelbin_infer::Error::Format(modelbin_format::Error::TensorNotFound(name)) => {
                PyValueError::new_err(format!(
                    "{}: {} lacks ['{name}']",
                    path.display(),
                    modelbin_infer::sae::saelens::WEIGHTS_FILE
                ))
            }
            e => infer_error(e),
        })?;
    let (d_in, d_sae) = (sae.d_in, sae.d_sae);
    // The engine holds the encoder one row per latent; SAELens's is
    // [d_in, d_sae].
    let mut w_enc = vec![0.0f32; d_in * d_sae];
    for (j, row) in sae.w_enc.chunks_exact(d_in).enumerate() {
        for (i, &w) in row.iter().enumerate() {
            w_enc[i * d_sae + j] = w;
        }
    }
    let threshold = match sae.activation {
        Activation::JumpRelu(threshold) => Some(PyArray1::from_vec(py, threshold)),
        _ => None,
    };
    Ok((
        PyArray1::from_vec(py, w_enc).reshape([d_in, d_sae])?,
        PyArray1::from_vec(py, sae.w_dec).reshape([d_sae, d_in])?,
        PyArray1::from_vec(py, sae.b_enc),
        PyArray1::from_vec(py, sae.b_dec),
        threshold,
        config.to_string(),
    ))
}

/// The rows of `array` (`[rows, expected]`, row-major), checked for width.
fn rows_of(
    what: &str,
    array: &PyReadonlyArray2<'_, f32>,
    expected: usize,
) -> PyResult<(usize, Vec<f32>)> {
    let [rows, width] = <[usize; 2]>::try_from(array.shape()).expect("two dimensions");
    check_width(what, width, expected)?;
    Ok((rows, array.as_array().iter().copied().collect()))
}

/// Refuses `what` of `width` columns where `expected` are needed (the
/// engine indexes rows by that width).
fn check_width(what: &str, width: usize, expected: usize) -> PyResult<()> {
    if width == expected {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{what} of width {width}; this autoencoder takes {expected}"
        )))
    }
}

/// The `patches` argument as the dataset's choice of tokens.
fn patches(name: &str) -> PyResult<Patches> {
    match name {
        "image" => Ok(Patches::Image),
        "cls" => Ok(Patches::Cls),
        "all" => Ok(Patches::All),
        _ => Err(PyValueError::new_err(format!(
            "patches={name:?}: one of \"image\", \"cls\", \"all\""
        ))),
    }
}

/// Trains an autoencoder and saves it in `out` (SAELens's layout), as
/// `modelbin sae train` does with the same arguments; returns the summary
/// `sae train --json` prints, as JSON text. `progress(step, steps, report)`
/// is called after each step with the step's report as JSON text.
#[pyfunction]
#[pyo3(signature = (
    dataset, layer, out, *, patches_name, d_sae, architecture, k, l1_coeff, l0_coeff, bandwidth,
    steps, batch_size,
    lr, seed, aux_k, dead_after, threads, checkpoint_every, resume, force, progress
))]
#[allow(clippy::too_many_arguments)]
pub fn sae_train(
    py: Python<'_>,
    dataset: PathBuf,
    layer: i64,
    out: PathBuf,
    patches_name: &str,
    d_sae: Option<usize>,
    architecture: Option<&str>,
    k: Option<usize>,
    l1_coeff: Option<f64>,
    l0_coeff: Option<f64>,
    bandwidth: Option<f64>,
    steps: Option<u64>,
    batch_size: Option<usize>,
    lr: Option<f64>,
    seed: Option<u64>,
    aux_k: Option<usize>,
    dead_after: Option<u64>,
    threads: Option<usize>,
    checkpoint_every: Option<u64>,
    resume: bool,
    force: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    // A setting left out (None) is the library's default.
    let defaults = TrainSettings::default();
    let given = ArchitectureParams::default();
    let params = ArchitectureParams {
        k: k.unwrap_or(given.k),
        l1_coeff: l1_coeff.unwrap_or(given.l1_coeff),
        l0_coeff: l0_coeff.unwrap_or(given.l0_coeff),
        bandwidth: bandwidth.unwrap_or(given.bandwidth),
    };
    let architecture =
        Architecture::named(architecture.unwrap_or(defaults.architecture.name()), params)
            .map_err(sae_error)?;
    let patches = patches(patches_name)?;
    let settings = TrainSettings {
        lr: lr.unwrap_or(defaults.lr),
        seed: seed.unwrap_or(defaults.seed),
        aux_k,
        dead_after: dead_after.unwrap_or(defaults.dead_after),
        checkpoint_every: checkpoint_every.unwrap_or(defaults.checkpoint_every),
        resume,
        replace: force,
        ..TrainSettings::new(
            architecture,
            d_sae.unwrap_or(defaults.d_sae),
            steps.unwrap_or(defaults.steps),
        )
    };
    let batch_size = batch_size.unwrap_or(View::DEFAULT_BATCH_SIZE);
    // The settings are refused before the dataset is read.
    settings.validate().map_err(sae_error)?;
    let mut run = py
        .detach(|| {
            let view = View::open(&dataset, layer, patches, batch_size, threads)?;
            TrainRun::start(view, settings, &out)
        })
        .map_err(|e| match e {
            modelbin_infer::Error::Sae(e) => sae_error(e),
            e => infer_error(e),
        })?;
    while !run.is_done() {
        let report = py.detach(|| run.step()).map_err(infer_error)?;
        // Ctrl-C between steps raises KeyboardInterrupt; the checkpoint
        // written last (if any) stays, as when the command is interrupted.
        py.check_signals()?;
        if let Some(progress) = &progress {
            let report = serde_json::to_string(&report).expect("a report serializes");
            progress.call1(py, (report.as_str(),))?;
        }
    }
    let summary = py.detach(|| run.finish()).map_err(infer_error)?;
    Ok(serde_json::to_string(&summary).expect("a summary serializes"))
}

/// A settings error in the keyword arguments' words: the library names
/// each setting by its keyword already, but for an unknown architecture
/// and for what the output directory holds (which `force=` and `resume=`
/// decide; the command line's flags are named too, for readers of either).
fn sae_error(e: SaeError) -> PyErr {
    match e {
        SaeError::UnknownArchitecture { name } => PyValueError::new_err(format!(
            "architecture={name:?}: one of \"topk\", \"batchtopk\", \"relu\""
        )),
        SaeError::OutputHoldsAutoencoder { dir } => PyValueError::new_err(format!(
            "{} holds an autoencoder; pass force=True to replace it (--force on the command line)",
            dir.display()
        )),
        SaeError::OutputHoldsCheckpoint { dir } => PyValueError::new_err(format!(
            "{} holds a run's checkpoint; pass resume=True to continue it or force=True to start over (--resume / --force on the command line)",
            dir.display()
        )),
        e => infer_error(e.into()),
    }
}

/// An autoencoder to evaluate: loaded, or its directory.
#[derive(FromPyObject)]
pub enum SaeSource {
    /// One held by the engine.
    Loaded(Py<NativeSae>),
    /// A directory in SAELens's layout.
    Directory(PathBuf),
}

/// The view of `dataset` the `sae_*` functions read.
fn open_view(
    py: Python<'_>,
    dataset: &std::path::Path,
    layer: i64,
    patches_name: &str,
    batch_size: Option<usize>,
    threads: Option<usize>,
) -> PyResult<View> {
    let patches = patches(patches_name)?;
    let batch_size = batch_size.unwrap_or(View::DEFAULT_BATCH_SIZE).max(1);
    py.detach(|| View::open(dataset, layer, patches, batch_size, threads))
        .map_err(infer_error)
}

/// The autoencoder to run on `view`, of its width; `loaded` holds one read
/// from a directory.
fn resolve_sae<'s>(
    py: Python<'_>,
    sae: &'s SaeSource,
    loaded: &'s mut Option<Sae<f32>>,
    view: &View,
) -> PyResult<&'s Sae<f32>> {
    let sae = match sae {
        SaeSource::Loaded(native) => {
            let native = native.get();
            check_fits_view(&native.dir, &native.sae, &native.config, view).map_err(infer_error)?;
            &native.sae
        }
        SaeSource::Directory(dir) => {
            let read = py
                .detach(|| open_for_view(dir, view))
                .map_err(infer_error)?
                .0;
            loaded.insert(read)
        }
    };
    Ok(sae)
}

/// Runs `work` without the GIL, giving it a progress callback that calls
/// `progress(done, total)` (when given) and stops the work on Ctrl-C or an
/// exception from the callback, which is then raised.
pub(crate) fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&mut dyn FnMut(u64, u64) -> bool) -> modelbin_infer::Result<T> + Send,
) -> PyResult<T> {
    let mut raised = None;
    let result = py.detach(|| {
        work(&mut |done, total| {
            Python::attach(|py| {
                let called = match &progress {
                    Some(progress) => progress.call1(py, (done, total)).map(drop),
                    None => Ok(()),
                };
                match called.and_then(|()| py.check_signals()) {
                    Ok(()) => true,
                    Err(e) => {
                        raised = Some(e);
                        false
                    }
                }
            })
        })
    });
    match raised {
        Some(e) => Err(e),
        None => result.map_err(infer_error),
    }
}

/// Measures an autoencoder on a dataset view, as `modelbin sae eval
/// --json` does; returns that JSON text. `progress(done, total)` is called
/// with bytes after each batch. With `model` (the model recorded), also
/// the cross-entropy and KL with the reconstruction spliced in, over the
/// first `ce_windows` windows.
#[pyfunction]
#[pyo3(signature = (sae, dataset, layer, *, patches_name, batch_size, threads, model, ce_windows, progress))]
#[allow(clippy::too_many_arguments)]
pub fn sae_evaluate(
    py: Python<'_>,
    sae: SaeSource,
    dataset: PathBuf,
    layer: i64,
    patches_name: &str,
    batch_size: Option<usize>,
    threads: Option<usize>,
    model: Option<PathBuf>,
    ce_windows: u64,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let view = open_view(py, &dataset, layer, patches_name, batch_size, threads)?;
    let mut loaded = None;
    let sae = resolve_sae(py, &sae, &mut loaded, &view)?;
    let splice = match &model {
        Some(model) => Some(
            py.detach(|| Splice::open(model, view.dataset(), view.layer(), ce_windows))
                .map_err(infer_error)?,
        ),
        None => None,
    };
    let mut evaluation = with_progress(py, progress, |progress| evaluate(sae, &view, progress))?;
    if let Some(splice) = &splice {
        let pool = modelbin_infer::threads::pool(Some(view.threads())).map_err(infer_error)?;
        evaluation.cross_entropy = Some(
            py.detach(|| pool.install(|| splice.measure(sae)))
                .map_err(infer_error)?,
        );
    }
    Ok(serde_json::to_string(&evaluation).expect("an evaluation serializes"))
}

/// What each latent fires on, as `modelbin sae features` finds it: the JSON
/// of every latent described (`latents` of them, mid-density first, or
/// every one when `None`), with the view's `examples`, `d_sae` and
/// `has_text`; with `html`, also the page `--html` writes; with `model`,
/// the decoder effects. `progress(done, total)` is called with bytes.
#[pyfunction]
#[pyo3(signature = (sae, dataset, layer, *, patches_name, batch_size, threads, top, quantiles, samples, latent, latents, html, model, progress))]
#[allow(clippy::too_many_arguments)]
pub fn sae_features(
    py: Python<'_>,
    sae: SaeSource,
    dataset: PathBuf,
    layer: i64,
    patches_name: &str,
    batch_size: Option<usize>,
    threads: Option<usize>,
    top: usize,
    quantiles: usize,
    samples: usize,
    latent: Option<usize>,
    latents: Option<usize>,
    html: Option<PathBuf>,
    model: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let name = sae_name(&sae);
    let sae_dir = match &sae {
        SaeSource::Directory(dir) => Some(dir.clone()),
        SaeSource::Loaded(_) => None,
    };
    let view = open_view(py, &dataset, layer, patches_name, batch_size, threads)?;
    let mut loaded = None;
    let sae = resolve_sae(py, &sae, &mut loaded, &view)?;
    let effects = match &model {
        Some(model) => Some(
            py.detach(|| DecoderEffects::open(model, view.dataset()))
                .map_err(infer_error)?,
        ),
        None => None,
    };
    let options = FeatureOptions {
        top,
        quantiles,
        samples,
        latent,
        latents,
    };
    let found = with_progress(py, progress, |progress| {
        features(sae, &view, options, effects.as_ref(), progress)
    })?;
    if let Some(path) = html {
        let images = view.union().images().map_err(crate::errors::format_error)?;
        let thumbnails = match images {
            Some(images) => {
                let model_view = model_view(&images).map_err(infer_error)?;
                Some(py.detach(|| Thumbnails::of_features(&images, &found, &model_view)))
            }
            None => None,
        };
        let page = html_page(&name, &found, None, thumbnails.as_ref());
        let mut inputs = vec![dataset.as_path()];
        inputs.extend(sae_dir.as_deref());
        inputs.extend(model.as_deref());
        py.detach(|| modelbin_format::io::output::write_derived(&path, page.as_bytes(), &inputs))
            .map_err(crate::errors::format_error)?;
    }
    Ok(serde_json::to_string(&found).expect("features serialize"))
}

/// The page of one latent alone, from the JSON `sae_features` gave for it;
/// given the `dataset` (or union manifest) it was found over, one recorded
/// from images also shows the pictures of its images (a dataset that no
/// longer opens shows the heat maps alone: a notebook's display does not
/// fail).
#[pyfunction]
#[pyo3(signature = (name, examples, d_sae, feature, dataset=None))]
pub fn sae_latent_page(
    py: Python<'_>,
    name: &str,
    examples: u64,
    d_sae: usize,
    feature: &str,
    dataset: Option<PathBuf>,
) -> PyResult<String> {
    let feature: serde_json::Value = serde_json::from_str(feature)
        .map_err(|e| PyValueError::new_err(format!("a latent's JSON: {e}")))?;
    let thumbnails = dataset.and_then(|dir| {
        py.detach(|| {
            let union = modelbin_format::saev::Union::open(&[dir]).ok()?;
            let images = union.images().ok()??;
            let model_view = model_view(&images).ok()?;
            Some(Thumbnails::of_latent(&images, &feature, &model_view))
        })
    });
    Ok(latent_page(
        name,
        examples,
        d_sae,
        &feature,
        thumbnails.as_ref(),
    ))
}

/// How pages name an autoencoder: its directory, or "an autoencoder".
fn sae_name(sae: &SaeSource) -> String {
    match sae {
        SaeSource::Directory(dir) => dir.display().to_string(),
        SaeSource::Loaded(_) => "an autoencoder".to_owned(),
    }
}
