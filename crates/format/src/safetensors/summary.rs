//! What `modelbin inspect` reports about a safetensors file: the
//! tensor-file summary it shares with BinTensors (sizes, metadata, every
//! tensor).

use super::SafeTensors;
use crate::Format;
use crate::inspect::TensorFileSummary;

impl<B: AsRef<[u8]>> SafeTensors<B> {
    /// The summary `modelbin inspect` prints for this file.
    pub fn summary(&self) -> TensorFileSummary {
        TensorFileSummary::of(Format::Safetensors, self, self.header_len())
    }
}
