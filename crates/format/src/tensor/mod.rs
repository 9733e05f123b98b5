//! The tensor model the tensor formats share: borrowed views
//! ([`TensorView`]), the sealed [`TensorStore`] trait the readers implement,
//! and slicing ([`Index`], [`SlicedView`]). Beside it: [`DType`]
//! (`dtype.rs`), the float codecs ([`floats`]), value statistics ([`stats`])
//! and the tensor table every reader builds (`table.rs`, the rules the tensor
//! formats share: data ranges, byte counts, unique names, a name index).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

pub(crate) mod dtype;
pub mod floats;
pub mod stats;
pub(crate) mod table;

use crate::error::At;
use crate::{DType, Error, Result};
use crate::{LayoutError, ModelError};

/// A named tensor whose bytes are borrowed (from a mapped file or a buffer).
///
/// The byte length always equals `dtype.size() × product(shape)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    name: &'a str,
    dtype: DType,
    shape: &'a [usize],
    data: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// A view of `data` as a `dtype` tensor of `shape`; fails when the byte
    /// count disagrees with dtype × shape.
    pub fn new(name: &'a str, dtype: DType, shape: &'a [usize], data: &'a [u8]) -> Result<Self> {
        let expected = byte_len(dtype, shape).ok_or_else(|| {
            Error::Layout(LayoutError::Overflow {
                what: format!("byte size of tensor `{name}`"),
                at: At(None),
            })
        })?;
        if expected != data.len() as u64 {
            return Err(Error::Layout(LayoutError::ByteCountMismatch {
                name: name.to_owned(),
                at: At(None),
                dtype,
                shape: shape.to_vec(),
                expected,
                found: data.len() as u64,
            }));
        }
        Ok(TensorView {
            name,
            dtype,
            shape,
            data,
        })
    }

    /// A view whose byte count the caller has already checked.
    pub(crate) fn from_validated(
        name: &'a str,
        dtype: DType,
        shape: &'a [usize],
        data: &'a [u8],
    ) -> Self {
        debug_assert_eq!(byte_len(dtype, shape), Some(data.len() as u64));
        TensorView {
            name,
            dtype,
            shape,
            data,
        }
    }

    /// The tensor's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape (row-major, outermost dimension first); empty for a scalar.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// The raw little-endian bytes, borrowed.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Number of elements.
    pub fn element_count(&self) -> usize {
        self.data.len() / self.dtype.size()
    }

    /// The data reinterpreted as `T` without copying, when `T` has the dtype's
    /// size and the bytes are suitably aligned; `None` otherwise.
    pub fn cast<T: bytemuck::Pod>(&self) -> Option<&'a [T]> {
        if std::mem::size_of::<T>() != self.dtype.size() {
            return None;
        }
        bytemuck::try_cast_slice(self.data).ok()
    }

    /// The values as `f32`, for every float dtype (see [`crate::tensor::floats`]):
    /// borrowed for aligned F32 data, decoded otherwise. Integer and boolean
    /// tensors are [`ModelError::WrongDtype`].
    pub fn to_f32(&self) -> Result<Cow<'a, [f32]>> {
        crate::tensor::floats::decode(self.dtype, self.data).ok_or_else(|| {
            Error::Model(ModelError::WrongDtype {
                name: self.name.to_owned(),
                dtype: self.dtype,
                expected: "only float tensors decode to f32",
            })
        })
    }

    /// Selects a sub-tensor: one [`Index`] per leading dimension (missing
    /// trailing ones mean "all"). `Index::Select` drops its dimension.
    pub fn slice(&self, indices: &[Index]) -> Result<SlicedView<'a>> {
        SlicedView::new(*self, indices)
    }
}

/// Read access shared by the files that hold named tensors (BinTensors,
/// safetensors, EMBD, TLLM): lookup by name, iteration in file order,
/// metadata. Views borrow the file.
///
/// The trait is sealed: the crate's readers are its only implementations,
/// so every view it hands out was validated against the file.
pub trait TensorStore: sealed::Sealed {
    /// The whole file's bytes.
    fn file_bytes(&self) -> &[u8];

