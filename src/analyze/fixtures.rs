//! Small hand-built runs whose every number is computed by hand in the tests.

use crate::model::*;

pub const MS: i64 = 1_000_000;
pub const US: i64 = 1_000;

/// A span from its five fields, for hand-built runs in tests.
pub fn span(frame: u64, stage: u16, thread: u32, start_ns: i64, dur_ns: i64) -> Span {
    Span {
        frame,
        stage,
        thread,
        start_ns,
        dur_ns,
    }
}

/// A reproducible stream of pseudo-random numbers from `seed` (xorshift64; `seed` not 0),
/// for generated test data.
pub fn xorshift(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

/// The same stream, each number taken below what the call asks (`next(1000)`: 0..1000).
pub fn below(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut next = xorshift(seed);
    move |bound| next() % bound
}

/// A timeline as the scheduler's tracepoints give it: exact (1 ns), these slices.
pub fn traced(slices: Vec<crate::sched::SchedSlice>) -> crate::sched::SchedTimeline {
    crate::sched::SchedTimeline {
        source: crate::sched::SchedSource::Tracepoints,
        resolution_ns: 1,
        slices,
        ..crate::sched::SchedTimeline::default()
    }
}

/// Budget 10 ms (100 fps), window [20 ms, 100 ms]. Frames 0–10; frame i captures at i·10 ms
/// (1 ms, thread 0, process 100), encodes from i·10 + 2 ms (5 ms, thread 1, process 200) and
/// sends 0.5 ms from i·10 + 8 ms (thread 0): end i·10 + 8.5 ms, total 8.5 ms.
/// Frame 6's encode stalls to 15 ms (62–77) and it sends at 77.5: end 78, total 18.
/// Frame 7's encode waits for the encoder (77–82), sends at 82.5: end 83, total 13.
/// Frames 0 and 1 end before 20 ms (warmup); frame 10 ends at 108.5 (after the window).
///
/// Measured: frames 2–9, ends 28.5 38.5 48.5 58.5 78 83 88.5 98.5 ms,
/// intervals 10 10 10 19.5 5 5.5 10 ms, totals 8.5 ×6, 18, 13 ms.
pub fn reference_run() -> Run {
    let mut spans = Vec::new();
    for i in 0..=10u64 {
        let t = i as i64 * 10 * MS;
        let (encode_start, encode_dur, send_start) = match i {
            6 => (t + 2 * MS, 15 * MS, t + 17 * MS + 500 * US),
            7 => (t + 7 * MS, 5 * MS, t + 12 * MS + 500 * US),
            _ => (t + 2 * MS, 5 * MS, t + 8 * MS),
        };
        spans.push(span(i, 0, 0, t, MS));
        spans.push(span(i, 1, 1, encode_start, encode_dur));
        spans.push(span(i, 2, 0, send_start, 500 * US));
    }
    let mut counters = Vec::new();
    for i in 0..=10u64 {
        counters.push(CounterValue {
            frame: i,
            counter: 0,
            value: 12_500,
        });
    }
    for frame in [0, 5] {
        counters.push(CounterValue {
            frame,
            counter: 1,
            value: 1,
        });
    }
    Run {
        meta: RunMeta {
            id: 1,
            name: "fixture".into(),
            command: vec!["./host".into(), "--fps".into(), "100".into()],
            started_at: "2026-01-02T03:04:05Z".into(),
            framelab_version: "0.1.0".into(),
            host: Host {
                hostname: "bench1".into(),
                cpu_model: "Test CPU".into(),
                cores: 2,
                kernel: "6.18".into(),
                clocksource: "tsc".into(),
            },
            clock: "tsc".into(),
            target_fps: Some(100.0),
            budget_ns: Some(10 * MS),
            origin_mono_ns: 1_000_000_000,
            window_start_ns: 20 * MS,
            window_end_ns: 100 * MS,
            frames_hint: None,
            warmup_ns: 20 * MS,
            warmup_from: WarmupFrom::Launch,
            warmup_frames: None,
            first_span_ns: None,
            duration_ns: Some(100 * MS),
            collector_cpu_ns: 2 * MS,
            end_reason: EndReason::Duration,
            exit: Some(ExitInfo {
                code: None,
                signal: Some(2),
                crashed: false,
            }),
            dropped_events: 0,
            invalid_records: 0,
            names_refused: 0,
            session: Default::default(),
            tags: Vec::new(),
        },
        stages: vec!["capture".into(), "encode".into(), "send".into()],
        counter_names: vec!["bytes".into(), "keyframe".into()],
        event_names: vec![],
        threads: vec![
            ThreadInfo {
                pid: 100,
                tid: 100,
                name: "main".into(),
                dropped: 0,
            },
            ThreadInfo {
                pid: 200,
                tid: 201,
                name: "encoder".into(),
                dropped: 0,
            },
        ],
        spans,
        counters,
        events: vec![],
        processes: vec![
            ProcessStats {
                pid: 100,
                ppid: 1,
                name: "host".into(),
                role: ProcessRole::Command,
                user_ns: 60 * MS,
                sys_ns: 20 * MS,
                wall_ns: 80 * MS,
                peak_rss_bytes: 48 << 20,
                ..ProcessStats::default()
            },
            ProcessStats {
                pid: 200,
                ppid: 1,
                name: "encoderd".into(),
                role: ProcessRole::Watched,
                user_ns: 30 * MS,
                sys_ns: 10 * MS,
                wall_ns: 80 * MS,
                peak_rss_bytes: 16 << 20,
                ..ProcessStats::default()
            },
        ],
        ..Run::default()
    }
}

/// The reference run, crashed by SIGSEGV at 60 ms before finalising, with drops,
/// an invalid record and a span from a clock that went backwards.
pub fn crashed_run() -> Run {
    let mut run = reference_run();
    run.spans.retain(|s| s.start_ns < 60 * MS);
    run.spans.push(span(4, 1, 1, 45 * MS, -3 * MS));
    run.meta.window_end_ns = 0;
    run.meta.end_reason = EndReason::Unfinished;
    run.meta.exit = Some(ExitInfo {
        code: None,
        signal: Some(11),
        crashed: true,
    });
    // Accounting stops at the crash too: 38.5 ms alive in the window.
    run.processes[0].user_ns = 28 * MS + 500 * US;
    run.processes[0].sys_ns = 10 * MS;
    run.processes[0].wall_ns = 38 * MS + 500 * US;
    run.processes[1].user_ns = 15 * MS;
    run.processes[1].sys_ns = 4 * MS + 250 * US;
    run.processes[1].wall_ns = 38 * MS + 500 * US;
    run.meta.dropped_events = 42;
    run.meta.invalid_records = 1;
    run
}

/// An uninstrumented command that ran 2 s to a clean exit, `--frames 500`.
pub fn uninstrumented_run() -> Run {
    Run {
        meta: RunMeta {
            id: 2,
            name: String::new(),
            command: vec!["/usr/bin/ffmpeg".into(), "-i".into(), "in file.mp4".into()],
            started_at: "2026-01-02T03:04:05Z".into(),
            window_start_ns: 0,
            window_end_ns: 2_000 * MS,
            frames_hint: Some(500),
            end_reason: EndReason::Exited,
            exit: Some(ExitInfo {
                code: Some(0),
                signal: None,
                crashed: false,
            }),
            ..RunMeta::default()
        },
        processes: vec![ProcessStats {
            pid: 300,
            ppid: 1,
            name: "ffmpeg".into(),
            role: ProcessRole::Command,
            user_ns: 3_000 * MS,
            sys_ns: 500 * MS,
            wall_ns: 2_000 * MS,
            peak_rss_bytes: 300 << 20,
            ..ProcessStats::default()
        }],
        ..Run::default()
    }
}

/// The uninstrumented run with metrics from its output: ffmpeg's own `fps=` read, a
/// second metric that was not found, and the output kept (stderr cut to its last MiB).
pub fn metrics_run() -> Run {
    use crate::output::{CapturedOutput, MetricValue};
    let mut run = uninstrumented_run();
    run.metrics = vec![
        MetricValue {
            name: "enc_fps".into(),
            role: "command".into(),
            value: Some(312.5),
            unit: "fps".into(),
            direction: Some(crate::stats::Direction::HigherIsBetter),
            definition: r"enc_fps[fps]:higher:stderr=fps=\s*([\d.]+)".into(),
            failure: None,
        },
        MetricValue {
            name: "speed".into(),
            role: "command".into(),
            value: None,
            unit: String::new(),
            direction: Some(crate::stats::Direction::HigherIsBetter),
            definition: r"speed:higher=speed=\s*([\d.]+)x".into(),
            failure: Some(
                r"speed: no line of stdout or stderr matched /speed=\s*([\d.]+)x/ (41 lines read)"
                    .into(),
            ),
        },
    ];
    run.outputs = vec![
        CapturedOutput {
            role: "command".into(),
            stream: "stdout".into(),
            bytes: 0,
            dropped: 0,
            content: Vec::new(),
            note: String::new(),
        },
        CapturedOutput {
            role: "command".into(),
            stream: "stderr".into(),
            bytes: 3 << 20,
            dropped: 2 << 20,
            content: vec![b'x'; 1 << 20],
            note: String::new(),
        },
    ];
    run
}

/// Runs that must not panic or produce a non-finite number: empty, one span with a
/// zero-length window, every span broken, all frames ending together, i64 extremes.
pub fn degenerate_runs() -> Vec<Run> {
    vec![
        Run::default(),
        {
            // One frame, one span, zero-length window.
            let mut r = reference_run();
            r.spans.truncate(1);
            r.meta.window_start_ns = 0;
            r.meta.window_end_ns = 0;
            r
        },
        {
            // Every span broken, budget but no target.
            let mut r = reference_run();
            r.spans.iter_mut().for_each(|s| s.dur_ns = -1);
            r.meta.target_fps = None;
            r
        },
        {
            // All frames end at the same instant: zero intervals.
            let mut r = reference_run();
            r.spans.iter_mut().for_each(|s| {
                s.start_ns = 30 * MS;
                s.dur_ns = MS;
            });
            r
        },
        {
            // Values at the edges of i64: corrupt records must not overflow.
            let mut r = reference_run();
            r.spans[5].start_ns = i64::MAX - 1;
            r.spans[5].dur_ns = i64::MAX;
            r.spans[6].start_ns = i64::MIN;
            r.counters[3].value = i64::MAX;
            r.counters[4].value = i64::MAX;
            r.processes[0].user_ns = i64::MAX;
            r.processes[0].peak_rss_bytes = u64::MAX;
            r.meta.window_end_ns = i64::MAX;
            r.meta.window_start_ns = i64::MIN;
            r
        },
    ]
}

/// Runs the pipeline analysis must say something about, by name: frames of one span;
/// an import without thread ids; a stage recursing on its thread; spans of a frame recorded
/// out of start order on one thread. 20 frames each, 1 ms apart, window [0, 30 ms].
pub fn pipeline_edge_runs() -> Vec<(&'static str, Run)> {
    let run = |spans: Vec<Span>, threads: Vec<ThreadInfo>| Run {
        meta: RunMeta {
            window_end_ns: 30 * MS,
            end_reason: EndReason::Exited,
            ..RunMeta::default()
        },
        stages: vec!["a".into(), "b".into()],
        threads,
        spans,
        ..Run::default()
    };
    let named = vec![ThreadInfo {
        pid: 1,
        tid: 1,
        name: "main".into(),
        dropped: 0,
    }];
    let frames = 0..20u64;
    let at = |f: u64| f as i64 * MS;
    let one_span = frames
        .clone()
        .map(|f| span(f, 0, 0, at(f), 200 * US))
        .collect();
    let two = |f: u64| {
        [
            span(f, 0, 0, at(f), 200 * US),
            span(f, 1, 0, at(f) + 300 * US, 100 * US),
        ]
    };
    let no_threads = frames.clone().flat_map(two).collect();
    // Stage b of frame 5 recurses: a second b inside the first.
    let mut recursion: Vec<Span> = frames.clone().flat_map(two).collect();
    recursion.push(span(5, 1, 0, at(5) + 320 * US, 50 * US));
    // Frame 7's b is recorded before its a.
    let mut reordered: Vec<Span> = frames.flat_map(two).collect();
    reordered.swap(14, 15);
    vec![
        ("one span per frame", run(one_span, named.clone())),
        (
            "no thread ids",
            run(no_threads, vec![ThreadInfo::default()]),
        ),
        ("recursion", run(recursion, named.clone())),
        ("reordered", run(reordered, named)),
    ]
}
