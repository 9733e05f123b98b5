//! A progress bar on stderr that appears only for work lasting over a second,
//! and never when stderr is not a terminal.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DELAY: Duration = Duration::from_secs(1);

/// A byte-count progress bar, hidden until [`DELAY`] has passed.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// A hidden bar labelled `message`.
    pub fn new(message: &'static str) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_message(message);
        Progress {
            bar,
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Records progress; shows the bar once the work has lasted over a second.
    pub fn update(&mut self, done: u64, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(done);
        if self.enabled && !self.shown && self.started.elapsed() > DELAY {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