    /// The string metadata, if the format has a metadata map (it may be
    /// empty). TLLM has none of its own and shows its configuration as the
    /// `tllm.*` keys a conversion to BinTensors writes.
    fn metadata(&self) -> Option<&BTreeMap<String, String>>;

    /// Number of tensors.
    fn len(&self) -> usize {
        self.table().tensor_count()
    }

    /// Whether the file holds no tensor.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tensors' names in file order.
    fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.tensors().map(|t| t.name())
    }

    /// The tensor called `name`, if there is one (found in constant time).
    fn get(&self, name: &str) -> Option<TensorView<'_>> {
        let table = self.table();
        table
            .find(name)
            .map(|index| table.view(self.file_bytes(), index))
    }

    /// The tensor called `name`.
    fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        self.get(name)
            .ok_or_else(|| Error::TensorNotFound(name.to_owned()))
    }

    /// All tensors in file order.
    fn tensors(&self) -> impl ExactSizeIterator<Item = TensorView<'_>> + '_ {
        let table = self.table();
        let file = self.file_bytes();
        (0..table.tensor_count()).map(move |index| table.view(file, index))
    }

    /// Absolute file offset of the data of the tensor at `index` in file
    /// order.
    fn data_start(&self, index: usize) -> Option<u64> {
        (index < self.len()).then(|| self.table().data_start(index))
    }
}

pub(crate) mod sealed {
    use crate::tensor::table::TensorTable;

    /// What only this crate's readers can provide: a validated table.
    pub trait Sealed {
        /// The validated tensor table.
        fn table(&self) -> &TensorTable;
    }
}

pub use dtype::byte_len;

impl crate::tensor::table::TensorTable {
    /// A view of tensor `index` inside `file`, the bytes the table was
    /// validated against.
    pub fn view<'a>(&'a self, file: &'a [u8], index: usize) -> TensorView<'a> {
        let (name, dtype, shape, data) = self.parts(file, index);
        TensorView::from_validated(name, dtype, shape, data)
    }
}

/// One index of a slicing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Index {
    /// A single position; the dimension disappears from the result.
    Select(usize),
    /// A range of positions (`start..stop`, start inclusive, stop exclusive
    /// or included per the bound); `Unbounded` means the dimension's edge.
    Narrow(Bound<usize>, Bound<usize>),
}

impl Index {
    /// The index covering a whole dimension.
    pub const ALL: Index = Index::Narrow(Bound::Unbounded, Bound::Unbounded);

    /// Resolves against a dimension of `size`: the half-open range it covers.
    fn resolve(&self, dim: usize, size: usize) -> Result<(usize, usize)> {
        let (start, stop) = match self {
            Index::Select(i) => (Some(*i), i.checked_add(1)),
            Index::Narrow(lo, hi) => {
                let start = match lo {
                    Bound::Unbounded => Some(0),
                    Bound::Included(s) => Some(*s),
                    Bound::Excluded(s) => s.checked_add(1),
                };
                let stop = match hi {
                    Bound::Unbounded => Some(size),
                    Bound::Excluded(e) => Some(*e),
                    Bound::Included(e) => e.checked_add(1),
                };
                (start, stop)
            }
        };
        match (start, stop) {
            (Some(start), Some(stop)) if start <= stop && stop <= size => Ok((start, stop)),
            _ => Err(Error::IndexOutOfRange {
                dim,
                start: start.unwrap_or(usize::MAX),
                stop: stop.unwrap_or(usize::MAX),
                size,
            }),
        }
    }
}

impl From<usize> for Index {
    fn from(i: usize) -> Self {
        Index::Select(i)
    }
}

macro_rules! index_from_range {
    ($($range:ty),*) => {$(
        impl From<$range> for Index {
            fn from(range: $range) -> Self {
                Index::Narrow(range.start_bound().cloned(), range.end_bound().cloned())
            }
        }
    )*};
}
index_from_range!(
    std::ops::Range<usize>,
    std::ops::RangeFrom<usize>,
    std::ops::RangeTo<usize>,
    std::ops::RangeInclusive<usize>,
    std::ops::RangeToInclusive<usize>,
    std::ops::RangeFull
);

