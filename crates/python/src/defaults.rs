//! The library's defaults of the runs Python drives, as the keyword
//! arguments left as None take them (and the command line's flags).

use modelbin_infer::record::RecordSettings;
use modelbin_infer::sae::run::TrainSettings;
use modelbin_infer::sae::train::Architecture;
use modelbin_infer::sae::view::View;
use modelbin_infer::tllm::train::TrainingSettings;
use pyo3::prelude::*;

/// The defaults as JSON text: `sae_train`, `acts_record` and `tllm_train`,
/// each keyed by Python's keyword names.
#[pyfunction]
pub fn defaults() -> String {
    let sae = TrainSettings::default();
    let record = RecordSettings::default();
    let tllm = TrainingSettings::default();
    let shape = &tllm.config;
    serde_json::json!({
        "sae_train": {
            "d_sae": sae.d_sae, "architecture": sae.architecture.name(),
            "k": Architecture::DEFAULT_K, "l1_coeff": Architecture::DEFAULT_L1_COEFF,
            "l0_coeff": Architecture::DEFAULT_L0_COEFF,
            "bandwidth": Architecture::DEFAULT_BANDWIDTH,
            "steps": sae.steps, "batch_size": View::DEFAULT_BATCH_SIZE, "lr": sae.lr,
            "seed": sae.seed, "dead_after": sae.dead_after,
            "checkpoint_every": sae.checkpoint_every,
        },
        "acts_record": {
            "layers": record.layers, "max_patches_per_shard": record.max_patches_per_shard,
            "site": record.site.name(),
        },
        "tllm_train": {
            "dim": shape.model_dim, "layers": shape.n_layers, "heads": shape.n_heads,
            "ffn": shape.ffn_hidden_dim, "seq": shape.max_seq_len, "dropout": shape.dropout,
            "batch_size": tllm.batch_size, "steps": tllm.steps, "lr": tllm.lr,
            "weight_decay": tllm.weight_decay, "clip": tllm.clip, "seed": tllm.seed,
            "val_fraction": tllm.val_fraction, "eval_every": tllm.eval_every,
            "checkpoint_every": tllm.checkpoint_every,
        },
    })
    .to_string()
}
