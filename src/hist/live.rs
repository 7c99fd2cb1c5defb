//! `framelab run --live 5s`: every interval, the power-of-two histogram of each stage's
//! spans recorded since the last print, read back from the run file as it is written
//! (bpftrace's `interval:s:5 { print(@); clear(@); }`), where the command line says
//! (its standard error); with `--live-linear STEP` in the linear layout. The interval the
//! run ends in is printed too, once the run is finalised, marked `(end of the run)`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{render_series, LinearSpec, Series};

/// Where the live histograms are written: given by the command line (its standard
/// error); nowhere unless given.
#[derive(Clone)]
pub struct LiveOut(Arc<Mutex<dyn Write + Send>>);

impl LiveOut {
    pub fn new(out: impl Write + Send + 'static) -> LiveOut {
        LiveOut(Arc::new(Mutex::new(out)))
    }

    /// One interval's histograms, written whole.
    fn write(&self, text: &str) {
        if let Ok(mut out) = self.0.lock() {
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }
}

impl Default for LiveOut {
    fn default() -> LiveOut {
        LiveOut::new(std::io::sink())
    }
}

impl std::fmt::Debug for LiveOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveOut")
    }
}

pub struct Live {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Option<Progress>>>,
    path: PathBuf,
    run_id: i64,
    linear: Option<LinearSpec>,
    out: LiveOut,
}

/// Where the printing stopped: the newest span printed, and when the interval not yet
/// printed began.
#[derive(Clone, Copy, Debug)]
struct Progress {
    last_id: i64,
    started: Instant,
    interval_start: Instant,
}

/// The interval the run ended inside, to print once the run file holds all its spans.
pub struct LastInterval {
    path: PathBuf,
    run_id: i64,
    linear: Option<LinearSpec>,
    out: LiveOut,
    progress: Option<Progress>,
    ended: Instant,
}

impl Live {
    /// Starts printing to `out` every `every` the spans of run `run_id` in `path`
    /// committed since, in the power-of-two layout or, with `linear`, the linear one.
    pub fn start(
        path: PathBuf,
        run_id: i64,
        every: Duration,
        linear: Option<LinearSpec>,
        out: LiveOut,
    ) -> Live {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let file = path.clone();
        let to = out.clone();
        let thread = std::thread::Builder::new()
            .name("framelab-live".into())
            .spawn(
                move || match print_loop(&file, run_id, every, linear, &to, &flag) {
                    Ok(progress) => Some(progress),
                    Err(e) => {
                        log::info!("live histograms stopped: {e}");
                        None
                    }
                },
            )
            .ok();
        Live {
            stop,
            thread,
            path,
            run_id,
            linear,
            out,
        }
    }

    /// Stops the printing thread. The interval the run ended in is printed by
    /// [`LastInterval::print`] once the run is finalised (its last spans written).
    pub fn stop(mut self) -> LastInterval {
        let ended = Instant::now();
        self.stop.store(true, Ordering::Relaxed);
        let progress = self.thread.take().and_then(|t| t.join().ok().flatten());
        LastInterval {
            path: self.path.clone(),
            run_id: self.run_id,
            linear: self.linear,
            out: self.out.clone(),
            progress,
            ended,
        }
    }
}

impl LastInterval {
    /// Prints the spans recorded since the last print: the end of the run, never lost.
    pub fn print(self) {
        let Some(p) = self.progress else {
            return;
        };
        let from = (p.interval_start - p.started).as_secs_f64();
        let to = (self.ended.max(p.interval_start) - p.started).as_secs_f64();
        match print_since(
            &self.path,
            self.run_id,
            p.last_id,
            self.linear,
            &self.out,
            (from, to),
            " (end of the run)",
        ) {
            Ok(_) => {}
            Err(e) => log::info!("the last live histogram could not be read: {e}"),
        }
    }
}

/// Prints the spans after `last_id` to `out` as one interval `from`–`to` s; returns the
/// newest id.
fn print_since(
    path: &std::path::Path,
    run_id: i64,
    last_id: i64,
    linear: Option<LinearSpec>,
    out: &LiveOut,
    (from, to): (f64, f64),
    what: &str,
) -> anyhow::Result<i64> {
    let (stages, spans, newest) = crate::store::spans_after(path, run_id, last_id)?;
    let mut by_stage: Vec<Vec<i64>> = vec![Vec::new(); stages.len()];
    for (stage, dur_ns) in spans {
        if let Some(v) = by_stage.get_mut(usize::from(stage)) {
            v.push(dur_ns);
        }
    }
    let mut text = format!("--- {from:.1}–{to:.1} s{what} ---\n");
    let mut any = false;
    for (name, values_ns) in stages.into_iter().zip(by_stage) {
        if !values_ns.is_empty() {
            any = true;
            text.push_str(&render_series(
                &Series {
                    name: format!("@{name}"),
                    values_ns,
                },
                linear.as_ref(),
            ));
            text.push('\n');
        }
    }
    if !any {
        text.push_str("no spans\n");
    }
    out.write(&text);
    Ok(newest.max(last_id))
}

fn print_loop(
    path: &std::path::Path,
    run_id: i64,
    every: Duration,
    linear: Option<LinearSpec>,
    out: &LiveOut,
    stop: &AtomicBool,
) -> anyhow::Result<Progress> {
    let started = Instant::now();
    let mut next = started + every;
    // Where the interval not yet printed began.
    let mut from_at = started;
    let mut last_id = 0i64;
    loop {
        // Sleeps in short steps: a stop is seen within 50 ms, whatever the interval.
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(Progress {
                    last_id,
                    started,
                    interval_start: from_at,
                });
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep(Duration::from_millis(50).min(next - now));
        }
        last_id = print_since(
            path,
            run_id,
            last_id,
            linear,
            out,
            (
                (from_at - started).as_secs_f64(),
                (next - started).as_secs_f64(),
            ),
            "",
        )?;
        from_at = next;
        next += every;
        // A print slower than the interval: skip to the next interval still ahead, and
        // let that print cover the ones missed (spans are read by id, none is lost).
        let now = Instant::now();
        if next <= now {
            let behind = (now - next).as_nanos() / every.as_nanos().max(1) + 1;
            let skip = Duration::from_nanos(u64::try_from(behind * every.as_nanos()).unwrap_or(0));
            next = next.checked_add(skip).unwrap_or(now + every);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Write` the test reads back once the live printing is over.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Stopped before its first interval, the live printing still shows every span of the
    /// run once it is finalised, and only where it was told to.
    #[test]
    fn the_end_of_the_run_is_written_where_the_command_said() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.framelab");
        let run_id =
            crate::store::write_run(&path, &crate::analyze::fixtures::reference_run()).unwrap();
        let kept = Kept::default();
        let every = Duration::from_secs(3600);
        let live = Live::start(path, run_id, every, None, LiveOut::new(kept.clone()));
        live.stop().print();
        let text = String::from_utf8(kept.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("--- 0.0–"), "{text}");
        assert!(text
            .lines()
            .next()
            .unwrap()
            .ends_with(" s (end of the run) ---"));
        for stage in ["@capture (µs):", "@encode (µs):", "@send (µs):"] {
            assert!(text.contains(stage), "{stage} in {text}");
        }
        // The 11 capture spans of 1 ms each, in one bucket.
        let capture = text
            .split("@capture")
            .nth(1)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap();
        assert!(capture.starts_with("[512, 1K)"), "{capture}");
        assert!(capture.contains(" 11 |"), "{capture}");
    }
}
