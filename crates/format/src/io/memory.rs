//! How much memory this process may still take: the least of the
//! machine's physical memory, the room left under the address-space limit
//! (`ulimit -v`, RLIMIT_AS) and the cgroup's memory limit (v2 `memory.max`,
//! v1 `memory.limit_in_bytes`). Work that needs more is refused before it
//! starts, instead of aborting in an allocation. The cgroup's limit is
//! taken whole: its usage counts the page cache, which the kernel gives
//! back under pressure, so subtracting it would refuse work that fits.

use std::path::Path;

/// The tightest memory bound on this process, and what sets it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryBound {
    /// Bytes still available under the bound.
    pub bytes: u64,
    /// What sets it, for messages: "physical memory", "the address-space
    /// limit (ulimit -v)" or "the cgroup's memory limit".
    pub source: &'static str,
}

/// Work that needs more memory than this process may take.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{what} needs about {:.1} GB of memory; {} leaves {:.1} GB",
    needed / 1e9,
    bound.source,
    bound.bytes as f64 / 1e9
)]
pub struct Shortfall {
    /// The work: "this autoencoder", "this model", ...
    pub what: String,
    /// Its estimated bytes.
    pub needed: f64,
    /// The bound it exceeds.
    pub bound: MemoryBound,
}

/// Refuses work whose estimated memory, `bytes`, is more than
/// [`available`] (an estimate that overflowed to NaN counts as too much),
/// so that the caller can say so before an allocation aborts the process.
/// With no readable bound, everything fits.
pub fn check(bytes: f64, what: &str) -> Result<(), Shortfall> {
    match available() {
        Some(bound) if bytes.is_nan() || bytes > bound.bytes as f64 => Err(Shortfall {
            what: what.to_owned(),
            needed: bytes,
            bound,
        }),
        _ => Ok(()),
    }
}

/// The tightest of the bounds this module knows, or `None` when none can
/// be read.
pub fn available() -> Option<MemoryBound> {
    [
        physical().map(|bytes| MemoryBound {
            bytes,
            source: "physical memory",
        }),
        address_space_room().map(|bytes| MemoryBound {
            bytes,
            source: "the address-space limit (ulimit -v)",
        }),
        cgroup_limit().map(|bytes| MemoryBound {
            bytes,
            source: "the cgroup's memory limit",
        }),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|bound| bound.bytes)
}

/// The machine's physical memory.
fn physical() -> Option<u64> {
    // SAFETY: sysconf only reads system configuration values.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let bytes = u64::try_from(pages)
        .ok()?
        .checked_mul(u64::try_from(page_size).ok()?)?;
    (bytes > 0).then_some(bytes)
}

/// RLIMIT_AS less the address space this process already has.
fn address_space_room() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let used = address_space_used().unwrap_or(0);
    Some(limit.rlim_cur.saturating_sub(used))
}

/// The process's virtual size, from `/proc/self/statm` (pages).
fn address_space_used() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf only reads system configuration values.
    let page_size = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    pages.checked_mul(page_size)
}

/// The cgroup's memory limit, for cgroup v2 or v1.
fn cgroup_limit() -> Option<u64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let path = path.trim_start_matches('/');
        if controllers.is_empty() {
            limit_in(&Path::new("/sys/fs/cgroup").join(path), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            // In a container the cgroup's own directory is mounted as the
            // hierarchy's root; outside one it sits at its path.
            let root = Path::new("/sys/fs/cgroup/memory");
            limit_in(&root.join(path), "memory.limit_in_bytes")
                .or_else(|| limit_in(root, "memory.limit_in_bytes"))
        } else {
            None
        }
    })
}

/// The number in `dir/file` when it is below 2^62 (v1 writes a huge
/// number, v2 `max`, for no limit).
fn limit_in(dir: &Path, file: &str) -> Option<u64> {
    std::fs::read_to_string(dir.join(file))
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|&limit: &u64| limit < 1 << 62)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_at_most_physical_memory() {
        let bound = available().expect("physical memory is readable on Linux");
        assert!(bound.bytes <= physical().unwrap());
    }

    #[test]
    fn limits_are_parsed_from_cgroup_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("memory.max"), "2147483648\n").unwrap();
        assert_eq!(limit_in(dir.path(), "memory.max"), Some(1 << 31));
        std::fs::write(dir.path().join("memory.max"), "max\n").unwrap();
        assert_eq!(limit_in(dir.path(), "memory.max"), None);
        std::fs::write(dir.path().join("memory.max"), "9223372036854771712\n").unwrap();
        assert_eq!(limit_in(dir.path(), "memory.max"), None);
    }
}
