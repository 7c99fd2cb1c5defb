//! The analysis from columns against the analysis of a loaded run, on varied runs: sparse
//! and dense ids, ids that switch from dense to sparse mid-run, negative durations, several
//! threads and stages, warmup windows, frames cut short by the stop, durations and totals
//! beyond u32, telemetry. Every report format and every histogram must be the same text,
//! byte for byte, in memory and through a run file.

use super::analyze_from;
use super::columns::Keep;
use super::values::NsValues;
use crate::analyze::fixtures::{crashed_run, degenerate_runs, reference_run, uninstrumented_run};
use crate::analyze::telemetry::fixture::telemetry_run;
use crate::analyze::{analyze, Analysis};
use crate::hist::{render_from, render_run, GroupBy, HistOptions, LinearSpec};
use crate::model::{
    CounterValue, EndReason, ExitInfo, ProcessRole, ProcessStats, Run, RunMeta, Span, ThreadInfo,
};
use crate::render::Format;
use crate::report::render;
use crate::store;

const MS: i64 = 1_000_000;

/// xorshift64: the same runs on every machine.
struct Noise(u64);
impl Noise {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below.max(1)
    }
}

/// The id recorded for frame number `n`.
type IdOf = fn(u64) -> u64;

/// How a generated run looks.
#[derive(Clone, Copy)]
struct Shape {
    frames: u64,
    stages: u16,
    threads: u32,
    id: IdOf,
    /// One span in this many gets a negative duration (0: none).
    negative_every: u64,
    /// Durations up to this many ns (above u32::MAX makes wide values).
    max_dur: i64,
    /// Frames this far apart start.
    period: i64,
    end_reason: EndReason,
    warmup_ns: i64,
    /// The last frames lack their later stages (cut short by the stop).
    cut_short: bool,
    seed: u64,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape {
            frames: 400,
            stages: 3,
            threads: 2,
            id: |n| n,
            negative_every: 0,
            max_dur: 2 * MS,
            period: 4 * MS,
            end_reason: EndReason::Duration,
            warmup_ns: 100 * MS,
            cut_short: false,
            seed: 0x2545_f491_4f6c_dd1d,
        }
    }
}

/// A pipelined run: stage s of a frame on thread s % threads, recorded thread by thread
/// in batches (as the collector drains rings), with counters on most frames and some on
/// frames that have no span.
fn generated(shape: Shape) -> Run {
    let mut noise = Noise(shape.seed);
    let mut spans: Vec<Vec<Span>> = vec![Vec::new(); shape.threads as usize];
    let mut counters = Vec::new();
    for n in 0..shape.frames {
        let id = (shape.id)(n);
        let mut t = n as i64 * shape.period + noise.next(MS as u64) as i64;
        for stage in 0..shape.stages {
            let cut = shape.cut_short && n + 2 >= shape.frames && stage + 1 >= shape.stages;
            let mut dur = noise.next(shape.max_dur as u64) as i64;
            if shape.negative_every > 0 && noise.next(shape.negative_every) == 0 {
                dur = -dur - 1;
            }
            let thread = u32::from(stage) % shape.threads;
            if !cut {
                spans[thread as usize].push(Span {
                    frame: id,
                    stage,
                    thread,
                    start_ns: t,
                    dur_ns: dur,
                });
            }
            t += dur.max(0) + noise.next(50_000) as i64;
        }
        if n % 7 != 3 {
            counters.push(CounterValue {
                frame: id,
                counter: (n % 2) as u16,
                value: noise.next(20_000) as i64,
            });
        }
        // The pacer's lateness, taken apart from the counters by both analyses.
        if n % 3 == 0 {
            counters.push(CounterValue {
                frame: id,
                counter: 2,
                value: (n * 37 % 5_000) as i64, // not from `noise`: the spans stay as they were
            });
        }
    }
    for counter in [0, 2] {
        counters.push(CounterValue {
            frame: (shape.id)(shape.frames + 5),
            counter,
            value: 9,
        });
    }
    // Batches of 64 spans per thread in turn.
    let mut merged = Vec::new();
    let mut at = vec![0usize; spans.len()];
    while at.iter().zip(&spans).any(|(&a, s)| a < s.len()) {
        for (t, s) in spans.iter().enumerate() {
            let end = (at[t] + 64).min(s.len());
            merged.extend_from_slice(&s[at[t]..end]);
            at[t] = end;
        }
    }
    let last_end = merged.iter().map(Span::end_ns).max().unwrap_or(0);
    let window_end = match shape.end_reason {
        EndReason::Unfinished => 0,
        // Frames cut short end inside the window, or they would not count as open.
        _ if shape.cut_short => last_end,
        _ => last_end - shape.period * 2,
    };
    Run {
        meta: RunMeta {
            name: "generated".into(),
            target_fps: Some(1e9 / shape.period as f64 * 1.2),
            window_start_ns: shape.warmup_ns,
            window_end_ns: window_end,
            warmup_ns: shape.warmup_ns,
            end_reason: shape.end_reason,
            exit: (shape.end_reason == EndReason::Exited).then(|| ExitInfo {
                code: Some(1),
                ..ExitInfo::default()
            }),
            ..RunMeta::default()
        },
        stages: (0..shape.stages).map(|s| format!("s{s}")).collect(),
        counter_names: vec!["bytes".into(), "keyframe".into(), "pacer_late_ns".into()],
        threads: (0..shape.threads)
            .map(|t| ThreadInfo {
                pid: 100 + t / 2,
                tid: 200 + t,
                name: format!("worker{}", t % 2),
                dropped: 0,
            })
            .collect(),
        processes: vec![ProcessStats {
            pid: 100,
            name: "gen".into(),
            role: ProcessRole::Command,
            user_ns: 50 * MS,
            wall_ns: 400 * MS,
            ..ProcessStats::default()
        }],
        spans: merged,
        counters,
        ..Run::default()
    }
}

