//! The native half of the Python package `modelbin` (the Python half is
//! `crates/python/python/modelbin/`): thin bindings over the library
//! crates. The GIL is released around every engine call; Rust errors become
//! Python exceptions (`errors.rs`), and a panic, should one happen, is a
//! Python `PanicException`, never an abort.

mod convert;
mod defaults;
mod embedder;
mod encoding;
mod errors;
mod files;
mod generating;
mod id_list;
mod images;
mod layers;
mod lm;
mod record;
mod sae;
mod saev;
mod slicing;
mod tensors;
mod tllm;
mod vision;

use pyo3::prelude::*;

/// The `modelbin._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "SafetensorError",
        m.py().get_type::<errors::SafetensorError>(),
    )?;
    m.add("FormatError", errors::format_error_type(m.py())?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<encoding::NativeEncoding>()?;
    m.add_class::<embedder::NativeEmbedder>()?;
    m.add_class::<embedder::NativeLineIndex>()?;
    m.add_class::<saev::NativeDataset>()?;
    m.add_class::<saev::NativeLoader>()?;
    m.add_class::<saev::NativeWriter>()?;
    m.add_class::<tllm::NativeTllm>()?;
    m.add_class::<lm::NativeLanguageModel>()?;
    m.add_class::<lm::NativeHfTokenizer>()?;
    m.add_class::<vision::NativeVisionModel>()?;
    m.add_class::<sae::NativeSae>()?;
    m.add_class::<images::NativeImageProcessor>()?;
    m.add_function(wrap_pyfunction!(saev::saev_write_union, m)?)?;
    m.add_function(wrap_pyfunction!(sae::sae_load, m)?)?;
    m.add_function(wrap_pyfunction!(sae::sae_train, m)?)?;
    m.add_function(wrap_pyfunction!(sae::sae_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(sae::sae_features, m)?)?;
    m.add_function(wrap_pyfunction!(sae::sae_latent_page, m)?)?;
    m.add_function(wrap_pyfunction!(record::acts_record, m)?)?;
    m.add_function(wrap_pyfunction!(record::acts_record_images, m)?)?;
    m.add_function(wrap_pyfunction!(tllm::tllm_train, m)?)?;
    m.add_function(wrap_pyfunction!(convert::convert, m)?)?;
    m.add_function(wrap_pyfunction!(encoding::cost, m)?)?;
    m.add_function(wrap_pyfunction!(encoding::count_chat, m)?)?;
    m.add_function(wrap_pyfunction!(encoding::encoding_for_model, m)?)?;
    m.add_function(wrap_pyfunction!(encoding::encoding_names, m)?)?;
    m.add_function(wrap_pyfunction!(encoding::clear_piece_cache, m)?)?;
    m.add_function(wrap_pyfunction!(files::open_input, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_config_text, m)?)?;
    m.add_function(wrap_pyfunction!(files::checkpoint_id, m)?)?;
    m.add_function(wrap_pyfunction!(defaults::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(slicing::resolve_slice, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::tensor_table, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::tensor_table_of_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::serialize, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::verify, m)?)?;
    m.add_function(wrap_pyfunction!(tensors::inspect_json, m)?)?;
    Ok(())
}
