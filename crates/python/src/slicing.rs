//! `safe_slice.__getitem__`'s index: the Python object read into the
//! library's [`SliceRequest`], checked by
//! [`modelbin_format::safetensors::slicing::resolve`], and handed back as
//! the basic index (ints and `slice`s) numpy and torch apply as a view.

use modelbin_format::safetensors::slicing::{self, DimIndex, SliceItem, SliceRequest};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyTuple};

use crate::errors::SafetensorError;

/// `index` on a tensor of `shape` as safetensors checks it: a tuple of ints
/// and slices, or `SafetensorError` with safetensors' message.
#[pyfunction]
pub fn resolve_slice<'py>(
    index: &Bound<'py, PyAny>,
    shape: Vec<usize>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = index.py();
    let request = if let Ok(tuple) = index.cast::<PyTuple>() {
        SliceRequest::Items(
            tuple
                .iter()
                .map(|item| slice_item(&item))
                .collect::<PyResult<_>>()?,
        )
    } else if let Ok(list) = index.cast::<PyList>() {
        SliceRequest::List { len: list.len() }
    } else {
        SliceRequest::Items(vec![slice_item(index)?])
    };
    let resolved =
        slicing::resolve(&request, &shape).map_err(|e| SafetensorError::new_err(e.to_string()))?;
    let slice_type = py.get_type::<PySlice>();
    let items = resolved
        .into_iter()
        .map(|dim| match dim {
            DimIndex::Select(i) => Ok(i.into_pyobject(py)?.into_any()),
            DimIndex::Range { start, stop, step } => slice_type.call1((start, stop, step)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// One item of a Python index; an object without `__index__` is
/// [`SliceItem::Unsupported`], refused by the library at its position.
fn slice_item(item: &Bound<'_, PyAny>) -> PyResult<SliceItem> {
    if item.is(item.py().Ellipsis()) {
        return Ok(SliceItem::Ellipsis);
    }
    if let Ok(slice) = item.cast::<PySlice>() {
        let bound = |name: &str| -> PyResult<Option<i64>> { slice.getattr(name)?.extract() };
        return Ok(SliceItem::Range {
            start: bound("start")?,
            stop: bound("stop")?,
            step: bound("step")?,
        });
    }
    match item.extract::<i64>() {
        Ok(value) => Ok(SliceItem::Int(value)),
        Err(e) if e.is_instance_of::<PyTypeError>(item.py()) => Ok(SliceItem::Unsupported),
        Err(e) => Err(e),
    }
}