/// A slice of a tensor: its new shape and the contiguous byte runs that make
/// it up, produced lazily (nothing is copied until [`SlicedView::to_vec`]).
#[derive(Debug, Clone)]
pub struct SlicedView<'a> {
    view: TensorView<'a>,
    shape: Vec<usize>,
    /// Per dimension before the contiguous tail: (start, stop, stride in bytes).
    outer: Vec<(usize, usize, usize)>,
    /// Byte offset and length of the contiguous run at the outer origin.
    run_start: usize,
    run_len: usize,
}

impl<'a> SlicedView<'a> {
    fn new(view: TensorView<'a>, indices: &[Index]) -> Result<Self> {
        let dims = view.shape;
        if indices.len() > dims.len() {
            return Err(Error::TooManyIndices {
                given: indices.len(),
                rank: dims.len(),
            });
        }
        let mut ranges = Vec::with_capacity(dims.len());
        let mut shape = Vec::with_capacity(dims.len());
        for (dim, &size) in dims.iter().enumerate() {
            let index = indices.get(dim).unwrap_or(&Index::ALL);
            let (start, stop) = index.resolve(dim, size)?;
            if !matches!(index, Index::Select(_)) {
                shape.push(stop - start);
            }
            ranges.push((start, stop));
        }
        if view.data.is_empty() {
            // No elements: every slice is empty (and the strides of huge
            // dimensions beside a zero one need not fit in a usize).
            return Ok(SlicedView {
                view,
                shape,
                outer: Vec::new(),
                run_start: 0,
                run_len: 0,
            });
        }
        // Byte stride of each dimension (row-major). With at least one
        // element, every stride fits: their product is the data length.
        let mut strides = vec![view.dtype.size(); dims.len()];
        for d in (0..dims.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * dims[d + 1];
        }
        // The last dimension not taken whole ends the contiguous run.
        let split = ranges
            .iter()
            .zip(dims)
            .rposition(|(&(start, stop), &size)| (start, stop) != (0, size));
        let (outer, run_start, run_len) = match split {
            None => (Vec::new(), 0, view.data.len()),
            Some(p) => {
                let outer: Vec<_> = (0..p)
                    .map(|d| (ranges[d].0, ranges[d].1, strides[d]))
                    .collect();
                let run_len = (ranges[p].1 - ranges[p].0) * strides[p];
                (outer, ranges[p].0 * strides[p], run_len)
            }
        };
        Ok(SlicedView {
            view,
            shape,
            outer,
            run_start,
            run_len,
        })
    }

