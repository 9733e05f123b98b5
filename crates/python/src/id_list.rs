//! Lists of token ids as Python ints, from ints kept per id: a list takes
//! a reference to each id's int instead of allocating an int per id (ids
//! above 256 are not among Python's shared small ints).
//!
//! An id's int is made the first time a list needs it, not all at once
//! for the whole vocabulary. The ids a text uses most are then among the
//! first made, so their ints should lie close together in Python's memory
//! and the reference counts a list writes fall on fewer cache lines; made in
//! id order, frequent ids are spread over all of the ints (6.4 MB for
//! o200k_base). Order of first use approximates order of frequency without
//! a frequency table fitted to one corpus.

use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::{IntoPyObjectExt, ffi};

/// The ints of one vocabulary's ids, made on first use.
pub struct SharedInts {
    /// Ids below this have a slot in `ints`.
    count: u32,
    /// Each id's int, or null before its first use, set up on the first
    /// long list. The pointers are borrowed from `owned`.
    ints: OnceLock<Box<[AtomicPtr<ffi::PyObject>]>>,
    /// The ints made so far, which keep them alive.
    owned: Mutex<Vec<Py<PyAny>>>,
}

/// Outputs at least this long are built from the kept ints; shorter ones
/// get new ints.
const SHARED_FROM: usize = 64;

/// How many ids ahead [`SharedInts::list`] prefetches ints (and twice as
/// many, the slots of their addresses): far enough ahead for a line to
/// arrive from memory before the list writes to it, near enough that it is
/// still in the cache then.
const PREFETCH_AHEAD: usize = 32;

impl SharedInts {
    /// The ints of ids below `count`, none made yet.
    pub fn new(count: u32) -> Self {
        SharedInts {
            count,
            ints: OnceLock::new(),
            owned: Mutex::new(Vec::new()),
        }
    }

    /// `ids` as a Python list of ints.
    pub fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        if ids.len() < SHARED_FROM {
            return PyList::new(py, ids);
        }
        let ints = self.ints.get_or_init(|| {
            (0..self.count)
                .map(|_| AtomicPtr::new(null_mut()))
                .collect()
        });
        // Taking a reference writes to the int's object, wherever Python
        // put it. The object PREFETCH_AHEAD ids ahead is asked into the
        // cache first, and before that the slot that holds its address (8
        // bytes per id, 0.8–1.6 MB: beyond L1, and L2 holds the
        // tokenizer's tables too).
        let slot = |at: usize| ids.get(at).and_then(|&id| ints.get(id as usize));
        // SAFETY: the loop writes every item before the list is returned.
        let (list, items) = unsafe { new_list(py, ids.len())? };
        for (at, &id) in ids.iter().enumerate() {
            if let Some(slot) = slot(at + 2 * PREFETCH_AHEAD) {
                prefetch(slot.as_ptr());
            }
            if let Some(slot) = slot(at + PREFETCH_AHEAD) {
                prefetch(slot.load(Ordering::Relaxed));
            }
            let int = self.int(py, ints, id).into_ptr();
            // SAFETY: `at` < the list's length, and the list is new and not
            // yet shared: its item `at` is empty, and takes the reference.
            unsafe { items.add(at).write(int) };
        }
        Ok(list)
    }

    /// The int of `id`, made now if this is its first use.
    #[inline]
    fn int<'py>(
        &self,
        py: Python<'py>,
        ints: &[AtomicPtr<ffi::PyObject>],
        id: u32,
    ) -> Bound<'py, PyAny> {
        let Some(slot) = ints.get(id as usize) else {
            return id.into_bound_py_any(py).expect("u32 converts");
        };
        let int = slot.load(Ordering::Acquire);
        if int.is_null() {
            return self.make(py, slot, id);
        }
        // SAFETY: a slot that is not null points to an int that `owned`
        // keeps alive as long as `self`.
        unsafe { Bound::from_borrowed_ptr(py, int) }
    }

    /// Makes the int of `id` and keeps it in `slot`, unless another thread
    /// did first.
    #[cold]
    fn make<'py>(
        &self,
        py: Python<'py>,
        slot: &AtomicPtr<ffi::PyObject>,
        id: u32,
    ) -> Bound<'py, PyAny> {
        let mut owned = self
            .owned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let made = slot.load(Ordering::Acquire);
        if !made.is_null() {
            // SAFETY: as in `int`.
            return unsafe { Bound::from_borrowed_ptr(py, made) };
        }
        let int = id.into_bound_py_any(py).expect("u32 converts");
        owned.push(int.clone().unbind());
        slot.store(int.as_ptr(), Ordering::Release);
        int
    }
}

/// A new list of `len` empty items and its item array. Filled through the
/// array, items cost a store each; `PyList::new` from an iterator also
/// passes each item through a fallible conversion and its error check.
///
/// # Safety
///
/// The items are null: the caller must write every one of them (each an
/// owned reference) before the list reaches Python or any list function.
unsafe fn new_list(
    py: Python<'_>,
    len: usize,
) -> PyResult<(Bound<'_, PyList>, *mut *mut ffi::PyObject)> {
    let len = ffi::Py_ssize_t::try_from(len)?;
    // SAFETY: `PyList_New` returns a new reference to a list, or null with
    // an exception set.
    let list =
        unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?.cast_into_unchecked() };
    // SAFETY: a CPython list (the only Python this package builds for) is
    // a `PyListObject`, whose `ob_item` holds `len` items.
    let items = unsafe { (*list.as_ptr().cast::<ffi::PyListObject>()).ob_item };
    Ok((list, items))
}

/// Asks the CPU to bring the cache line at `object` into every level of
/// its cache (a read hint: x86 has no baseline hint for writing, and the
/// line is written soon after); a hint that never faults, null included.
#[inline]
fn prefetch<T>(object: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and never faults;
    // SSE is part of x86_64's baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(object.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = object;
}
