//! The validated tensor entries of a tensor file, shared by the readers.
//!
//! The types here are public only so that [`crate::tensor::TensorStore`] can
//! name them; this module is private, so nothing outside the crate can.

use crate::error::At;
use crate::tensor::TensorView;
use crate::{DType, Error, Result};

/// One tensor of a parsed file header: where its bytes are.
#[derive(Debug, Clone)]
pub struct TensorEntry {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Data range, relative to the start of the data section.
    pub start: u64,
    pub end: u64,
}

/// The validated tensor entries of a file, in file order, with a name index.
#[derive(Debug, Clone)]
pub struct TensorTable {
    entries: Vec<TensorEntry>,
    /// Indices into `entries`, sorted by name.
    by_name: Vec<usize>,
    /// Absolute offset of the data section.
    data_offset: u64,
}

impl TensorTable {
    /// Indexes entries whose ranges the caller validated against the file;
    /// rejects duplicate names.
    pub fn new(entries: Vec<TensorEntry>, data_offset: u64) -> Result<Self> {
        let mut by_name: Vec<usize> = (0..entries.len()).collect();
        by_name.sort_unstable_by(|&a, &b| entries[a].name.cmp(&entries[b].name));
        if let Some(pair) = by_name
            .windows(2)
            .find(|w| entries[w[0]].name == entries[w[1]].name)
        {
            return Err(Error::DuplicateTensorName {
                name: entries[pair[0]].name.clone(),
                at: At(None),
            });
        }
        Ok(TensorTable {
            entries,
            by_name,
            data_offset,
        })
    }

    /// The entries in file order.
    pub fn entries(&self) -> &[TensorEntry] {
        &self.entries
    }

    /// Absolute offset of the data section.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        let slot = self
            .by_name
            .binary_search_by(|&i| self.entries[i].name.as_str().cmp(name))
            .ok()?;
        Some(self.by_name[slot])
    }

    pub fn view<'a>(&'a self, file: &'a [u8], index: usize) -> TensorView<'a> {
        let entry = &self.entries[index];
        // Validated at parse time: the range lies inside the file and its
        // length is dtype × shape.
        let base = self.data_offset as usize;
        let data = &file[base + entry.start as usize..base + entry.end as usize];
        TensorView::from_validated(&entry.name, entry.dtype, &entry.shape, data)
    }
}