fn reports(analysis: &crate::analyze::Analysis) -> String {
    [Format::Json, Format::Text, Format::Markdown]
        .iter()
        .map(|&f| render(analysis, f, false).unwrap())
        .collect::<Vec<_>>()
        .join("\n----\n")
}

fn hist_options(run: &Run) -> Vec<HistOptions> {
    let mut all = vec![HistOptions::default()];
    let stages = run
        .stages
        .iter()
        .cloned()
        .chain(["total", "interval", "nope"].map(String::from));
    for stage in stages {
        for linear in [None, Some(LinearSpec::step(MS / 4))] {
            all.push(HistOptions {
                stage: Some(stage.clone()),
                linear,
                ..HistOptions::default()
            });
        }
    }
    for by in [GroupBy::Thread, GroupBy::Process] {
        all.push(HistOptions {
            by: Some(by),
            ..HistOptions::default()
        });
        all.push(HistOptions {
            stage: Some("total".into()),
            by: Some(by),
            ..HistOptions::default()
        });
    }
    all
}

fn text<E: std::fmt::Display>(r: Result<String, E>) -> String {
    r.unwrap_or_else(|e| format!("error: {e}"))
}

/// The same reports and histograms whichever way the run is read; the analysis.
fn same(label: &str, run: &Run) -> Analysis {
    let analysis = analyze(run);
    let old = reports(&analysis);
    let new = reports(&analyze_from(run, run).unwrap());
    assert!(
        old == new,
        "{label}: in memory\n{}",
        first_difference(&old, &new)
    );
    for opts in hist_options(run) {
        let (old, new) = (
            text(render_run(run, &opts)),
            text(render_from(run, run, &opts)),
        );
        assert!(
            old == new,
            "{label}: hist {opts:?}\n{}",
            first_difference(&old, &new)
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    store::write_run(&path, run).unwrap();
    let loaded = store::load_run(&path, None).unwrap();
    let stored = store::open_run(&path, None).unwrap();
    let old = reports(&analyze(&loaded));
    let new = reports(&analyze_from(&stored.head, &stored).unwrap());
    assert!(
        old == new,
        "{label}: from the file\n{}",
        first_difference(&old, &new)
    );
    // The report's reads: blocks decoded on threads of their own (the larger runs here).
    let decoded = store::DecodedOnThreads(&stored);
    let new = reports(&analyze_from(&stored.head, &decoded).unwrap());
    assert!(
        old == new,
        "{label}: from the file, decoded on threads\n{}",
        first_difference(&old, &new)
    );
    for opts in hist_options(run) {
        let old = text(render_run(&loaded, &opts));
        let new = text(render_from(&stored.head, &stored, &opts));
        assert!(
            old == new,
            "{label}: hist {opts:?} from the file\n{}",
            first_difference(&old, &new)
        );
    }
    analysis
}

fn first_difference(a: &str, b: &str) -> String {
    let line = (a.lines().zip(b.lines())).position(|(x, y)| x != y);
    match line {
        Some(i) => format!(
            "line {}:\n  old: {}\n  new: {}",
            i + 1,
            a.lines().nth(i).unwrap_or(""),
            b.lines().nth(i).unwrap_or("")
        ),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

#[test]
fn fixtures_read_as_columns_give_the_same_reports() {
    same("reference", &reference_run());
    same("crashed", &crashed_run());
    same("uninstrumented", &uninstrumented_run());
    same("telemetry", &telemetry_run());
    for (label, run) in crate::analyze::fixtures::pipeline_edge_runs() {
        same(label, &run);
    }
    for (i, run) in degenerate_runs().iter().enumerate() {
        same(&format!("degenerate {i}"), run);
    }
}

#[test]
fn dense_sparse_and_shuffled_ids_give_the_same_reports() {
    let shapes: [(&str, IdOf); 7] = [
        ("dense", |n| n),
        ("dense from a large id", |n| 1 << 40 | n),
        ("descending", |n| 1_000_000 - n),
        ("every third id", |n| 3 * n + 1),
        ("hashed", |n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        ("near both ends of u64", |n| {
            if n % 2 == 0 {
                n
            } else {
                u64::MAX - n
            }
        }),
        // Dense for 300 frames, then one far away: ids listed mid-run.
        ("dense then far", |n| if n == 300 { 1 << 50 } else { n }),
    ];
    for (label, id) in shapes {
        let a = same(
            label,
            &generated(Shape {
                id,
                ..Shape::default()
            }),
        );
        // The pacer's values are its own summary (the frameless one counted apart), never a
        // counter of the frames.
        let pacer = a.pacer.as_ref().expect("the pacer's summary");
        assert!(
            pacer.late.count > 0 && pacer.unmatched == 1,
            "{label}: {pacer:?}"
        );
        assert!(
            !a.counters.iter().any(|c| c.name == "pacer_late_ns"),
            "{label}"
        );
    }
}

#[test]
fn windows_stops_and_broken_spans_give_the_same_reports() {
    let shapes = [
        (
            "cut short at the stop",
            Shape {
                cut_short: true,
                ..Shape::default()
            },
        ),
        (
            "cut short, sparse ids",
            Shape {
                cut_short: true,
                id: |n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ..Shape::default()
            },
        ),
        (
            "unfinished",
            Shape {
                end_reason: EndReason::Unfinished,
                ..Shape::default()
            },
        ),
        (
            "failed exit, no warmup",
            Shape {
                end_reason: EndReason::Exited,
                warmup_ns: 0,
                ..Shape::default()
            },
        ),
        (
            "negative durations",
            Shape {
                negative_every: 9,
                ..Shape::default()
            },
        ),
        (
            "durations over u32 (wide values)",
            Shape {
                max_dur: 6_000_000_000,
                period: 7_000_000_000,
                frames: 60,
                warmup_ns: 20_000_000_000,
                ..Shape::default()
            },
        ),
        (
            "one stage, one thread",
            Shape {
                stages: 1,
                threads: 1,
                ..Shape::default()
            },
        ),
        (
            "many stages and threads",
            Shape {
                stages: 9,
                threads: 5,
                ..Shape::default()
            },
        ),
        (
            "many frames: packed blocks and the threaded reader",
            Shape {
                frames: 6_000,
                period: 100_000,
                max_dur: 80_000,
                warmup_ns: 50 * MS,
                cut_short: true,
                ..Shape::default()
            },
        ),
    ];
    for (label, shape) in shapes {
        let a = same(label, &generated(shape));
        // What each shape is there for did happen.
        assert!(a.frames > 0, "{label}");
        if shape.cut_short {
            assert!(a.window.open_frames > 0, "{label}");
        }
        if shape.negative_every > 0 {
            assert!(a.negative_spans > 0, "{label}");
        }
        if shape.warmup_ns > 0 && shape.end_reason != EndReason::Unfinished {
            assert!(a.window.warmup_frames > 0, "{label}");
        }
        if shape.max_dur > u32::MAX as i64 {
            assert!(a.stages[0].dist.max_ns > u32::MAX as f64, "{label}");
        }
    }
}

#[test]
fn a_damaged_span_is_refused_as_load_run_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    store::write_run(&path, &reference_run()).unwrap();
    // Span id 3 (the first block's 3rd record) is given stage 40, of 3 stages.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (layout, mut records): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT layout, records FROM span_blocks ORDER BY first_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // The stage's offset in a record of each layout (store/blocks.rs).
    let (size, stage_at) = match layout {
        1 => (12, 10),
        2 => (16, 12),
        _ => (32, 24),
    };
    records[2 * size + stage_at] = 40;
    conn.execute(
        "UPDATE span_blocks SET records = ?1 WHERE first_id = 1",
        [records],
    )
    .unwrap();
    drop(conn);
    let old = store::load_run(&path, None).unwrap_err().to_string();
    let stored = store::open_run(&path, None).unwrap();
    let new = analyze_from(&stored.head, &stored).unwrap_err().to_string();
    assert_eq!(old, new);
}

#[test]
fn frames_starting_together_at_the_tail_are_ordered_as_first_recorded() {
    // 40 frames all starting at 0; the last two recorded lack stage 1 (cut short). Ids
    // count down, so index order (by id) is the reverse of the order recorded: only the
    // recorded order finds the two.
    let mut spans = Vec::new();
    for f in 0..40u64 {
        spans.push(Span {
            frame: 1000 - f,
            stage: 0,
            thread: 0,
            start_ns: 0,
            dur_ns: 100 + f as i64,
        });
        if f < 38 {
            spans.push(Span {
                frame: 1000 - f,
                stage: 1,
                thread: 0,
                start_ns: 0,
                dur_ns: 50,
            });
        }
    }
    let run = Run {
        meta: RunMeta {
            window_end_ns: 1_000_000,
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        },
        stages: vec!["a".into(), "b".into()],
        threads: vec![ThreadInfo::default()],
        spans,
        ..Run::default()
    };
    let a = same("ties at the tail", &run);
    assert_eq!(a.window.open_frames, 2);
    assert_eq!(a.window.open_frames_lack, vec!["b".to_string()]);
}

#[test]
fn intervals_written_over_the_end_order_are_the_intervals_in_order() {
    // Frames ending close together (narrow), then a gap over 4.29 s (wide).
    for gap in [5, 5_000_000_000] {
        let spans: Vec<Span> = (0..50u64)
            .map(|f| Span {
                frame: f,
                stage: 0,
                thread: 0,
                start_ns: f as i64 * 100 + if f > 30 { gap } else { 0 },
                dur_ns: 10 + (f as i64 % 7),
            })
            .collect();
        let (_, table) = super::columns::columns_of(&spans, Keep::default());
        let order: Vec<u32> = table.frames().collect();
        let over = super::intervals_over_order(order.clone(), &table);
        assert_eq!(over, super::intervals_in_order(&order, &table), "gap {gap}");
        assert_eq!(matches!(over, NsValues::Narrow(_)), gap == 5);
    }
    let none = super::intervals_over_order(
        Vec::new(),
        &super::columns::columns_of(&[], Keep::default()).1,
    );
    assert!(none.is_empty());
}

/// Whether `run`, stored, is analysed without columns (`streamed`): one span a frame.
fn read_without_columns(run: &Run) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    store::write_run(&path, run).unwrap();
    let stored = store::open_run(&path, None).unwrap();
    let (table, spans) = super::read_frames(&stored).unwrap();
    super::streamed::one_span_a_frame(&table, spans)
}

#[test]
fn runs_of_one_span_a_frame_read_without_columns_give_the_same_reports() {
    let one = Shape {
        stages: 1,
        threads: 1,
        ..Shape::default()
    };
    let shapes = [
        ("one span a frame", one),
        (
            "sparse ids",
            Shape {
                id: |n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ..one
            },
        ),
        (
            "negative durations",
            Shape {
                negative_every: 9,
                ..one
            },
        ),
        (
            "unfinished",
            Shape {
                end_reason: EndReason::Unfinished,
                ..one
            },
        ),
        (
            "failed exit, no warmup",
            Shape {
                end_reason: EndReason::Exited,
                warmup_ns: 0,
                ..one
            },
        ),
        (
            "wide values",
            Shape {
                max_dur: 6_000_000_000,
                period: 7_000_000_000,
                frames: 60,
                warmup_ns: 20_000_000_000,
                ..one
            },
        ),
        (
            "many frames",
            Shape {
                frames: 6_000,
                period: 100_000,
                max_dur: 80_000,
                warmup_ns: 50 * MS,
                ..one
            },
        ),
    ];
    for (label, shape) in shapes {
        let run = generated(shape);
        assert!(read_without_columns(&run), "{label}");
        let a = same(label, &run);
        assert!(a.frames > 0 && a.pipeline.is_some(), "{label}");
        // Without a budget the totals are not taken in end order (nor sorted again).
        let mut run = run;
        run.meta.target_fps = None;
        let a = same(&format!("{label}, no budget"), &run);
        assert!(a.late.is_none() && a.total.is_some(), "{label}");
    }

    // Frames on three threads, two stages taking turns, and the last frames' stage missing
    // at the stop (open frames found by reads of the spans).
    let mut run = generated(Shape { frames: 900, ..one });
    run.stages.push("other".into());
    run.threads = (0..3)
        .map(|t| ThreadInfo {
            pid: 100,
            tid: 300 + t,
            name: format!("t{t}"),
            dropped: 0,
        })
        .collect();
    for s in &mut run.spans {
        s.thread = (s.frame % 3) as u32;
        s.stage = u16::from(s.frame % 5 == 0);
    }
    assert!(read_without_columns(&run));
    let a = same("three threads, two stages", &run);
    let p = a.pipeline.as_ref().unwrap();
    assert_eq!(p.resources.len(), 3);
    assert_eq!(a.stages.len(), 2 + 2, "two stages, total and interval");

    // A thread's spans out of start order: read into columns after all.
    let mut run = generated(one);
    for pair in run.spans.chunks_mut(2) {
        pair.reverse();
    }
    assert!(read_without_columns(&run));
    same("out of order", &run);
}

/// Whether `run`, stored, is analysed by `frameless` (one span a frame, ids counting up,
/// no counters): without a frame table.
fn read_frameless(run: &Run) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    store::write_run(&path, run).unwrap();
    let stored = store::open_run(&path, None).unwrap();
    super::frameless::analyze(&stored.head, &stored)
        .unwrap()
        .is_some()
}

fn without_counters(mut run: Run) -> Run {
    run.counters.clear();
    run.counter_names.clear();
    run
}

#[test]
fn runs_of_one_span_a_frame_without_counters_give_the_same_reports_without_a_frame_table() {
    let one = Shape {
        stages: 1,
        threads: 1,
        ..Shape::default()
    };
    let shapes = [
        ("one span a frame", one),
        (
            "negative durations",
            Shape {
                negative_every: 9,
                ..one
            },
        ),
        (
            "unfinished",
            Shape {
                end_reason: EndReason::Unfinished,
                ..one
            },
        ),
        (
            "failed exit, no warmup",
            Shape {
                end_reason: EndReason::Exited,
                warmup_ns: 0,
                ..one
            },
        ),
        (
            "wide values",
            Shape {
                max_dur: 6_000_000_000,
                period: 7_000_000_000,
                frames: 60,
                warmup_ns: 20_000_000_000,
                ..one
            },
        ),
    ];
    for (label, shape) in shapes {
        let run = without_counters(generated(shape));
        assert!(read_frameless(&run), "{label}");
        let a = same(label, &run);
        assert!(a.frames > 0 && a.pipeline.is_some(), "{label}");
        let mut run = run;
        run.meta.target_fps = None;
        let a = same(&format!("{label}, no budget"), &run);
        assert!(a.late.is_none() && a.total.is_some(), "{label}");
    }

    // Three threads, two stages taking turns, the last frames' stage missing at the stop.
    let mut run = without_counters(generated(Shape { frames: 900, ..one }));
    run.stages.push("other".into());
    run.threads = (0..3)
        .map(|t| ThreadInfo {
            pid: 100,
            tid: 300 + t,
            name: format!("t{t}"),
            dropped: 0,
        })
        .collect();
    for s in &mut run.spans {
        s.thread = (s.frame % 3) as u32;
        s.stage = u16::from(s.frame % 5 == 0);
    }
    let n = run.spans.len();
    run.spans[n - 1].stage = 1;
    assert!(read_frameless(&run));
    let a = same("three threads, two stages", &run);
    assert_eq!(a.stages.len(), 2 + 2, "two stages, total and interval");

    // Left to the frame table: ids that go back, a frame's second span, counters.
    let sparse = without_counters(generated(Shape {
        id: |n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        ..one
    }));
    let mut reversed = without_counters(generated(one));
    for pair in reversed.spans.chunks_mut(2) {
        pair.reverse();
    }
    let mut reversed_clean_exit = reversed.clone();
    reversed_clean_exit.meta.end_reason = EndReason::Exited;
    let two_spans = without_counters(generated(Shape { stages: 2, ..one }));
    let counted = generated(one);
    // Starts a millisecond apart or so, frames every 0.1 ms.
    let out_of_start_order = without_counters(generated(Shape {
        frames: 6_000,
        period: 100_000,
        max_dur: 80_000,
        warmup_ns: 50 * MS,
        ..one
    }));
    for (label, run) in [
        ("sparse ids", sparse),
        ("ids going back", reversed),
        ("ids going back, a clean exit", reversed_clean_exit),
        ("two spans a frame", two_spans),
        ("counters", counted),
        ("a thread's spans out of start order", out_of_start_order),
    ] {
        assert!(!read_frameless(&run), "{label}");
        same(label, &run);
    }
}

/// One span a frame, frame n lasting `dur(n)` and starting `gap(n)` after frame n − 1.
fn shaped_run(frames: u64, dur: impl Fn(u64) -> i64, gap: impl Fn(u64) -> i64) -> Run {
    let mut start = 0;
    let spans: Vec<Span> = (0..frames)
        .map(|n| {
            start += gap(n);
            Span {
                frame: 1000 + n,
                stage: 0,
                thread: 0,
                start_ns: start,
                dur_ns: dur(n),
            }
        })
        .collect();
    let last_end = spans.iter().map(Span::end_ns).max().unwrap_or(0);
    Run {
        meta: RunMeta {
            name: "shaped".into(),
            target_fps: Some(120.0),
            window_start_ns: gap(0) * 20,
            window_end_ns: last_end,
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        },
        stages: vec!["work".into()],
        threads: vec![ThreadInfo {
            pid: 1,
            tid: 1,
            name: "main".into(),
            dropped: 0,
        }],
        spans,
        ..Run::default()
    }
}

/// Odd frames on a second thread.
fn on_two_threads(mut run: Run) -> Run {
    run.threads.push(ThreadInfo {
        pid: 1,
        tid: 2,
        name: "second".into(),
        dropped: 0,
    });
    for s in &mut run.spans {
        s.thread = (s.frame % 2) as u32;
    }
    run
}

#[test]
fn adversarial_values_give_the_same_reports_without_a_frame_table() {
    let budget = 8_333_333;
    let noise = |n: u64, below: u64| {
        let mut x = Noise(0x9e37_79b9_7f4a_7c15 ^ n.wrapping_mul(0x2545_f491_4f6c_dd1d));
        x.next(below) as i64
    };
    let cases: [(&str, Run); 5] = [
        ("all equal", shaped_run(3000, |_| 2 * MS, |_| budget)),
        (
            "one huge outlier",
            shaped_run(
                3000,
                |n| if n == 1700 { 6_000_000_000 } else { 2 * MS },
                |n| if n == 1900 { 9_000_000_000 } else { budget },
            ),
        ),
        (
            "two clusters",
            shaped_run(
                3000,
                |n| match n % 3 {
                    0 => 100_000 + noise(n, 50),
                    _ => 12 * MS + noise(n, 5_000_000),
                },
                |n| match n % 4 {
                    0 => 3 * MS + noise(n, 30),
                    _ => 16 * MS + noise(n, 2_000_000),
                },
            ),
        ),
        (
            // 3000 frames, the 1% and 0.1% ranks inside runs of equal values.
            "ties at the rank boundary",
            shaped_run(
                3000,
                |n| if n % 100 < 2 { 9 * MS } else { 4 * MS },
                |n| if n % 100 == 50 { 2 * budget } else { budget },
            ),
        ),
        (
            // Long frames on one thread, short ones on another: ends out of order.
            "frames ending out of order",
            on_two_threads(shaped_run(
                3000,
                |n| if n % 2 == 0 { 5 * MS } else { MS / 2 },
                |_| MS,
            )),
        ),
    ];
    for (label, run) in cases {
        // Stopped by the duration (the shape read first: frames may be cut short), and
        // exited by itself (the shape checked in the read of the values).
        for end_reason in [EndReason::Duration, EndReason::Exited] {
            let mut run = run.clone();
            run.meta.end_reason = end_reason;
            assert!(read_frameless(&run), "{label}");
            let a = same(&format!("{label}, {end_reason:?}"), &run);
            assert!(a.frames > 2000 && a.fps.is_some(), "{label}");
        }
        // With a scheduler timeline: each span's on-CPU time (the same values' shape as
        // its duration: equal, tied or clustered) selected by reads of the spans.
        let run = with_timeline(run);
        assert!(read_frameless(&run), "{label}");
        let a = same(&format!("{label}, a scheduler timeline"), &run);
        let on_cpu = &a.sched.as_ref().unwrap().stages[0].on_cpu;
        assert!(on_cpu.as_ref().is_some_and(|d| d.count > 2000), "{label}");
    }
}

/// `run` with a tracepoint timeline: each span on a CPU for three quarters of it, then
/// runnable (a slice each; the rest of the time idle).
fn with_timeline(mut run: Run) -> Run {
    use crate::sched::SchedSlice;
    let mut slices: Vec<SchedSlice> = (run.spans.iter())
        .filter(|s| s.dur_ns > 0)
        .map(|s| SchedSlice {
            tid: run.threads[s.thread as usize].tid,
            start_ns: s.start_ns,
            dur_ns: s.dur_ns,
            on_cpu_ns: s.dur_ns / 4 * 3,
            runnable_ns: s.dur_ns - s.dur_ns / 4 * 3,
            by: "other".into(),
        })
        .collect();
    slices.sort_by_key(|s| (s.tid, s.start_ns));
    run.sched = Some(crate::analyze::fixtures::traced(slices));
    run
}

/// Whether `run`, stored, is analysed without columns (`streamed`), whatever its spans a
/// frame.
fn streams(run: &Run) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    store::write_run(&path, run).unwrap();
    let stored = store::open_run(&path, None).unwrap();
    let (table, spans) = super::read_frames(&stored).unwrap();
    super::streamed::analyze(&stored.head, table, spans, &stored, &mut |_| {})
        .unwrap()
        .is_some()
}

/// `run` with its spans written thread by thread (as an import can write them), each
/// thread's in the order recorded.
fn thread_by_thread(mut run: Run) -> Run {
    run.spans.sort_by_key(|s| s.thread);
    run
}

#[test]
fn many_stages_of_one_span_a_frame_give_the_same_reports() {
    // More stages than the reader threads take the durations of: the analysing thread
    // takes them.
    let mut run = with_timeline(on_two_threads(shaped_run(
        24_000,
        |n| MS + (n * 7919 % 1000) as i64 * 1000,
        |_| 8 * MS,
    )));
    run.stages = (0..12).map(|k| format!("stage {k}")).collect();
    for s in &mut run.spans {
        s.stage = (s.frame % 12) as u16;
    }
    assert!(read_frameless(&run));
    same("twelve stages", &run);
}

#[test]
fn a_split_of_one_span_a_frame_starts_before_the_first_read_and_gives_the_same_reports() {
    let mut run = with_timeline(on_two_threads(shaped_run(
        30_000,
        |n| MS + (n * 7919 % 1000) as i64 * 1000,
        |n| 8 * MS + (n * 104_729 % 500) as i64 * 1000,
    )));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.framelab");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A window the metadata gives (the command exited), and one found by a first read
    // (stopped by the duration: the last frames may be cut short).
    for end_reason in [EndReason::Exited, EndReason::Duration] {
        run.meta.end_reason = end_reason;
        store::write_run(&path, &run).unwrap();
        let loaded = store::load_run(&path, None).unwrap();
        let stored = store::open_run(&path, None).unwrap();
        let old = reports(&analyze(&loaded));
        let before = super::splits_before_first_read();
        let decoded = store::DecodedOnThreads(&stored);
        let new = reports(&analyze_from(&stored.head, &decoded).unwrap());
        assert!(
            old == new,
            "{end_reason:?}: {}",
            first_difference(&old, &new)
        );
        if cores > 1 {
            assert_eq!(
                super::splits_before_first_read(),
                before + 1,
                "{end_reason:?}"
            );
        }
        std::fs::remove_file(&path).unwrap();
    }
    // Several spans a frame, the same window: the split told too early finds out, waits
    // for the analysis and gives the same reports.
    let mut doubled = run.clone();
    doubled.spans = (run.spans.iter())
        .flat_map(|s| {
            let half = s.dur_ns / 2;
            [
                Span { dur_ns: half, ..*s },
                Span {
                    start_ns: s.start_ns + half,
                    dur_ns: s.dur_ns - half,
                    ..*s
                },
            ]
        })
        .collect();
    let doubled = with_timeline(doubled);
    store::write_run(&dir.path().join("doubled.framelab"), &doubled).unwrap();
    let path = dir.path().join("doubled.framelab");
    let loaded = store::load_run(&path, None).unwrap();
    let stored = store::open_run(&path, None).unwrap();
    let old = reports(&analyze(&loaded));
    let before = super::splits_before_first_read();
    let new = reports(&analyze_from(&stored.head, &store::DecodedOnThreads(&stored)).unwrap());
    assert!(old == new, "{}", first_difference(&old, &new));
    assert_eq!(super::splits_before_first_read(), before);
}

/// A long run of one span a frame: its frames in end order (some out of it: a long frame
/// ends after the next one) are taken on a thread beside the read, the first read's
/// lateness and intervals and the next one's stutter and pacing (its adaptive window on a
/// thread of its own beside that), and the reports are those of the analysis in memory.
#[test]
fn frames_taken_beside_the_read_give_the_same_reports() {
    let run = on_two_threads(shaped_run(
        30_000,
        |n| match n % 97 {
            0 => 12 * MS,
            _ => MS + (n * 7919 % 1000) as i64 * 1000,
        },
        |n| match n % 1009 {
            0 => 40 * MS,
            _ => 8 * MS + (n * 104_729 % 500) as i64 * 1000,
        },
    ));
    assert!(read_frameless(&run));
    let before = super::frameless::reads_taken_beside();
    let a = same("taken beside", &run);
    let late = a.late.as_ref().expect("a budget");
    assert!(late.late_frames > 0 && late.missed_slots > 0, "{late:?}");
    assert!(a.stutter.as_ref().is_some_and(|s| s.count > 0));
    // The adaptive window's part, taken beside the stutter and pacing taker, has a spread
    // to get right (`same` compares it with the analysis in memory).
    let pacing = a.pacing.as_ref().expect("intervals");
    assert!(pacing.adaptive_sd_ns > 0.0 && pacing.adaptive_sd_ns != pacing.interval_sd_ns);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores > 1 {
        // The first read and the one of stutter and pacing, in each analysis `same` reads.
        assert!(super::frameless::reads_taken_beside() >= before + 2);
    }
}

#[test]
fn runs_of_several_spans_a_frame_read_without_columns_give_the_same_reports() {
    let many = Shape {
        frames: 6_000,
        period: 100_000,
        max_dur: 80_000,
        warmup_ns: 50 * MS,
        ..Shape::default()
    };
    let shapes = [
        ("three stages on two threads", Shape::default()),
        (
            "cut short at the stop",
            Shape {
                cut_short: true,
                ..Shape::default()
            },
        ),
        (
            "sparse ids",
            Shape {
                id: |n| n.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                ..Shape::default()
            },
        ),
        (
            "descending ids",
            Shape {
                id: |n| 1_000_000 - n,
                ..Shape::default()
            },
        ),
        (
            "negative durations",
            Shape {
                negative_every: 9,
                ..Shape::default()
            },
        ),
        (
            "wide values",
            Shape {
                max_dur: 6_000_000_000,
                period: 7_000_000_000,
                frames: 60,
                warmup_ns: 20_000_000_000,
                ..Shape::default()
            },
        ),
        (
            "many stages and threads",
            Shape {
                stages: 9,
                threads: 5,
                ..Shape::default()
            },
        ),
        ("many frames", many),
    ];
    for (label, shape) in shapes {
        // As the collector drains its rings (threads in turn), and thread by thread.
        for (how, run) in [
            ("in batches", generated(shape)),
            ("thread by thread", thread_by_thread(generated(shape))),
        ] {
            let label = format!("{label}, {how}");
            assert!(streams(&run), "{label}");
            // The scheduler's split read beside the analysis, from when it is told.
            same(&format!("{label}, a timeline"), &with_timeline(run.clone()));
            let a = same(&label, &run);
            let p = a.pipeline.as_ref().unwrap();
            assert!(!p.waits.is_empty() && !p.resources.is_empty(), "{label}");
            let mut run = run;
            run.meta.target_fps = None;
            same(&format!("{label}, no budget"), &run);
        }
    }

    // Stages overlapping the one before them (stage 1, on its own thread, starts 0.3 ms
    // early): overlaps counted, not waits.
    let mut run = generated(Shape::default());
    for s in run.spans.iter_mut().filter(|s| s.stage == 1) {
        s.start_ns -= 300_000;
    }
    assert!(streams(&run));
    let a = same("overlapping stages", &run);
    let overlaps: u64 = (a.pipeline.as_ref().unwrap().waits.iter())
        .map(|w| w.overlaps)
        .sum();
    assert!(overlaps > 0);

    // A frame's spans recorded out of start order, with no thread ids (no busy time to
    // sort): grouped as recorded, the frame counted as reordered.
    for (label, run) in crate::analyze::fixtures::pipeline_edge_runs() {
        let mut run = run;
        if label == "reordered" {
            run.threads = vec![ThreadInfo::default()];
            assert!(streams(&run), "{label}");
            let a = same("reordered, no thread ids", &run);
            assert_eq!(a.pipeline.as_ref().unwrap().reordered_frames, 1);
        }
    }

    // A thread's spans out of start order (as a span wrapping others is recorded after
    // them): the busy time merges those set aside in, from another read.
    let mut run = generated(Shape::default());
    for pair in run.spans.chunks_mut(2) {
        pair.reverse();
    }
    assert!(streams(&run));
    same("a thread out of start order", &run);

    // Ten threads written thread by thread (more stretches than are merged, frames too far
    // apart to hold): the columns, the same reports.
    let run = thread_by_thread(generated(Shape {
        frames: 8_000,
        stages: 10,
        threads: 10,
        period: 100_000,
        max_dur: 8_000,
        warmup_ns: 50 * MS,
        ..Shape::default()
    }));
    assert!(!streams(&run));
    same("ten threads, thread by thread", &run);
    // Told by the read without columns, finished from the columns: the same split.
    same(
        "ten threads, thread by thread, a timeline",
        &with_timeline(run),
    );
}
