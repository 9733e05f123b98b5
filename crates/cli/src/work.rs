//! What long-running commands share: their thread pool, their
//! `--log FILE.jsonl`, and a check that their memory fits the machine.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use crate::{Failure, at, invalid};

/// A pool of `threads` workers (default: one per core).
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool, Failure> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(invalid)
}

/// `path` opened for appending JSON lines, when one is given.
pub fn open_log(path: Option<&Path>) -> Result<Option<BufWriter<File>>, Failure> {
    path.map(|path| {
        File::options()
            .create(true)
            .append(true)
            .open(path)
            .map(BufWriter::new)
            .map_err(|e| at(path, modelbin_format::Error::io(path, e)))
    })
    .transpose()
}

/// Refuses (as a usage error) work whose estimated memory, `bytes`, is more
/// than the machine's physical memory, instead of letting the allocation
/// abort the process.
pub fn check_memory(bytes: f64, what: &str) -> Result<(), Failure> {
    // SAFETY: sysconf only reads system configuration values.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let total = pages.max(0) as f64 * page_size.max(0) as f64;
    // NaN (an overflowed estimate) counts as too much.
    if total > 0.0 && (bytes.is_nan() || bytes > total) {
        return Err(Failure::Usage(format!(
            "{what} needs about {:.1} GB of memory, more than this machine's {:.1} GB",
            bytes / 1e9,
            total / 1e9
        )));
    }
    Ok(())
}
