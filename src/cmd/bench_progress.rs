//! The bench's progress as the command line shows it (`bench::Progress`): a bar on a
//! terminal (what runs, how many are left, about how long), one line per finished run
//! otherwise (CI logs).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct BenchProgress {
    on_terminal: bool,
    bar: Option<ProgressBar>,
    total: u64,
    done: u64,
    /// Seconds each run took in this invocation (prepare included), for the estimate.
    seconds: Vec<f64>,
}

impl BenchProgress {
    /// A bar when standard error is a terminal, lines otherwise.
    pub fn new(on_terminal: bool) -> BenchProgress {
        BenchProgress {
            on_terminal,
            bar: None,
            total: 0,
            done: 0,
            seconds: Vec::new(),
        }
    }

    /// About how long the runs left will take, from the mean of those done so far.
    fn time_left(&self) -> String {
        if self.seconds.is_empty() {
            return "time left unknown until a run finishes".into();
        }
        let mean = self.seconds.iter().sum::<f64>() / self.seconds.len() as f64;
        let left = mean * (self.total - self.done) as f64;
        let rounded = Duration::from_secs(left.round() as u64);
        format!("about {} left", humantime::format_duration(rounded))
    }
}

impl framelab::bench::Progress for BenchProgress {
    fn begin(&mut self, total: u64, done: u64) {
        (self.total, self.done) = (total, done);
        self.bar = self.on_terminal.then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr_with_hz(5));
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{bar:24}] {pos}/{len} · {msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar.set_position(done);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
    }

    fn starting(&mut self, what: &str) {
        let what = framelab::display::text(what);
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "running {what} · {} runs to go · {}",
                self.total - self.done,
                self.time_left()
            ));
        }
    }

    fn finished(&mut self, what: &str, status: &str, took: Duration) {
        let (what, status) = (
            framelab::display::text(what),
            framelab::display::text(status),
        );
        self.done += 1;
        self.seconds.push(took.as_secs_f64());
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done);
                if status != "ok" {
                    bar.println(format!("framelab: {what}: {status}"));
                }
            }
            None => eprintln!(
                "framelab: run {}/{} {what}: {status} ({:.1} s; {})",
                self.done,
                self.total,
                took.as_secs_f64(),
                self.time_left()
            ),
        }
    }

    /// A line of its own (above the bar on a terminal).
    fn say(&mut self, line: &str) {
        let line = framelab::display::text(line);
        match &self.bar {
            Some(bar) => bar.println(format!("framelab: {line}")),
            None => eprintln!("framelab: {line}"),
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
