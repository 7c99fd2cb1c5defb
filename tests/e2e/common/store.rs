//! Shared by the store tests: a run with every kind of record, and writing it out.
#![allow(dead_code)]

use std::path::Path;

use framelab::model::*;
use framelab::store::RunWriter;

/// Metadata with every optional field set and values that exercise the encodings
/// (u64 beyond i64::MAX, negative times, a fractional fps).
pub fn finished_meta(name: &str) -> RunMeta {
    RunMeta {
        id: 0,
        name: name.into(),
        command: vec![
            "./host".into(),
            "--arg with space".into(),
            "ünï\"code".into(),
        ],
        started_at: "2026-11-22T10:00:00Z".into(),
        framelab_version: "0.1.0".into(),
        host: Host {
            hostname: "bench-1".into(),
            cpu_model: "AMD EPYC".into(),
            cores: 2,
            kernel: "6.18.0".into(),
            clocksource: "tsc".into(),
        },
        clock: "tsc".into(),
        target_fps: Some(119.88),
        budget_ns: Some(8_341_675),
        origin_mono_ns: 123_456_789_000,
        window_start_ns: 5_000_000_000,
        window_end_ns: 30_000_000_000,
        frames_hint: Some(u64::MAX - 1),
        warmup_ns: 5_000_000_000,
        warmup_from: WarmupFrom::FirstFrame,
        warmup_frames: Some(12),
        first_span_ns: Some(1_234_567),
        duration_ns: Some(30_000_000_000),
        collector_cpu_ns: 123_000_000,
        end_reason: EndReason::Duration,
        exit: Some(ExitInfo {
            code: None,
            signal: Some(2),
            crashed: false,
        }),
        dropped_events: 7,
        invalid_records: 3,
        names_refused: 1,
        session: SessionFacts {
            interrupt_signal: Some(15),
            stop_signals: vec![
                framelab::model::StopSignal {
                    signal: 2,
                    at_ns: 30_000_000_000,
                    interrupt: None,
                },
                framelab::model::StopSignal {
                    signal: 9,
                    at_ns: 30_400_000_000,
                    interrupt: Some(15),
                },
            ],
            refused_name_records: 2,
            unrecorded_threads: vec![UnrecordedThreads {
                errno: 28,
                threads: 3,
            }],
            shm_dir: "/dev/shm".into(),
            corrupt_rings: 1,
            corrupt_ring_details: vec!["thread 2 (main) of process 1: its head went back".into()],
            foreign_rings: 1,
            foreign_ring_details: vec!["ring r-7-7 is not one this framelab understands".into()],
            session_lost_ns: Some(2_000_000_000),
            foreign_users: vec!["nobody (uid 65534)".into()],
            run_group: Some(framelab::model::RunGroupFacts {
                mechanism: "cgroup2".into(),
                path: "/sys/fs/cgroup/framelab-4242-1".into(),
                cpu_ns: Some(2_431_000_000),
                user_ns: Some(2_400_000_000),
                sys_ns: Some(31_000_000),
                rows_cpu_ns: Some(2_402_000_000),
                escaped: vec!["process 77 (sleep) had left the run's cgroup".into()],
                after_window_cpu_ns: Some(804_000_000),
                ..Default::default()
            }),
            probes: vec![framelab::model::ProbeFacts {
                stage: "encode".into(),
                kind: "uprobe".into(),
                target: "prog:encode_frame".into(),
                path: "/tmp/prog".into(),
                function: "encode_frame".into(),
                file_offset: 0x11b0,
                first_instruction: framelab::probes::cost::InstructionClass::Push,
                cost_per_hit_ns: Some(2400),
                subtracted_ns: Some(1100),
                clamped: 3,
                hits: 300,
                spans: 299,
                unmatched_returns: 1,
                unfinished: 0,
                cut_by_loss: 1,
                frame_probe: false,
            }],
            probe_records_lost: 2,
            probe_busiest_thread: Some((4243, 720_000)),
            cpu_taken: Some(framelab::model::CpuTakenFacts {
                cpus: 2,
                wall_ns: 12_003_000_000,
                tick_ns: 10_000_000,
                steal_ns: 20_000_000,
                irq_ns: 0,
                softirq_ns: 30_000_000,
                most_taken_cpu: 1,
                most_taken_ns: 40_000_000,
            }),
            probe_pairs: vec![framelab::model::PairFacts {
                stage: "sleep".into(),
                start: "enter".into(),
                end: "exit".into(),
                by: "tid".into(),
                spans: 40,
                unmatched_ends: 1,
                other_tasks: 9,
                notes: vec!["--pair sleep=enter:exit:tid: 1 exit with no enter before it".into()],
                ..Default::default()
            }],
        },
        // In the order given, a value kept whole (control characters too).
        tags: vec![
            framelab::model::Tag {
                key: "build".into(),
                value: "release".into(),
            },
            framelab::model::Tag {
                key: "note".into(),
                value: "two\nlines\x1b".into(),
            },
        ],
    }
}

