//! The live progress line on a terminal: phase, elapsed, frames, current fps.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    last: Option<(Instant, u64)>,
    fps: f64,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}").expect("static template"),
            );
            bar
        });
        Progress {
            bar,
            last: None,
            fps: 0.0,
        }
    }

    pub fn update(&mut self, phase: &str, elapsed: Duration, frames: u64) {
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

    pub fn phase(&mut self, phase: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(phase.to_owned());
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
