//! `sae eval --model M.tllm`: the cross-entropy a TLLM keeps when the
//! autoencoder's reconstruction replaces the recorded layer (see
//! `modelbin_infer::sae::splice`), over windows the dataset kept.

use std::path::Path;

use modelbin_format::saev::Dataset;
use modelbin_infer::sae::Sae;
use modelbin_infer::sae::splice::{CrossEntropy, cross_entropy};
use modelbin_infer::tllm::Model;

use crate::failure::{Failure, at, invalid};

/// A TLLM model checked to be the one a dataset was recorded from, with the
/// block to splice and the windows to run.
pub struct Splice {
    model: Model,
    block: usize,
    windows: Vec<Vec<u32>>,
}

impl Splice {
    /// Checks that `model_path` is the model `dataset` was recorded from
    /// and takes its first `windows` kept windows; `layer` is the layer as
    /// recorded.
    pub fn open(
        model_path: &Path,
        dataset: &Dataset,
        layer: i64,
        windows: u64,
    ) -> Result<Splice, Failure> {
        let metadata = dataset.metadata();
        if metadata.vit_family != "tllm" {
            return Err(Failure::Usage(format!(
                "--model: the dataset was recorded from a {:?} model; the cross-entropy is measured on TLLM recordings",
                metadata.vit_family
            )));
        }
        let Some(ids) = dataset.token_ids() else {
            return Err(Failure::Usage(format!(
                "--model: {} kept no token ids (tokens.bin); record it again with `modelbin acts record`",
                dataset.dir().display()
            )));
        };
        crate::inspect::expect_format(
            model_path,
            modelbin_format::Format::Tllm,
            "--model takes the TLLM model the dataset was recorded from",
        )?;
        let ckpt = crate::record::checkpoint_id(model_path)?;
        if ckpt != metadata.vit_ckpt {
            return Err(Failure::Usage(format!(
                "--model {}: its hash is {ckpt}, the dataset was recorded from {}",
                model_path.display(),
                metadata.vit_ckpt
            )));
        }
        let model = Model::open(model_path).map_err(|e| at(model_path, e))?;
        let blocks = i64::from(model.config().n_layers);
        let block = if layer < 0 { blocks + layer } else { layer };
        let windows: Vec<Vec<u32>> = (0..windows.min(metadata.n_imgs))
            .filter_map(|img| ids.window(img))
            .collect();
        Ok(Splice {
            model,
            block: block as usize,
            windows,
        })
    }

    /// The windows run clean, with `sae`'s reconstruction spliced in, and
    /// with the layer zeroed.
    pub fn measure(&self, sae: &Sae<f32>) -> Result<CrossEntropy, Failure> {
        cross_entropy(&self.model, sae, self.block, &self.windows).map_err(invalid)
    }
}
