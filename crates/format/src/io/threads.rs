//! The one limit on worker threads that every face of modelbin applies
//! (the command line's `--threads`, Python's `num_threads` and `threads`,
//! the library's own pools), checked before any thread starts.

use crate::{Error, Result};

/// The most worker threads one pool, or one loader, may have: 256.
///
/// A fixed number rather than a multiple of this machine's cores, so that
/// the same call is accepted or refused everywhere. Work here is bound by
/// cores and memory bandwidth: past the cores, more threads only add
/// stacks and scheduling, and a pool of a million threads is a typo that
/// would otherwise start threads until the system refuses one.
pub const MAX_THREADS: usize = 256;

/// `threads` when it is at most [`MAX_THREADS`], else
/// [`Error::TooManyThreads`]. Zero passes: callers read it as their
/// default (one per core) or as one, as they document.
///
/// ```
/// use modelbin_format::io::threads::{MAX_THREADS, check};
///
/// assert_eq!(check(8).unwrap(), 8);
/// assert!(check(MAX_THREADS + 1).is_err());
/// ```
pub fn check(threads: usize) -> Result<usize> {
    if threads > MAX_THREADS {
        return Err(Error::TooManyThreads {
            threads,
            limit: MAX_THREADS,
        });
    }
    Ok(threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_inclusive_and_the_error_names_it() {
        assert_eq!(check(0).unwrap(), 0);
        assert_eq!(check(MAX_THREADS).unwrap(), MAX_THREADS);
        let err = check(1_000_000).unwrap_err();
        assert!(
            matches!(
                err,
                Error::TooManyThreads {
                    threads: 1_000_000,
                    limit: MAX_THREADS
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("256"), "{err}");
    }
}
