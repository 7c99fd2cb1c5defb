//! `framelab run --live 5s`: every interval, the power-of-two histogram of each stage's
//! spans that ended in it, read back from the run file as it is written (bpftrace's
//! `interval:s:5 { print(@); clear(@); }`), where the command line says (its standard
//! error); with `--live-linear STEP` in the linear layout.
//!
//! The intervals are on the run's clock: interval k holds the spans whose end (ns after the
//! launch, as the run file stores it) falls in [k·every, (k+1)·every), and its block is
//! labelled with exactly that. Spans reach the file at the collector's commits (every
//! 0.5 s), so an interval is printed once the file holds every record drained up to its end
//! (`CommittedThrough`): at the first commit after it ends, about 0.5 s late at most. A span
//! committed after its interval was printed (its record written well after its end) is
//! printed at the next print, in a block of its own marked `(late)` under its interval's
//! label. Once the run is finalised the intervals left are printed, then the spans that
//! ended after the last whole interval, marked `(end of the run)`. Every span is in exactly
//! one block.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::{render_series, LinearSpec, Series};
use crate::model::Span;

/// Where the live histograms are written: given by the command line (its standard
/// error); nowhere unless given.
#[derive(Clone)]
pub struct LiveOut(Arc<Mutex<dyn Write + Send>>);

impl LiveOut {
    pub fn new(out: impl Write + Send + 'static) -> LiveOut {
        LiveOut(Arc::new(Mutex::new(out)))
    }