    /// Shape of the slice.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.view.dtype
    }

    /// Total bytes in the slice.
    pub fn byte_len(&self) -> usize {
        self.outer
            .iter()
            .map(|&(start, stop, _)| stop - start)
            .product::<usize>()
            * self.run_len
    }

    /// The contiguous byte runs, in row-major order.
    pub fn chunks(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let empty = self.run_len == 0 || self.outer.iter().any(|&(s, e, _)| s == e);
        let mut position: Vec<usize> = self.outer.iter().map(|&(start, _, _)| start).collect();
        let mut done = empty;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let offset = self.run_start
                + position
                    .iter()
                    .zip(&self.outer)
                    .map(|(&i, &(_, _, stride))| i * stride)
                    .sum::<usize>();
            // Advance the odometer over the outer dimensions.
            done = true;
            for (i, &(start, stop, _)) in position.iter_mut().zip(&self.outer).rev() {
                *i += 1;
                if *i < stop {
                    done = false;
                    break;
                }
                *i = start;
            }
            Some(&self.view.data[offset..offset + self.run_len])
        })
    }

    /// The slice's bytes gathered into a new buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        self.chunks().for_each(|c| out.extend_from_slice(c));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
        values.into_iter().flat_map(f32::to_le_bytes).collect()
    }

    fn f32_values(bytes: &[u8]) -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn new_checks_byte_count() {
        let data = [0u8; 8];
        assert!(TensorView::new("t", DType::F32, &[2], &data).is_ok());
        assert!(matches!(
            TensorView::new("t", DType::F32, &[3], &data),
            Err(Error::Layout(LayoutError::ByteCountMismatch {
                expected: 12,
                found: 8,
                ..
            }))
        ));
        assert!(matches!(
            TensorView::new("t", DType::F32, &[usize::MAX, 2], &data),
            Err(Error::Layout(LayoutError::Overflow { .. }))
        ));
    }

    #[test]
    fn slicing_matches_naive_indexing() {
        // A [2, 3, 4] tensor holding 0..24.
        let data = f32_bytes((0..24).map(|v| v as f32));
        let shape = [2, 3, 4];
        let view = TensorView::new("t", DType::F32, &shape, &data).unwrap();
        let naive =
            |a: std::ops::Range<usize>, b: std::ops::Range<usize>, c: std::ops::Range<usize>| {
                let mut out = vec![];
                for i in a {
                    for j in b.clone() {
                        for k in c.clone() {
                            out.push((i * 12 + j * 4 + k) as f32);
                        }
                    }
                }
                out
            };
        let s = view
            .slice(&[Index::ALL, (1..3).into(), (1..=2).into()])
            .unwrap();
        assert_eq!(s.shape(), &[2, 2, 2]);
        assert_eq!(f32_values(&s.to_vec()), naive(0..2, 1..3, 1..3));
        assert_eq!(s.chunks().count(), 4);

        let s = view.slice(&[1.into(), (..2).into()]).unwrap();
        assert_eq!(s.shape(), &[2, 4]);
        assert_eq!(f32_values(&s.to_vec()), naive(1..2, 0..2, 0..4));
        assert_eq!(s.chunks().count(), 1, "contiguous rows form one run");

        let s = view.slice(&[]).unwrap();
        assert_eq!(s.shape(), &shape);
        assert_eq!(s.to_vec(), data);

        let s = view.slice(&[(0..0).into()]).unwrap();
        assert_eq!(s.shape(), &[0, 3, 4]);
        assert_eq!(s.byte_len(), 0);
        assert_eq!(s.chunks().count(), 0);

        let s = view.slice(&[1.into(), 2.into(), 3.into()]).unwrap();
        assert!(s.shape().is_empty());
        assert_eq!(f32_values(&s.to_vec()), vec![23.0]);
    }

    #[test]
    fn zero_size_tensors_with_huge_dimensions_slice_to_nothing() {
        let shape = [0, usize::MAX, 3];
        let view = TensorView::new("t", DType::F64, &shape, &[]).unwrap();
        let s = view.slice(&[Index::ALL, (5..10).into(), 1.into()]).unwrap();
        assert_eq!(s.shape(), &[0, 5]);
        assert_eq!(s.byte_len(), 0);
        assert_eq!(s.chunks().count(), 0);
    }

    #[test]
    fn slicing_rejects_bad_indices() {
        let data = [0u8; 6];
        let view = TensorView::new("t", DType::U8, &[2, 3], &data).unwrap();
        assert!(matches!(
            view.slice(&[0.into(), 0.into(), 0.into()]),
            Err(Error::TooManyIndices { given: 3, rank: 2 })
        ));
        assert!(matches!(
            view.slice(&[2.into()]),
            Err(Error::IndexOutOfRange {
                dim: 0,
                size: 2,
                ..
            })
        ));
        assert!(matches!(
            view.slice(&[Index::ALL, (1..4).into()]),
            Err(Error::IndexOutOfRange { dim: 1, .. })
        ));
        assert!(matches!(
            view.slice(&[Index::Narrow(Bound::Included(2), Bound::Excluded(1))]),
            Err(Error::IndexOutOfRange { .. })
        ));
        assert!(matches!(
            view.slice(&[usize::MAX.into()]),
            Err(Error::IndexOutOfRange { .. })
        ));
    }

    #[test]
    fn cast_is_zero_copy_when_aligned() {
        let values = [1.0f32, 2.0];
        let bytes: &[u8] = bytemuck::cast_slice(&values);
        let view = TensorView::new("t", DType::F32, &[2], bytes).unwrap();
        assert_eq!(view.cast::<f32>(), Some(&values[..]));
        assert_eq!(view.cast::<u16>(), None, "element size differs");
    }
}
