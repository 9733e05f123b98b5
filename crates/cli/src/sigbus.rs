//! A memory-mapped input truncated by another process raises SIGBUS when a
//! page past its new end is read; this turns that into exit 1 with a
//! message instead of a crash.

/// The message and exit status for a memory-mapped input that shrank under
/// us: reading a page past the new end of a mapped file raises SIGBUS.
const SHRANK_MESSAGE: &[u8] = b"error: an input file shrank while it was being read \
(another process truncated or rewrote it); no output file was replaced\n";

extern "C" fn input_shrank(_: libc::c_int) {
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffer is a
    // static byte string.
    unsafe {
        libc::write(
            libc::STDERR_FILENO,
            SHRANK_MESSAGE.as_ptr().cast(),
            SHRANK_MESSAGE.len(),
        );
        libc::_exit(1);
    }
}

/// Turns SIGBUS (a mapped input truncated by another process) into exit 1
/// with a message instead of a crash. Temporary output files are left for
/// the next write to the same path to remove (see `modelbin_format::io::output`).
pub fn exit_cleanly_on_sigbus() {
    let handler: extern "C" fn(libc::c_int) = input_shrank;
    // SAFETY: called once at start-up, before any thread exists; the
    // handler only calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGBUS, handler as libc::sighandler_t);
    }
}
