//! Running third-party decoding that may panic on malformed input: the
//! panic becomes `None`, and its message is not printed, because it is an
//! answer about the input and not a bug of this program.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`catch_panic`].
    static CATCHING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work`, `None` if it panicked. Panics on other threads, or on
/// this one outside `work`, are reported by the hook that was installed
/// before, as ever.
pub(super) fn catch_panic<T>(work: impl FnOnce() -> T) -> Option<T> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let report = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                report(info);
            }
        }));
    });
    let outer = CATCHING.with(|catching| catching.replace(true));
    // The work's state is dropped with the panic: nothing it touched is
    // used again.
    let result = panic::catch_unwind(AssertUnwindSafe(work)).ok();
    CATCHING.with(|catching| catching.set(outer));
    result
}