/// A run with stages, counters, events, threads, processes; `frames` frames of 3 stages.
pub fn sample_run(name: &str, frames: u64) -> Run {
    let stages = vec!["capture".to_string(), "encode".into(), "send".into()];
    let mut spans = Vec::new();
    let mut counters = Vec::new();
    let mut events = Vec::new();
    for f in 0..frames {
        let t0 = f as i64 * 8_333_333 - 1_000; // the first frame starts before the origin
        for (s, dur) in [(0u16, 15_000i64), (1, 2_400_000), (2, 2_000)] {
            let start = t0 + i64::from(s) * 3_000_000;
            spans.push(Span {
                frame: f,
                stage: s,
                thread: u32::from(s == 1),
                start_ns: start,
                dur_ns: dur + (f as i64 % 7) * 1000,
            });
        }
        counters.push(CounterValue {
            frame: f,
            counter: 0,
            value: 40_000 + f as i64,
        });
        if f % 10 == 0 {
            counters.push(CounterValue {
                frame: f,
                counter: 1,
                value: 1,
            });
        }
        events.push(EventRecord {
            event: 0,
            key: u64::MAX - f,
            thread: 1,
            t_ns: t0 + 100,
        });
    }
    // A frame id beyond i64::MAX must come back unchanged.
    spans.push(Span {
        frame: u64::MAX,
        stage: 2,
        thread: 0,
        start_ns: 1,
        dur_ns: 2,
    });
    Run {
        meta: finished_meta(name),
        stages,
        counter_names: vec!["bytes".into(), "keyframe".into()],
        event_names: vec!["commit".into()],
        threads: vec![
            ThreadInfo {
                pid: 100,
                tid: 100,
                name: "main".into(),
                dropped: 0,
            },
            ThreadInfo {
                pid: 100,
                tid: 101,
                name: "encoder".into(),
                dropped: 5,
            },
        ],
        spans,
        counters,
        events,
        processes: vec![
            ProcessStats {
                pid: 100,
                ppid: 1,
                name: "host".into(),
                role: ProcessRole::Command,
                user_ns: 24_100_000_000,
                sys_ns: 900_000_000,
                wall_ns: 25_000_000_000,
                peak_rss_bytes: 48 << 20,
                ..ProcessStats::default()
            },
            ProcessStats {
                pid: 42,
                ppid: 1,
                name: "daemon".into(),
                role: ProcessRole::Watched,
                user_ns: 1,
                sys_ns: 2,
                wall_ns: 3,
                peak_rss_bytes: 4,
                ..ProcessStats::default()
            },
        ],
        ..Run::default()
    }
}

/// Writes `run` the way the collector does: names first, records in batches with a
/// commit between, the final metadata last. Returns the run id.
pub fn write_run(path: &Path, run: &Run) -> i64 {
    let mut started = run.meta.clone();
    started.end_reason = EndReason::Unfinished;
    started.exit = None;
    let mut w = RunWriter::create(path, &started).expect("create");
    for (i, s) in run.stages.iter().enumerate() {
        assert_eq!(w.add_stage(s).unwrap() as usize, i);
    }
    for (i, c) in run.counter_names.iter().enumerate() {
        assert_eq!(w.add_counter_name(c).unwrap() as usize, i);
    }
    for (i, e) in run.event_names.iter().enumerate() {
        assert_eq!(w.add_event_name(e).unwrap() as usize, i);
    }
    for (i, t) in run.threads.iter().enumerate() {
        let mut fresh = t.clone();
        fresh.dropped = 0;
        assert_eq!(w.add_thread(&fresh).unwrap() as usize, i);
    }
    // Uneven batches exercise both the multi-row and the single-row inserts.
    let batch = if run.spans.len() > 10_000 {
        50_001
    } else {
        100
    };
    for chunk in run.spans.chunks(batch) {
        w.spans(chunk).unwrap();
        w.commit().unwrap();
    }
    for chunk in run.counters.chunks(70) {
        w.counters(chunk).unwrap();
    }
    w.events(&run.events).unwrap();
    w.commit().unwrap();
    for (i, t) in run.threads.iter().enumerate() {
        w.set_thread_dropped(i as u32, t.dropped).unwrap();
    }
    // Processes are reported twice, as accounting grows: the second call updates.
    let mut early = run.processes.clone();
    for p in &mut early {
        p.user_ns /= 2;
    }
    w.processes(&early).unwrap();
    w.processes(&run.processes).unwrap();
    w.update_meta(&run.meta).unwrap();
    let id = w.run_id();
    w.finish().unwrap();
    id
}

/// Runs compared as their JSON: `Run` holds an f64 and derives no `PartialEq`.
pub fn assert_same_run(got: &Run, want: &Run) {
    assert!(got.spans == want.spans, "spans differ");
    assert!(got.counters == want.counters, "counters differ");
    assert!(got.events == want.events, "events differ");
    let without_records = |r: &Run| Run {
        spans: vec![],
        counters: vec![],
        events: vec![],
        ..r.clone()
    };
    let got = &without_records(got);
    let mut want = without_records(want);
    want.meta.id = got.meta.id;
    let as_json = |r: &Run| serde_json::to_string_pretty(r).unwrap();
    assert!(
        as_json(got) == as_json(&want),
        "runs differ:\n got meta {:?}\nwant meta {:?}",
        got.meta,
        want.meta
    );
}