    /// One print's blocks, written whole.
    fn write(&self, text: &str) {
        if text.is_empty() {
            return;
        }
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

/// How far back the run file is complete: the CLOCK_MONOTONIC ns before which every record
/// drained from the rings is committed (the collector's `Committed::drained_mono_ns`), 0
/// before the first commit.
pub type CommittedThrough = Box<dyn Fn() -> i64 + Send>;

/// The run the live view reads: its file, its id, and its launch (CLOCK_MONOTONIC ns), the
/// origin of the spans' times and of the labels.
#[derive(Clone, Debug)]
pub struct LiveRun {
    pub path: PathBuf,
    pub run_id: i64,
    pub origin_mono_ns: i64,
}

pub struct Live {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Progress>>,
    run: LiveRun,
    linear: Option<LinearSpec>,
    out: LiveOut,
}

/// Where the printing stopped: the newest span read, and the spans read but not printed.
#[derive(Debug)]
struct Progress {
    last_id: i64,
    intervals: Intervals,
}

/// What is left to print once the run is finalised: the intervals not printed yet, and the
/// spans that ended after the last whole one.
pub struct LastInterval {
    run: LiveRun,
    linear: Option<LinearSpec>,
    out: LiveOut,
    progress: Option<Progress>,
    /// When the printing stopped, ns after the launch.
    ended_ns: i64,
}

impl Live {
    /// Starts printing to `out`, every `every` of the run's clock, the spans of `run` that
    /// ended in that interval, once `through` says the file holds them; in the power-of-two
    /// layout or, with `linear`, the linear one.
    pub fn start(
        run: LiveRun,
        every: Duration,
        linear: Option<LinearSpec>,
        out: LiveOut,
        through: CommittedThrough,
    ) -> Live {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let read = run.clone();
        let to = out.clone();
        let every_ns = i64::try_from(every.as_nanos()).unwrap_or(i64::MAX).max(1);
        let thread = std::thread::Builder::new()
            .name("framelab-live".into())
            .spawn(move || {
                let mut progress = Progress {
                    last_id: 0,
                    intervals: Intervals::new(every_ns),
                };
                if let Err(e) = print_loop(&read, linear, &to, &flag, &through, &mut progress) {
                    log::info!("live histograms stopped: {e}");
                }
                progress
            })
            .ok();
        Live {
            stop,
            thread,
            run,
            linear,
            out,
        }
    }

    /// Stops the printing thread. What is left is printed by [`LastInterval::print`] once
    /// the run is finalised (its last spans written).
    pub fn stop(mut self) -> LastInterval {
        let ended_ns = framelab_probe::monotonic_ns() as i64 - self.run.origin_mono_ns;
        self.stop.store(true, Ordering::Relaxed);
        let progress = self.thread.take().and_then(|t| t.join().ok());
        LastInterval {
            run: self.run.clone(),
            linear: self.linear,
            out: self.out.clone(),
            progress,
            ended_ns,
        }
    }
}

impl LastInterval {
    /// Prints every span not printed yet: the intervals that ended before the stop, then
    /// the end of the run; never loses one.
    pub fn print(self) {
        let Some(mut p) = self.progress else {
            return;
        };
        match crate::store::spans_after(&self.run.path, self.run.run_id, p.last_id) {
            Ok((stages, spans, _)) => {
                p.intervals.add_all(&spans);
                let blocks = p.intervals.rest(self.ended_ns);
                self.out
                    .write(&render_blocks(&stages, &blocks, self.linear.as_ref()));
            }
            Err(e) => log::info!("the last live histogram could not be read: {e}"),
        }
    }
}

fn print_loop(
    run: &LiveRun,
    linear: Option<LinearSpec>,
    out: &LiveOut,
    stop: &AtomicBool,
    through: &CommittedThrough,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    loop {
        // Waits in short steps until the file holds every span that ended in the next
        // interval: a stop is seen within 50 ms, whatever the interval.
        let through_ns = loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            // Read before the file: what the file then holds is at least this complete.
            let through_ns = through().saturating_sub(run.origin_mono_ns);
            if through_ns >= progress.intervals.next_end_ns() {
                break through_ns;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (stages, spans, newest) =
            crate::store::spans_after(&run.path, run.run_id, progress.last_id)?;
        progress.last_id = newest.max(progress.last_id);
        progress.intervals.add_all(&spans);
        let blocks = progress.intervals.due(through_ns);
        out.write(&render_blocks(&stages, &blocks, linear.as_ref()));
    }
}

/// Spans read and not printed yet, by the interval their end falls in: which block each
/// span is printed in, and when a block is due. No clock and no file: what it is given.
#[derive(Debug)]
struct Intervals {
    every_ns: i64,
    /// The first interval not printed yet.
    next: i64,
    pending: BTreeMap<i64, Bin>,
}

/// One interval's spans, as read.
#[derive(Debug, Default)]
struct Bin {
    /// (stage, duration ns) of each span.
    spans: Vec<(u16, i64)>,
    earliest_end_ns: Option<i64>,
    latest_end_ns: Option<i64>,
}

/// Why a block is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    /// Its interval is over and the file holds its spans.
    OnTime,
    /// Spans committed after their interval was printed.
    Late,
    /// What ended after the last whole interval, printed once the run is finalised.
    EndOfRun,
}

/// One printed block: the spans that ended in [from, to), ns after the launch.
#[derive(Debug, PartialEq, Eq)]
struct Block {
    from_ns: i64,
    to_ns: i64,
    when: When,
    spans: Vec<(u16, i64)>,
}

impl Intervals {
    fn new(every_ns: i64) -> Intervals {
        Intervals {
            every_ns: every_ns.max(1),
            next: 0,
            pending: BTreeMap::new(),
        }
    }

    /// Where the next interval to print ends, ns after the launch.
    fn next_end_ns(&self) -> i64 {
        self.next.saturating_add(1).saturating_mul(self.every_ns)
    }

    /// Bins spans by end. A span that ended before the launch (a probe's, say) goes in the
    /// first interval, whose label then starts at its end.
    fn add_all(&mut self, spans: &[Span]) {
        for s in spans {
            let end_ns = s.start_ns.saturating_add(s.dur_ns);
            let k = end_ns.div_euclid(self.every_ns).max(0);
            let bin = self.pending.entry(k).or_default();
            bin.spans.push((s.stage, s.dur_ns));
            bin.earliest_end_ns = Some(bin.earliest_end_ns.map_or(end_ns, |e| e.min(end_ns)));
            bin.latest_end_ns = Some(bin.latest_end_ns.map_or(end_ns, |e| e.max(end_ns)));
        }
    }

    /// The blocks due once every span that ended before `through_ns` is read: spans of
    /// intervals already printed (late), then each interval over by then, empty or not, in
    /// order.
    fn due(&mut self, through_ns: i64) -> Vec<Block> {
        let over = through_ns.div_euclid(self.every_ns).max(0);
        let late: Vec<i64> = self.pending.range(..self.next).map(|(&k, _)| k).collect();
        let mut blocks: Vec<Block> = (late.into_iter())
            .map(|k| self.block(k, When::Late))
            .collect();
        while self.next < over {
            blocks.push(self.block(self.next, When::OnTime));
            self.next += 1;
        }
        blocks
    }

    /// Once the run is over, `ended_ns` after the launch, and every span read: the blocks
    /// due by then, and one of every span left, from the end of the last whole interval to
    /// the end of the run (or of its last span, if later).
    fn rest(mut self, ended_ns: i64) -> Vec<Block> {
        let mut blocks = self.due(ended_ns);
        let latest_end_ns = self.pending.values().filter_map(|b| b.latest_end_ns).max();
        let mut end = self.block(self.next, When::EndOfRun);
        end.to_ns = ended_ns.max(end.from_ns).max(latest_end_ns.unwrap_or(0));
        for (_, bin) in std::mem::take(&mut self.pending) {
            end.spans.extend(bin.spans);
        }
        blocks.push(end);
        blocks
    }

    /// Interval `k`'s block, its spans taken out of `pending`.
    fn block(&mut self, k: i64, when: When) -> Block {
        let bin = self.pending.remove(&k).unwrap_or_default();
        let from_ns = k.saturating_mul(self.every_ns);
        Block {
            from_ns: match k {
                0 => bin.earliest_end_ns.map_or(from_ns, |e| e.min(from_ns)),
                _ => from_ns,
            },
            to_ns: from_ns.saturating_add(self.every_ns),
            when,
            spans: bin.spans,
        }
    }
}

/// `5.0–6.0 s`: in tenths, or as many more decimals as tell the ends apart (a run that
/// stopped 3 ms into an interval ends `5.000–5.003 s`); one time where they are equal.
fn interval_label(from_ns: i64, to_ns: i64) -> String {
    let (from, to) = (from_ns as f64 / 1e9, to_ns as f64 / 1e9);
    (1..=6)
        .map(|decimals| (format!("{from:.decimals$}"), format!("{to:.decimals$}")))
        .find(|(f, t)| f != t)
        .map_or_else(|| format!("{from:.1} s"), |(f, t)| format!("{f}–{t} s"))
}

/// The blocks' histograms, each stage of each block, in the order given.
fn render_blocks(stages: &[String], blocks: &[Block], linear: Option<&LinearSpec>) -> String {
    let mut text = String::new();
    for block in blocks {
        let what = match block.when {
            When::OnTime => "",
            When::Late => " (late: committed after this interval was printed)",
            When::EndOfRun => " (end of the run)",
        };
        let interval = interval_label(block.from_ns, block.to_ns);
        text.push_str(&format!("--- {interval}{what} ---\n"));
        let mut by_stage: BTreeMap<u16, Vec<i64>> = BTreeMap::new();
        for &(stage, dur_ns) in &block.spans {
            by_stage.entry(stage).or_default().push(dur_ns);
        }
        for (stage, values_ns) in by_stage {
            let name = (stages.get(usize::from(stage)))
                .map_or_else(|| format!("stage {stage}"), String::clone);
            text.push_str(&render_series(
                &Series {
                    name: format!("@{name}"),
                    values_ns,
                },
                linear,
            ));
            text.push('\n');
        }
        if block.spans.is_empty() {
            text.push_str("no spans\n");
        }
    }
    text
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
        let run = LiveRun {
            path,
            run_id,
            origin_mono_ns: framelab_probe::monotonic_ns() as i64,
        };
        // Nothing committed yet as far as it knows: every span waits for the end.
        let live = Live::start(run, every, None, LiveOut::new(kept.clone()), Box::new(|| 0));
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

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;

    /// A span of stage `stage` lasting 1 ms, ending `end_ns` after the launch.
    fn ending(stage: u16, end_ns: i64) -> Span {
        crate::analyze::fixtures::span(0, stage, 0, end_ns - MS, MS)
    }

    /// (from, to, when, spans) of each block, in ms.
    fn shown(blocks: &[Block]) -> Vec<(i64, i64, When, usize)> {
        (blocks.iter())
            .map(|b| (b.from_ns / MS, b.to_ns / MS, b.when, b.spans.len()))
            .collect()
    }

    /// Every 5 s, spans committed up to 0.5 s after they end (as the collector commits
    /// them): each block holds the spans that ended in the interval it names, however
    /// they were split between reads, and the end of the run holds what ended after 10 s.
    #[test]
    fn each_block_holds_the_spans_that_ended_in_its_interval() {
        let mut iv = Intervals::new(5 * S);
        // The first commit after 5 s: spans ending 0.1 s to 5.3 s, 100 ms apart (53).
        let first: Vec<Span> = (1..=53).map(|i| ending(0, i * 100 * MS)).collect();
        iv.add_all(&first);
        assert!(iv.due(5 * S - 1).is_empty(), "5 s are not over yet");
        let blocks = iv.due(5 * S + 300 * MS);
        // Ends 0.1 .. 4.9 s: 49; the four that ended at 5.0 s or after wait for the next.
        assert_eq!(shown(&blocks), [(0, 5_000, When::OnTime, 49)]);
        assert_eq!(iv.next_end_ns(), 10 * S);
        // The next reads: up to 10.4 s, then the end of the run at 10.45 s.
        let second: Vec<Span> = (54..=104).map(|i| ending(1, i * 100 * MS)).collect();
        iv.add_all(&second);
        let blocks = iv.due(10 * S + 400 * MS);
        // 5.0 .. 9.9 s: 4 from the first read and 46 from the second.
        assert_eq!(shown(&blocks), [(5_000, 10_000, When::OnTime, 50)]);
        iv.add_all(&[ending(0, 10 * S + 440 * MS)]);
        let blocks = iv.rest(10 * S + 450 * MS);
        assert_eq!(shown(&blocks), [(10_000, 10_450, When::EndOfRun, 6)]);
        // 49 + 50 + 6: each of the 105 spans printed once.
    }

    /// A span committed after its interval was printed is printed at the next print, once,
    /// under its interval's label marked late, before the intervals that follow.
    #[test]
    fn a_span_committed_after_its_interval_was_printed_is_printed_late_once() {
        let mut iv = Intervals::new(S);
        iv.add_all(&[ending(0, 500 * MS)]);
        assert_eq!(shown(&iv.due(S)), [(0, 1_000, When::OnTime, 1)]);
        iv.add_all(&[ending(0, 900 * MS), ending(0, 1_500 * MS)]);
        assert_eq!(
            shown(&iv.due(2 * S)),
            [(0, 1_000, When::Late, 1), (1_000, 2_000, When::OnTime, 1)]
        );
        // Nothing left over: the end of the run is empty.
        assert_eq!(
            shown(&iv.rest(2 * S + 10 * MS)),
            [(2_000, 2_010, When::EndOfRun, 0)]
        );
    }

    /// Whole intervals still waiting for their commit when the run stops are printed as
    /// themselves, an empty one too, before the end of the run; a print that comes late
    /// (a slow reader) prints each interval it missed on its own.
    #[test]
    fn intervals_over_by_the_stop_keep_their_own_blocks() {
        let mut iv = Intervals::new(S);
        iv.add_all(&[ending(0, 200 * MS), ending(0, 2_200 * MS)]);
        assert_eq!(
            shown(&iv.due(2 * S + 100 * MS)),
            [(0, 1_000, When::OnTime, 1), (1_000, 2_000, When::OnTime, 0)]
        );
        iv.add_all(&[ending(0, 2_900 * MS), ending(0, 3_100 * MS)]);
        assert_eq!(
            shown(&iv.rest(3 * S + 200 * MS)),
            [
                (2_000, 3_000, When::OnTime, 2),
                (3_000, 3_200, When::EndOfRun, 1)
            ]
        );
    }

    #[test]
    fn interval_labels_tell_their_ends_apart() {
        assert_eq!(interval_label(5_000_000_000, 6_000_000_000), "5.0–6.0 s");
        assert_eq!(
            interval_label(5_000_000_000, 5_003_000_000),
            "5.000–5.003 s"
        );
        assert_eq!(interval_label(5_000_000_000, 5_000_000_000), "5.0 s");
    }

    /// A span that ended before the launch (a probe's) is in the first block, whose label
    /// starts at its end; the end of the run runs to its last span if that is later.
    #[test]
    fn labels_cover_spans_before_the_launch_and_after_the_stop() {
        let mut iv = Intervals::new(S);
        iv.add_all(&[ending(0, -300 * MS), ending(0, 400 * MS)]);
        assert_eq!(shown(&iv.due(S)), [(-300, 1_000, When::OnTime, 2)]);
        iv.add_all(&[ending(0, 1_700 * MS)]);
        assert_eq!(
            shown(&iv.rest(1_600 * MS)),
            [(1_000, 1_700, When::EndOfRun, 1)]
        );
        let text = render_blocks(
            &["capture".into()],
            &[Block {
                from_ns: 5 * S,
                to_ns: 10 * S,
                when: When::Late,
                spans: vec![(0, MS), (1, MS)],
            }],
            None,
        );
        assert!(
            text.starts_with(
                "--- 5.0–10.0 s (late: committed after this interval was printed) ---\n@capture (µs):\n"
            ),
            "{text}"
        );
        assert!(text.contains("@stage 1 (µs):\n"), "{text}");
    }
}
