//! The live progress line on a terminal (`session::RunProgress`): phase, elapsed, frames,
//! current fps.

use std::time::{Duration, Instant};

use framelab::session::RunProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Default)]
pub struct TerminalProgress {
    bar: Option<ProgressBar>,
    last: Option<(Instant, u64)>,
    fps: f64,
}

impl RunProgress for TerminalProgress {
    fn begin(&mut self) {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("static template"));
        *self = TerminalProgress {
            bar: Some(bar),
            ..TerminalProgress::default()
        };
    }

    fn update(&mut self, phase: &str, elapsed: Duration, frames: u64) {
        let Some(bar) = &self.bar else { return };
        let now = Instant::now();
        if let Some((then, frames_then)) = self.last {
            let seconds = (now - then).as_secs_f64();
            if seconds >= 0.5 {
                self.fps = frames.saturating_sub(frames_then) as f64 / seconds;
                self.last = Some((now, frames));
            }
        } else {
            self.last = Some((now, frames));
        }
        bar.set_message(format!(
            "{phase} · {:.1} s · {frames} frames · {:.1} fps",
            elapsed.as_secs_f64(),
            self.fps
        ));
        bar.tick();
    }

    fn phase(&mut self, phase: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(phase.to_owned());
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
