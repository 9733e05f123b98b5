//! The CLI's one progress bar, on stderr, never drawn when stderr is not a
//! terminal: by bytes for conversions and scans (shown once the work has
//! lasted over a second), by steps for training (shown at once).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DELAY: Duration = Duration::from_secs(1);

/// A progress bar with a label and an optional note.
pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// A byte-count bar labelled `message`, hidden until [`DELAY`] has passed.
    pub fn new(message: &'static str) -> Self {
        let progress = Progress::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            None,
        );
        progress.bar.set_message(message);
        progress
    }

    /// A bar of `total` steps, `done` of them already done, shown at once;
    /// [`Progress::note`] sets the text after the count.
    pub fn steps(total: u64, done: u64) -> Self {
        let mut progress = Progress::with_template(
            "training [{bar:30}] {pos}/{len} steps, {msg} ({eta})",
            Some(total),
        );
        progress.bar.set_position(done);
        progress.show();
        progress
    }

    /// A bar over the bytes of a text input of `total_bytes` (none: stdin,
    /// no bar), noting the sentences done and their rate; shown once the
    /// work has lasted over a second.
    pub fn sentences(total_bytes: Option<u64>) -> Self {
        let mut progress = Progress::with_template(
            "embedding [{bar:30}] {bytes}/{total_bytes}, {msg} ({eta})",
            total_bytes,
        );
        progress.enabled &= total_bytes.is_some();
        progress
    }

    /// Records `sentences` done after reading `bytes` of the input.
    pub fn sentences_done(&mut self, sentences: u64, bytes: u64) {
        let rate = sentences as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        self.bar
            .set_message(format!("{sentences} sentences, {rate:.0} sentences/s"));
        self.bar.set_position(bytes);
        if self.started.elapsed() > DELAY {
            self.show();
        }
    }

    fn with_template(template: &str, total: Option<u64>) -> Self {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress {
            bar,
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    fn show(&mut self) {
        if self.enabled && !self.shown {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
    }

    /// Records progress; a byte bar shows once the work has lasted over a
    /// second.
    pub fn update(&mut self, done: u64, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(done);
        if self.started.elapsed() > DELAY {
            self.show();
        }
    }

    /// Sets the text shown after the count.
    pub fn note(&self, note: String) {
        self.bar.set_message(note);
    }

    /// Prints `line` on stderr, above the bar when it is drawn.
    pub fn println(&self, line: String) {
        if self.shown {
            self.bar.println(line);
        } else {
            crate::stdout::errln!("{line}");
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
