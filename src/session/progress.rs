//! The live progress line as the supervisor tells it: the phase, the time since the
//! command started and the frames seen. The command line shows it (`cmd/run_progress.rs`:
//! a line on a terminal); a run given none shows nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub trait RunProgress: Send {
    /// The command started.
    fn begin(&mut self);
    /// Every half second while the command runs: the phase (`warmup`, `measuring`), the
    /// time since the command started, the frames seen so far.
    fn update(&mut self, phase: &str, elapsed: Duration, frames: u64);
    /// The phase changed between updates (`stopping`).
    fn phase(&mut self, phase: &str);
    /// The run is drained: the line goes.
    fn finish(&mut self);
}

/// Where a run tells its progress: the command line's, or none (the default).
#[derive(Clone, Default)]
pub struct ProgressLine(Option<Arc<Mutex<dyn RunProgress>>>);

impl ProgressLine {
    pub fn new(progress: impl RunProgress + 'static) -> ProgressLine {
        ProgressLine(Some(Arc::new(Mutex::new(progress))))
    }

    /// Whether a line is shown (then the frames seen are counted while spilling).
    pub fn is_shown(&self) -> bool {
        self.0.is_some()
    }

    /// Tells the progress `what`, when there is one to tell.
    pub(super) fn tell(&self, what: impl FnOnce(&mut dyn RunProgress)) {
        if let Some(Ok(mut progress)) = self.0.as_ref().map(|p| p.lock()) {
            what(&mut *progress);
        }
    }
}

impl std::fmt::Debug for ProgressLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ProgressLine"
        } else {
            "no progress line"
        })
    }
}
