//! `framelab run --live 5s`: every interval, the power-of-two histogram of each stage's
//! spans recorded since the last print, read back from the run file as it is written
//! (bpftrace's `interval:s:5 { print(@); clear(@); }`), on standard error.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{render_series, Series};

pub struct Live {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Live {
    /// Starts printing every `every` the spans of run `run_id` in `path` committed since.
    pub fn start(path: PathBuf, run_id: i64, every: Duration) -> Live {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("framelab-live".into())
            .spawn(move || {
                if let Err(e) = print_loop(&path, run_id, every, &flag) {
                    eprintln!("framelab: live histograms stopped: {e}");
                }
            })
            .ok();
        Live { stop, thread }
    }

    /// Stops the printing thread (the final report follows).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn print_loop(
    path: &std::path::Path,
    run_id: i64,
    every: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut next = started + every;
    let mut last_id = 0i64;
    loop {
        while Instant::now() < next {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50).min(next - Instant::now()));
        }
        let (stages, spans, newest) = crate::store::spans_after(path, run_id, last_id)?;
        last_id = newest.max(last_id);
        let mut by_stage: Vec<Vec<i64>> = vec![Vec::new(); stages.len()];
        for (stage, dur_ns) in spans {
            if let Some(v) = by_stage.get_mut(usize::from(stage)) {
                v.push(dur_ns);
            }
        }
        let from = (next - every - started).as_secs_f64();
        let mut out = format!("--- {:.1}–{:.1} s ---\n", from, from + every.as_secs_f64());
        let mut any = false;
        for (name, values_ns) in stages.into_iter().zip(by_stage) {
            if !values_ns.is_empty() {
                any = true;
                out.push_str(&render_series(
                    &Series {
                        name: format!("@{name}"),
                        values_ns,
                    },
                    None,
                ));
                out.push('\n');
            }
        }
        if !any {
            out.push_str("no spans\n");
        }
        let _ = std::io::stderr().lock().write_all(out.as_bytes());
        next += every;
    }
}
