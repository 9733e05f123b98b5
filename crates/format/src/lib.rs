//! modelbin-format: readers, writers and validators for the binary files that
//! carry ML models, vocabularies and activations.
//!
//! | format | what it holds | module |
//! |---|---|---|
//! | BinTensors (`.bt`) | named tensors behind a compact binary header | [`bintensors`] |
//! | safetensors | named tensors behind a JSON header | [`safetensors`] |
//! | EMBD (`.embd`) | a sentence-embedding model: metadata, WordPiece vocabulary, tensors, CRCs | [`embd`] |
//! | BPE2 (`.bpe2`) | a tiktoken vocabulary as a rank-indexed table | [`bpe2`] |
//! | TLLM (`.tllm`) | the weights of a tiny GPT-style transformer | [`tllm`] |
//! | SAEV (a directory) | transformer activations in `np.memmap`-readable shards | [`saev`] |
//!
//! Every format has the same faces: `open(path)` (memory-mapped) and
//! `from_buffer(bytes)` validate and return zero-copy views; `verify()` runs
//! every check opening skips (a documented no-op where opening checks all);
//! `write_file(path, …, progress)` writes atomically (SAEV, a directory, has a
//! streaming [`saev::Writer`]); [`inspect::Summary`] describes any file as text
//! or JSON. The four formats of named tensors share the sealed
//! [`TensorStore`] trait (names, lookup, metadata, [`TensorView::to_f32`]),
//! and [`open`] detects a file's format by content and returns an
//! [`AnyFile`].
//!
//! Every format folder has the same files: `mod.rs` (the reader type,
//! `open`, `from_buffer`, `verify`), `read.rs` (or `read/`), `write.rs` (or
//! `write/`), `error.rs` (its error enum, re-exported here) and `summary.rs`
//! (its `inspect` summary). Around them:
//!
//! | module | what it owns |
//! |---|---|
//! | [`convert`] | conversions between formats, a Hugging Face directory → EMBD, EMBD → sentence-transformers |
//! | [`io`] | plumbing: what may be opened as an input, atomic outputs, bounds-checked bytes, lines, `.npy`, checksums, memory and thread limits, the seeded generator |
//! | [`tensor`] | the tensor model the tensor formats share: [`TensorView`], [`TensorStore`], [`DType`], float codecs, value statistics |
//! | [`model`] | what a model needs beyond its format: the BERT an EMBD file must make, [`ModelError`] |
//! | [`error`] | [`Error`], [`Result`], [`LayoutError`] (the layout rules every reader shares) |
//! | [`detect`], [`any`], [`file`](mod@file) | [`Format`] and its content probes, [`open`] → [`AnyFile`], [`TensorFile`] |
//! | [`inspect`] | [`inspect::Summary`], over every format's summary |
//!
//! Every parser treats its input as hostile: offsets, lengths and counts are
//! checked (with checked arithmetic) before use, nothing is allocated from an
//! untrusted count beyond what the remaining bytes can hold, time stays
//! linear in the input, and every failure is an [`Error`] that says what
//! went wrong and, where there is one, at which byte.
//!
//! # BinTensors and safetensors
//!
//! ```
//! # fn main() -> Result<(), modelbin_format::Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! use modelbin_format::{DType, TensorStore, TensorView, bintensors};
//!
//! let bytes: Vec<u8> = [0.5f32, -1.0, 2.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let weight = TensorView::new("weight", DType::F32, &[2, 2], &bytes)?;
//! let path = dir.path().join("model.bt");
//! bintensors::write_file(&path, [weight], None, &mut |_, _| {})?;
//!
//! let file = bintensors::open(&path)?;
//! file.verify()?;
//! assert_eq!(file.names().collect::<Vec<_>>(), ["weight"]);
//! let weight = file.tensor("weight")?;
//! assert_eq!(weight.shape(), &[2, 2]);
//! assert_eq!(&*weight.to_f32()?, &[0.5, -1.0, 2.0, 4.0]);
//! // The same tensors as safetensors (`modelbin_format::safetensors` has the
//! // same faces).
//! # Ok(())
//! # }
//! ```
//!
//! # TLLM
//!
//! ```
//! # fn main() -> Result<(), modelbin_format::Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! use modelbin_format::TensorStore;
//! use modelbin_format::tllm::{self, Config};
//!
//! let config = Config {
//!     model_dim: 4, n_layers: 1, n_heads: 2, ffn_hidden_dim: 8,
//!     max_seq_len: 3, vocab_size: 5, dropout: 0.0,
//! };
//! let zeros: Vec<Vec<u8>> =
//!     config.tensors().iter().map(|t| vec![0; 4 * t.shape.len()]).collect();
//! let data: Vec<&[u8]> = zeros.iter().map(Vec::as_slice).collect();
//! let path = dir.path().join("tiny.tllm");
//! tllm::write_file(&path, &config, &data, &mut |_, _| {})?;
//!
//! let model = tllm::open(&path)?;
//! model.verify()?;
//! assert_eq!(model.tensor("layers.0.attn.q")?.shape(), &[4, 4]);
//! assert_eq!(model.metadata().unwrap()["tllm.n_layers"], "1");
//! # Ok(())
//! # }
//! ```
//!
//! # BPE2
//!
//! ```
//! # fn main() -> Result<(), modelbin_format::Error> {
//! # let dir = tempfile::tempdir().unwrap();
//! use modelbin_format::bpe2;
//!
//! let tokens = vec![(b"a".to_vec(), 0), (b"b".to_vec(), 1), (b"ab".to_vec(), 2)];
//! let path = dir.path().join("tiny.bpe2");
//! bpe2::write_file(&path, &tokens, [0; 32], &mut |_, _| {})?;
//!
//! let vocabulary = bpe2::open(&path)?;
//! vocabulary.verify()?;
//! assert_eq!(vocabulary.token(2), Some(&b"ab"[..]));
//! # Ok(())
//! # }
//! ```
//!
//! # EMBD
//!
//! An EMBD file carries a whole model; `modelbin convert MODEL_DIR x.embd`
//! (or [`convert::from_hf_dir`]) writes one from a Hugging Face directory.
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_format::Error> {
//! use modelbin_format::{TensorStore, embd};
//!
//! let model = embd::open("all-MiniLM-L6-v2.embd")?;
//! model.verify()?; // the data and file CRC-32s
//! let word_embeddings = model.tensor("embeddings.word_embeddings.weight")?.to_f32()?;
//! println!("{} values, pooling {:?}", word_embeddings.len(), model.metadata_value("pooling"));
//! # Ok(())
//! # }
//! ```
//!
//! # SAEV
//!
//! ```no_run
//! # fn main() -> Result<(), modelbin_format::Error> {
//! use modelbin_format::saev::{self, LayerChoice, Patches};
//!
//! let dataset = saev::open("activations/3f2a…")?;
//! let view = dataset.view(Patches::Image, LayerChoice::One(-1))?;
//! let example = view.get(0)?;
//! println!("{} vectors; the first has {} values", view.len(), example.vector.len());
//! # Ok(())
//! # }
//! ```
//!
//! # Any file
//!
//! [`open`] detects the format, validates, and dispatches; the CLI's
//! `inspect` and `verify` are built on it.

#![deny(missing_docs)]

pub mod any;
pub mod bintensors;
pub mod bpe2;
pub mod convert;
pub mod detect;
pub mod embd;
pub mod error;
pub mod file;
pub mod inspect;
pub mod io;
pub mod model;
pub mod saev;
pub mod safetensors;
pub mod tensor;
pub mod tllm;

pub use any::{AnyFile, open, open_as};
pub use bintensors::BintensorsError;
pub use bpe2::Bpe2Error;
pub use detect::Format;
pub use embd::EmbdError;
pub use error::{At, Error, LayoutError, Result};
pub use file::TensorFile;
pub use model::ModelError;
pub use saev::SaevError;
pub use tensor::dtype::DType;
pub use tensor::{Index, SlicedView, TensorStore, TensorView};
pub use tllm::TllmError;
