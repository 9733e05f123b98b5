//! What long-running commands share: their thread pool, their
//! `--log FILE.jsonl`, and a check that their memory fits the machine.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use crate::failure::{Failure, at, invalid};

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
/// than this process may take (physical memory, `ulimit -v`, the cgroup's
/// limit: see [`modelbin_format::memory`]), instead of letting the
/// allocation abort the process.
pub fn check_memory(bytes: f64, what: &str) -> Result<(), Failure> {
    let Some(bound) = modelbin_format::memory::available() else {
        return Ok(());
    };
    let room = bound.bytes as f64;
    // NaN (an overflowed estimate) counts as too much.
    if bytes.is_nan() || bytes > room {
        return Err(Failure::Usage(format!(
            "{what} needs about {:.1} GB of memory; {} leaves {:.1} GB",
            bytes / 1e9,
            bound.source,
            room / 1e9
        )));
    }
    Ok(())
}
