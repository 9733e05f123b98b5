//! The validated tensor table of a tensor file, shared by the readers.
//!
//! Both tensor formats describe tensors the same way (name, dtype, shape, a
//! data range), so the rules they share live here: ranges contiguous from 0
//! in file order, byte counts equal to dtype × shape, no duplicate names, and
//! a data section that ends exactly at the end of the file. Names and shapes
//! are stored in two arenas and looked up through an open-addressing hash
//! index, so opening a file costs a handful of allocations, not one per tensor.
//!
//! The types here are public only so that [`crate::tensor::TensorStore`] can
//! name them; this module is private, so nothing outside the crate can.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::LayoutError;
use crate::error::At;
use crate::io::checksum::fnv1a32;
use crate::tensor::dtype::byte_len;
use crate::{DType, Error, Result};

const EMPTY_SLOT: u32 = u32::MAX;

/// The validated header of a size-prefixed tensor file (`u64 LE n`, `n`
/// header bytes, data): BinTensors and safetensors, which differ only in
/// how the header is encoded.
#[derive(Debug, Clone)]
pub(crate) struct PrefixedHeader {
    /// The string metadata, if the header has a map.
    pub metadata: Option<BTreeMap<String, String>>,
    /// Every tensor, with its absolute data range.
    pub table: TensorTable,
    /// The `n` of the prefix: header bytes including padding.
    pub header_len: u64,
}

/// One tensor: where its name, shape and bytes are.
#[derive(Debug, Clone)]
struct Entry {
    name: Range<usize>,
    shape: Range<usize>,
    dtype: DType,
    /// Data range, relative to the start of the data section.
    start: u64,
    end: u64,
    /// Where its entry is described in the file (for errors).
    at: u64,
}

/// Collects and validates tensor entries in data order.
#[derive(Debug, Default)]
pub struct TableBuilder {
    entries: Vec<Entry>,
    names: String,
    dims: Vec<usize>,
    /// Each tensor starts at the previous end rounded up to this (1: packed).
    alignment: u64,
    /// Whether bytes that belong to no tensor may lie between two tensors.
    gapped: bool,
}

impl TableBuilder {
    /// A builder with room for `entries` tensors whose names take `name_bytes`.
    /// Callers bound both by the bytes actually present.
    pub fn with_capacity(entries: usize, name_bytes: usize) -> Self {
        TableBuilder {
            entries: Vec::with_capacity(entries),
            names: String::with_capacity(name_bytes),
            dims: Vec::with_capacity(entries * 2),
            alignment: 1,
            gapped: false,
        }
    }

    /// Like [`TableBuilder::with_capacity`], adopting `dims`, an arena that
    /// already holds the shapes [`TableBuilder::push_with_dims`] will name
    /// (so that a parser need not hold every shape twice).
    pub fn with_dims(entries: usize, name_bytes: usize, dims: Vec<usize>) -> Self {
        TableBuilder {
            entries: Vec::with_capacity(entries),
            names: String::with_capacity(name_bytes),
            dims,
            alignment: 1,
            gapped: false,
        }
    }

    /// Like [`TableBuilder::with_capacity`], for a format that starts each
    /// tensor at a multiple of `alignment` (a power of two) with padding
    /// between tensors.
    pub fn aligned(entries: usize, name_bytes: usize, alignment: u64) -> Self {
        TableBuilder {
            alignment,
            ..TableBuilder::with_capacity(entries, name_bytes)
        }
    }

    /// Like [`TableBuilder::with_capacity`], for a format that puts other
    /// bytes between tensors (TLLM's dimension prefixes): each tensor starts
    /// at or after the end of the previous one, and offsets are absolute
    /// (finish with a data offset of 0).
    pub fn gapped(entries: usize) -> Self {
        TableBuilder {
            gapped: true,
            ..TableBuilder::with_capacity(entries, entries * 24)
        }
    }

    /// Where the next tensor must start: the end of the last one, rounded up
    /// to the alignment.
    pub fn next_start(&self) -> u64 {
        let end = self.entries.last().map_or(0, |e| e.end);
        end.checked_next_multiple_of(self.alignment)
            .unwrap_or(u64::MAX)
    }

