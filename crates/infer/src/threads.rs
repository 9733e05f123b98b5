//! Worker pools: every rayon pool the library builds for a caller's thread
//! count comes from [`pool`], so the same limit
//! ([`MAX_THREADS`], from modelbin-format) holds for the command line,
//! Python and the library's runs, and is checked before any thread starts.

pub use modelbin_format::io::threads::{MAX_THREADS, check};

use crate::{Error, Result};

/// A rayon pool of `threads` workers (`None` or `Some(0)`: one per core).
/// More than [`MAX_THREADS`] is refused
/// ([`modelbin_format::Error::TooManyThreads`]) before any thread starts;
/// a pool the system cannot start is [`Error::ThreadPool`] (rayon stops
/// the threads it had started). Dropping the pool ends its threads.
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let threads = check(threads.unwrap_or(0))?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::ThreadPool(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_over_the_limit_are_refused_before_starting() {
        assert_eq!(pool(Some(3)).unwrap().current_num_threads(), 3);
        let err = pool(Some(MAX_THREADS + 1)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Format(modelbin_format::Error::TooManyThreads { .. })
            ),
            "{err:?}"
        );
    }
}
