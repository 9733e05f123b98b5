//! What long-running commands share: their thread pool, their
//! `--log FILE.jsonl`, and a check that their memory fits the machine.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use crate::failure::{Failure, at, invalid};

/// A pool of `threads` workers (default: one per core); more than
/// [`modelbin_infer::threads::MAX_THREADS`] is a usage error, refused
/// before any thread starts.
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool, Failure> {
    modelbin_infer::threads::pool(threads).map_err(|e| match e {
        modelbin_infer::Error::Format(e @ modelbin_format::Error::TooManyThreads { .. }) => {
            Failure::Usage(format!("--threads: {e}"))
        }
        e => invalid(e),
    })
}

/// `path` opened for appending JSON lines, when one is given; refused
/// when it is one of the run's `inputs` (appending would change the data
/// being read).
pub fn open_log(path: Option<&Path>, inputs: &[&Path]) -> Result<Option<BufWriter<File>>, Failure> {
    path.map(|path| {
        modelbin_format::io::output::refuse_input_as_output(inputs, path)?;
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
/// than this process may take (see [`modelbin_format::io::memory::check`]).
pub fn check_memory(bytes: f64, what: &str) -> Result<(), Failure> {
    modelbin_format::io::memory::check(bytes, what).map_err(|e| Failure::Usage(e.to_string()))
}
