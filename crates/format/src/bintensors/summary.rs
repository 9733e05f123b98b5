//! What `modelbin inspect` reports about a BinTensors file: the tensor-file
//! summary it shares with safetensors (sizes, metadata, every tensor).

use super::BinTensors;
use crate::Format;
use crate::inspect::TensorFileSummary;

impl<B: AsRef<[u8]>> BinTensors<B> {
    /// The summary `modelbin inspect` prints for this file.
    pub fn summary(&self) -> TensorFileSummary {
        TensorFileSummary::of(Format::BinTensors, self, self.header_len())
    }
}
