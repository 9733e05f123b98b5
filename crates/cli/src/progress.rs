//! The CLI's one progress bar, on stderr: by bytes for conversions and scans
//! (shown once the work has lasted over a second), by steps for training
//! (shown at once). When stderr is not a terminal (a pipe, `nohup`, CI) no
//! bar is drawn; a plain line with the position, rate note and time left is
//! written every [`LOG_EVERY`] instead (`MODELBIN_PROGRESS_EVERY=SECONDS`
//! changes it), so long runs are never silent.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const DELAY: Duration = Duration::from_secs(1);

/// How often a run not on a terminal logs a line of progress, unless the
/// environment variable `MODELBIN_PROGRESS_EVERY` gives the seconds.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// The interval between logged lines: [`LOG_EVERY`] or the environment's.
fn log_every() -> Duration {
    std::env::var("MODELBIN_PROGRESS_EVERY")
        .ok()
        .and_then(|seconds| seconds.parse::<f64>().ok())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .map_or(LOG_EVERY, Duration::from_secs_f64)
}

/// A progress bar with a label and an optional note.
pub struct Progress {
    bar: ProgressBar,
    /// What is in progress, for the logged lines.
    label: &'static str,
    /// Whether the position counts bytes.
    bytes: bool,
    started: Instant,
    enabled: bool,
    shown: bool,
    /// When a line was last logged (no terminal), and how often to.
    logged: Instant,
    log_every: Duration,
}

impl Progress {
    /// A byte-count bar labelled `message`, hidden until [`DELAY`] has passed.
    pub fn new(message: &'static str) -> Self {
        let mut progress = Progress::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
            None,
        );
        progress.bar.set_message(message);
        (progress.label, progress.bytes) = (message, true);
        progress
    }

    /// A bar of `total` steps, `done` of them already done, shown at once;
    /// [`Progress::note`] sets the text after the count.
    pub fn steps(total: u64, done: u64) -> Self {
        let mut progress = Progress::with_template(
            "training [{bar:30}] {pos}/{len} steps, {msg} ({eta})",
            Some(total),
        );
        progress.label = "training: steps";
        progress.bar.set_position(done);
        progress.show();
        progress
    }

    /// A bar counting `unit` (images, files), labelled `label`, with
    /// their rate; shown once the work has lasted over a second.
    pub fn items(label: &'static str, unit: &'static str) -> Self {
        let template =
            format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{per_sec}}, {{eta}})");
        let mut progress = Progress::with_template(&template, None);
        progress.bar.set_message(label);
        progress.label = label;
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
        (progress.label, progress.bytes) = ("embedding: bytes", true);
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
        self.log_if_due();
    }

    fn with_template(template: &str, total: Option<u64>) -> Self {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        let now = Instant::now();
        Progress {
            bar,
            label: "",
            bytes: false,
            started: now,
            enabled: std::io::stderr().is_terminal(),
            shown: false,
            logged: now,
            log_every: log_every(),
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
        self.log_if_due();
    }

    /// Without a terminal, a line of progress every [`LOG_EVERY`].
    fn log_if_due(&mut self) {
        if self.enabled || self.logged.elapsed() < self.log_every {
            return;
        }
        self.logged = Instant::now();
        let (done, total) = (self.bar.position(), self.bar.length().unwrap_or(0));
        let percent = 100.0 * done as f64 / total.max(1) as f64;
        let (done, total) = if self.bytes {
            (
                format!("{:.1} MB", done as f64 / 1e6),
                format!("{:.1} MB", total as f64 / 1e6),
            )
        } else {
            (done.to_string(), total.to_string())
        };
        let note = self.bar.message();
        let note = if note.is_empty() || note == self.label {
            String::new()
        } else {
            format!(", {note}")
        };
        crate::stderr::errln!(
            "{} {done}/{total} ({percent:.0}%){note}, {:.0} s elapsed, about {:.0} s left",
            self.label,
            self.started.elapsed().as_secs_f64(),
            self.bar.eta().as_secs_f64()
        );
    }

    /// Sets the text shown after the count.
    pub fn note(&self, note: String) {
        self.bar.set_message(note);
    }

    /// Prints `line` on stderr, above the bar when it is drawn.
    pub fn println(&self, line: String) {
        if self.shown {
            self.bar.println(crate::printable::printable(&line));
        } else {
            crate::stderr::errln!("{line}");
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
