//! Plumbing every format shares, and the only code that touches the file
//! system: what may be opened as an input ([`source`]), how outputs are
//! written ([`output`], atomically), bounds-checked byte reading
//! ([`bytes`]), text lines ([`lines`]), the one rule for reading texts
//! from files ([`texts`]) and for walking input directories ([`walk`]),
//! `.npy` output ([`npy`]), checksums
//! ([`checksum`]), and the process limits a run is checked against before it
//! starts ([`memory`], [`threads`]). [`rng`] is the deterministic generator
//! behind every seeded result.
//!
//! Nothing here knows a format: the format folders build on these pieces,
//! so a rule about files (a FIFO refused, a cap on a JSON document, a
//! temporary file renamed into place) is written once.

pub mod bytes;
pub mod checksum;
pub(crate) mod json;
pub mod lines;
pub mod memory;
pub mod npy;
pub mod npz;
pub mod output;
pub mod rng;
pub mod source;
pub mod texts;
pub mod threads;
pub mod walk;
pub(crate) mod write;
