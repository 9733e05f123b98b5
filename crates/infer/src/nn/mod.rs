//! The numeric kernels under the engines: matrix products and their tiling
//! across threads (`kernels`, `panel_tasks`), f32 weights packed for a
//! register-tiled kernel (`packed`), everything int8 (`int8`: quantizing,
//! packing, the integer kernels), linear layers over either (`linear`),
//! attention (`attention`), and the tensor helpers the BERT encoder uses
//! (`f32_tensor`, `word_table`). Each kernel keeps a portable path; the
//! process's tiers (`f32_tier`, `int8`) are chosen once (`tiers`), by default the widest the CPU
//! runs, detected at run time.

pub(crate) mod attention;
pub(crate) mod f32_tensor;
pub(crate) mod f32_tier;
pub(crate) mod int8;
pub(crate) mod kernels;
pub(crate) mod linear;
pub(crate) mod packed;
pub(crate) mod panel_tasks;
pub(crate) mod tiers;
pub(crate) mod transpose;
pub(crate) mod word_table;
