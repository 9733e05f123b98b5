//! What long-running commands share: their thread pool and their
//! `--log FILE.jsonl`.

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