    /// Where the last tensor pushed ends (0 before the first).
    pub fn end(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.end)
    }

    /// Adds the next tensor in data order. `at` is the file offset reported
    /// in errors (the tensor's header entry).
    pub fn push(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[usize],
        range: (u64, u64),
        at: u64,
    ) -> Result<()> {
        let dims_start = self.dims.len();
        self.dims.extend_from_slice(shape);
        let dims_end = self.dims.len();
        self.push_with_dims(name, dtype, dims_start..dims_end, range, at)
    }

    /// Appends one dimension of the next tensor's shape to the dims arena,
    /// for a parser that reads dimensions one by one; the shape is then
    /// `start..self.dims_len()` for [`TableBuilder::push_with_dims`].
    pub fn push_dim(&mut self, dim: usize) {
        self.dims.push(dim);
    }

    /// How many dimensions the arena holds.
    pub fn dims_len(&self) -> usize {
        self.dims.len()
    }

    /// [`TableBuilder::push`] for a shape already in the dims arena, at
    /// `shape` (see [`TableBuilder::with_dims`]).
    pub fn push_with_dims(
        &mut self,
        name: &str,
        dtype: DType,
        shape_range: Range<usize>,
        (start, end): (u64, u64),
        at: u64,
    ) -> Result<()> {
        let shape = &self.dims[shape_range.clone()];
        let expected_start = self.next_start();
        if start != expected_start && !(self.gapped && start > expected_start) {
            return Err(Error::Layout(LayoutError::NonContiguousData {
                name: name.to_owned(),
                offset: at,
                start,
                end,
                expected: expected_start,
            }));
        }
        if end < start {
            return Err(Error::Layout(LayoutError::ReversedDataRange {
                name: name.to_owned(),
                offset: at,
                start,
                end,
            }));
        }
        let expected = byte_len(dtype, shape).ok_or_else(|| {
            Error::Layout(LayoutError::Overflow {
                what: format!("byte size of tensor `{name}`"),
                at: At(Some(at)),
            })
        })?;
        if end - start != expected {
            return Err(Error::Layout(LayoutError::ByteCountMismatch {
                name: name.to_owned(),
                at: At(Some(at)),
                dtype,
                shape: shape.to_vec(),
                expected,
                found: end - start,
            }));
        }
        let name_start = self.names.len();
        self.names.push_str(name);
        self.entries.push(Entry {
            name: name_start..self.names.len(),
            shape: shape_range,
            dtype,
            start,
            end,
            at,
        });
        Ok(())
    }

    /// Checks that the data section, `available` bytes from `data_offset` to
    /// the end of the file, holds exactly the tensors; indexes the names,
    /// rejecting duplicates.
    pub fn finish(self, data_offset: u64, available: u64) -> Result<TensorTable> {
        let data_len = self.entries.last().map_or(0, |e| e.end);
        if available < data_len {
            return Err(Error::Layout(LayoutError::DataTruncated {
                offset: data_offset,
                expected: data_len,
                found: available,
            }));
        }
        if available > data_len {
            return Err(Error::Layout(LayoutError::TrailingBytes {
                offset: data_offset + data_len,
                count: available - data_len,
            }));
        }
        let mut table = TensorTable {
            entries: self.entries,
            names: self.names,
            dims: self.dims,
            slots: Vec::new(),
            data_offset,
        };
        table.build_index()?;
        Ok(table)
    }
}

/// The validated tensors of a file, in file order, with a name index.
#[derive(Debug, Clone)]
pub struct TensorTable {
    entries: Vec<Entry>,
    names: String,
    dims: Vec<usize>,
    /// Open-addressing hash index: entry numbers, or [`EMPTY_SLOT`].
    slots: Vec<u32>,
    /// Absolute offset of the data section.
    data_offset: u64,
}

impl TensorTable {
    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.entries.len()
    }

    /// Absolute offset of the data section.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Absolute file offset of tensor `index`'s data.
    pub fn data_start(&self, index: usize) -> u64 {
        self.data_offset + self.entries[index].start
    }

    fn name(&self, index: usize) -> &str {
        &self.names[self.entries[index].name.clone()]
    }

    fn home_slot(&self, name: &str) -> usize {
        fnv1a32(name.as_bytes()) as usize & (self.slots.len() - 1)
    }

    fn build_index(&mut self) -> Result<()> {
        // The entry count is bounded by the header bytes (< 2^32 entries).
        self.slots = vec![EMPTY_SLOT; (self.entries.len() * 2).next_power_of_two().max(2)];
        let mask = self.slots.len() - 1;
        for index in 0..self.entries.len() {
            let mut slot = self.home_slot(self.name(index));
            loop {
                match self.slots[slot] {
                    EMPTY_SLOT => {
                        self.slots[slot] = index as u32;
                        break;
                    }
                    other if self.name(other as usize) == self.name(index) => {
                        return Err(Error::Layout(LayoutError::DuplicateTensorName {
                            name: self.name(index).to_owned(),
                            at: At(Some(self.entries[index].at)),
                        }));
                    }
                    _ => slot = (slot + 1) & mask,
                }
            }
        }
        Ok(())
    }

    /// The entry number of the tensor called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut slot = self.home_slot(name);
        loop {
            match self.slots[slot] {
                EMPTY_SLOT => return None,
                index if self.name(index as usize) == name => return Some(index as usize),
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    /// The name, dtype, shape and data of tensor `index` inside `file`, the
    /// bytes the table was validated against.
    pub fn parts<'a>(
        &'a self,
        file: &'a [u8],
        index: usize,
    ) -> (&'a str, DType, &'a [usize], &'a [u8]) {
        let entry = &self.entries[index];
        // Validated when built: the range lies inside the file and its length
        // is dtype × shape.
        let base = self.data_offset as usize;
        let data = &file[base + entry.start as usize..base + entry.end as usize];
        (
            self.name(index),
            entry.dtype,
            &self.dims[entry.shape.clone()],
            data,
        )
    }
}
