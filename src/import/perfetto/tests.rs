//! Small traces built with the message structs, checked span by span.

use prost::Message;

use super::proto::*;
use crate::import::test_support::Importer;
use crate::import::{Format, ImportOptions, Location};
use crate::model::{Run, SeriesKind};

fn encode(packets: Vec<TracePacket>) -> Vec<u8> {
    Trace { packet: packets }.encode_to_vec()
}

const IMPORT: Importer = Importer(Format::Perfetto);

fn import(packets: Vec<TracePacket>) -> Run {
    IMPORT.run(encode(packets))
}

fn import_with(packets: Vec<TracePacket>, opts: ImportOptions) -> Run {
    IMPORT.run_with(encode(packets), opts)
}

fn descriptor(d: TrackDescriptor) -> TracePacket {
    TracePacket {
        track_descriptor: Some(d),
        ..TracePacket::default()
    }
}

fn process_track(uuid: u64, pid: i32, name: &str) -> TracePacket {
    descriptor(TrackDescriptor {
        uuid: Some(uuid),
        process: Some(ProcessDescriptor {
            pid: Some(pid),
            process_name: Some(name.into()),
            ..ProcessDescriptor::default()
        }),
        ..TrackDescriptor::default()
    })
}

fn thread_track(uuid: u64, pid: i32, tid: i64, name: &str) -> TracePacket {
    descriptor(TrackDescriptor {
        uuid: Some(uuid),
        thread: Some(ThreadDescriptor {
            pid: Some(pid),
            tid: Some(tid),
            thread_name: Some(name.into()),
        }),
        ..TrackDescriptor::default()
    })
}

fn child_track(uuid: u64, parent: u64, name: &str) -> TracePacket {
    descriptor(TrackDescriptor {
        uuid: Some(uuid),
        parent_uuid: Some(parent),
        name: Some(name.into()),
        ..TrackDescriptor::default()
    })
}

fn at(ts: u64, event: TrackEvent) -> TracePacket {
    TracePacket {
        timestamp: Some(ts),
        trusted_packet_sequence_id: Some(1),
        track_event: Some(event),
        ..TracePacket::default()
    }
}

fn begin(track: u64, name: &str) -> TrackEvent {
    TrackEvent {
        r#type: Some(TYPE_SLICE_BEGIN),
        track_uuid: Some(track),
        name: Some(name.into()),
        ..TrackEvent::default()
    }
}

fn end(track: u64) -> TrackEvent {
    TrackEvent {
        r#type: Some(TYPE_SLICE_END),
        track_uuid: Some(track),
        ..TrackEvent::default()
    }
}

fn instant(track: u64, name: &str) -> TrackEvent {
    TrackEvent {
        r#type: Some(TYPE_INSTANT),
        ..begin(track, name)
    }
}

fn counter(track: u64, value: i64) -> TrackEvent {
    TrackEvent {
        r#type: Some(TYPE_COUNTER),
        track_uuid: Some(track),
        counter_value: Some(value),
        ..TrackEvent::default()
    }
}

fn annotated(mut event: TrackEvent, name: &str, value: DebugAnnotation) -> TrackEvent {
    event.debug_annotations.push(DebugAnnotation {
        name: Some(name.into()),
        ..value
    });
    event
}

fn uint(v: u64) -> DebugAnnotation {
    DebugAnnotation {
        uint_value: Some(v),
        ..DebugAnnotation::default()
    }
}

fn text(v: &str) -> DebugAnnotation {
    DebugAnnotation {
        string_value: Some(v.into()),
        ..DebugAnnotation::default()
    }
}

/// (frame, stage, pid, tid, thread name, start, dur) in the run's order.
fn spans(run: &Run) -> Vec<(u64, &str, u32, u32, &str, i64, i64)> {
    (run.spans.iter())
        .map(|s| {
            let t = &run.threads[s.thread as usize];
            let stage = run.stages[s.stage as usize].as_str();
            (
                s.frame,
                stage,
                t.pid,
                t.tid,
                t.name.as_str(),
                s.start_ns,
                s.dur_ns,
            )
        })
        .collect()
}

/// The notes but the marker of a trace without frames (see `ImportInfo::NO_FRAMES`).
fn notes(run: &Run) -> String {
    let notes = &run.import.as_ref().unwrap().notes;
    (notes.iter())
        .filter(|n| *n != crate::model::ImportInfo::NO_FRAMES)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

fn frame_arg(arg: &str) -> ImportOptions {
    ImportOptions {
        frame_arg: Some(arg.into()),
        ..ImportOptions::default()
    }
}

#[test]
fn nested_slices_on_a_thread_track_become_spans_of_that_thread() {
    let run = import(vec![
        process_track(1, 42, "game"),
        thread_track(2, 42, 43, "render"),
        at(1_000, begin(2, "frame")),
        at(1_100, begin(2, "draw")),
        at(1_350, end(2)),
        at(1_900, end(2)),
    ]);
    // The origin is the earliest timestamp; each slice is its own frame (inner closes first).
    assert_eq!(
        spans(&run),
        vec![
            (0, "draw", 42, 43, "render", 100, 250),
            (1, "frame", 42, 43, "render", 0, 900),
        ]
    );
    assert_eq!(notes(&run), "");
}

#[test]
fn interned_names_are_per_sequence_and_start_over_when_state_is_cleared() {
    let names = |entries: &[(u64, &str)]| InternedData {
        event_names: (entries.iter())
            .map(|&(iid, name)| InternedName {
                iid: Some(iid),
                name: Some(name.into()),
            })
            .collect(),
        ..InternedData::default()
    };
    let by_iid = |track: u64, iid: u64| TrackEvent {
        name: None,
        name_iid: Some(iid),
        ..begin(track, "")
    };
    let cleared = |data: InternedData| TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        interned_data: Some(data),
        ..TracePacket::default()
    };
    let run = import(vec![
        thread_track(2, 1, 1, "t"),
        cleared(names(&[(1, "decode")])),
        at(10, by_iid(2, 1)),
        at(20, end(2)),
        cleared(names(&[(1, "encode")])),
        at(30, by_iid(2, 1)),
        at(40, end(2)),
        // Cleared again with nothing interned: iid 1 is no longer defined.
        cleared(InternedData::default()),
        at(50, by_iid(2, 1)),
        at(60, end(2)),
    ]);
    assert_eq!(
        spans(&run),
        vec![
            (0, "decode", 1, 1, "t", 0, 10),
            (1, "encode", 1, 1, "t", 20, 10)
        ]
    );
    assert!(
        notes(&run).contains("1 slices and instants were named by an interned id"),
        "{}",
        notes(&run)
    );
}

#[test]
fn instants_are_events_keyed_by_the_key_annotation_and_the_launch_marker_is_the_origin() {
    let opts = ImportOptions {
        key: Some("req".into()),
        ..ImportOptions::default()
    };
    let run = import_with(
        vec![
            thread_track(2, 5, 6, "net"),
            at(100, annotated(instant(2, "send"), "req", uint(7))),
            at(500, instant(2, crate::formats::LAUNCH_MARKER)),
            at(700, annotated(instant(2, "recv"), "req", text("7"))),
            at(900, instant(2, "tick")),
        ],
        opts,
    );
    let events: Vec<(&str, u64, i64)> = (run.events.iter())
        .map(|e| (run.event_names[e.event as usize].as_str(), e.key, e.t_ns))
        .collect();
    assert_eq!(
        events,
        vec![("send", 7, -400), ("recv", 7, 200), ("tick", 0, 400)]
    );
    assert_eq!(run.threads[run.events[0].thread as usize].tid, 6);
}

#[test]
fn counter_tracks_become_series_with_their_unit_and_owner() {
    let counter_track = |uuid: u64, parent: u64, name: &str, c: CounterDescriptor| {
        descriptor(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent),
            name: Some(name.into()),
            counter: Some(c),
            ..TrackDescriptor::default()
        })
    };
    let run = import(vec![
        process_track(1, 10, "app"),
        thread_track(2, 10, 11, "worker"),
        counter_track(
            3,
            1,
            "rss",
            CounterDescriptor {
                unit: Some(UNIT_SIZE_BYTES),
                unit_multiplier: Some(1024),
                ..CounterDescriptor::default()
            },
        ),
        counter_track(
            4,
            2,
            "packets",
            CounterDescriptor {
                unit_name: Some("pkt".into()),
                is_incremental: Some(true),
                ..CounterDescriptor::default()
            },
        ),
        at(1_000, counter(3, 5)),
        at(2_000, counter(4, 3)),
        at(3_000, counter(4, 4)),
        at(
            4_000,
            TrackEvent {
                double_counter_value: Some(2.6),
                counter_value: None,
                ..counter(3, 0)
            },
        ),
        // Extra counter values ride on another event.
        at(
            5_000,
            TrackEvent {
                extra_counter_track_uuids: vec![3],
                extra_counter_values: vec![9],
                ..instant(2, "mark")
            },
        ),
    ]);
    let series = &run.telemetry.series;
    assert_eq!(series.len(), 2);
    assert_eq!(
        (&*series[0].source, &*series[0].metric, &*series[0].entity),
        ("perfetto", "rss", "10")
    );
    assert_eq!((&*series[0].label, &*series[0].unit), ("app", "B"));
    assert_eq!(series[0].kind, SeriesKind::Gauge);
    assert_eq!(
        (
            &*series[1].metric,
            &*series[1].entity,
            &*series[1].label,
            &*series[1].unit
        ),
        ("packets", "10/11", "worker", "pkt")
    );
    assert_eq!(series[1].kind, SeriesKind::Counter);
    let samples: Vec<(u32, i64, i64)> = (run.telemetry.samples.iter())
        .map(|s| (s.series, s.t_ns, s.value))
        .collect();
    // KiB to bytes; the running total of increments; 2.6 rounded to 3.
    assert_eq!(
        samples,
        vec![
            (0, 0, 5 * 1024),
            (0, 3_000, 3 * 1024),
            (0, 4_000, 9 * 1024),
            (1, 1_000, 3),
            (1, 2_000, 7),
        ]
    );
    assert!(
        notes(&run).contains("1 counter values had fractions"),
        "{}",
        notes(&run)
    );
}

#[test]
fn unclosed_slices_and_ends_without_begin_are_counted_not_invented() {
    let run = import(vec![
        thread_track(2, 1, 1, "t"),
        at(5, end(2)),
        at(10, begin(2, "a")),
        at(20, end(2)),
        at(30, begin(2, "open")),
        at(40, begin(2, "open too")),
    ]);
    assert_eq!(spans(&run), vec![(0, "a", 1, 1, "t", 0, 10)]);
    let notes = notes(&run);
    assert!(notes.contains("2 slices were never closed"), "{notes}");
    assert!(notes.contains("1 slice ENDs had no open BEGIN"), "{notes}");
}

#[test]
fn the_frame_comes_from_the_frame_arg_or_the_frame_regex() {
    let packets = || {
        vec![
            thread_track(2, 1, 1, "t"),
            at(0, annotated(begin(2, "decode #7"), "fid", uint(7))),
            at(10, end(2)),
            at(20, annotated(begin(2, "decode #8"), "fid", text("8"))),
            at(30, end(2)),
            at(40, begin(2, "decode #9")),
            at(50, end(2)),
        ]
    };
    let run = import_with(packets(), frame_arg("fid"));
    let frames: Vec<u64> = run.spans.iter().map(|s| s.frame).collect();
    assert_eq!(&frames[..2], &[7, 8]);
    assert!(notes(&run).contains("1 slices had no \"fid\" debug annotation"));

    let opts = ImportOptions {
        frame_regex: Some(regex::Regex::new(r"#(\d+)").unwrap()),
        ..ImportOptions::default()
    };
    let run = import_with(packets(), opts);
    let got: Vec<(u64, &str)> = (run.spans.iter())
        .map(|s| (s.frame, run.stages[s.stage as usize].as_str()))
        .collect();
    assert_eq!(got, vec![(7, "decode"), (8, "decode"), (9, "decode")]);
}

#[test]
fn slices_on_process_and_global_tracks_go_on_thread_zero_of_their_process() {
    let run = import(vec![
        process_track(1, 50, "server"),
        child_track(3, 1, "requests"), // an async track of the process
        child_track(4, 3, "nested"),
        child_track(5, 999, "orphan"), // parent never described: thread 0/0
        descriptor(TrackDescriptor {
            uuid: Some(6),
            name: Some("global".into()),
            ..TrackDescriptor::default()
        }),
        at(0, begin(3, "req")),
        at(5, begin(4, "sub")),
        at(6, end(4)),
        at(10, end(3)),
        at(20, begin(6, "g")),
        at(30, end(6)),
        at(40, begin(5, "o")),
        at(50, end(5)),
    ]);
    let placed: Vec<(&str, u32, u32, &str)> = (spans(&run).into_iter())
        .map(|(_, stage, pid, tid, name, ..)| (stage, pid, tid, name))
        .collect();
    assert_eq!(
        placed,
        vec![
            ("sub", 50, 0, "server"),
            ("req", 50, 0, "server"),
            ("g", 0, 0, ""),
            ("o", 0, 0, ""),
        ]
    );
    assert!(notes(&run).contains("1 records were on tracks no descriptor described"));
}

#[test]
fn descriptors_after_their_events_still_place_the_spans() {
    let run = import(vec![
        at(0, begin(9, "early")),
        at(10, end(9)),
        thread_track(9, 3, 4, "late"),
    ]);
    assert_eq!(spans(&run), vec![(0, "early", 3, 4, "late", 0, 10)]);
    assert_eq!(notes(&run), "");
}

#[test]
fn a_child_track_of_a_thread_puts_its_slices_on_that_thread() {
    let run = import(vec![
        thread_track(2, 1, 2, "main"),
        child_track(3, 2, "overlap 1"),
        at(0, begin(2, "a")),
        at(5, begin(3, "b")),
        at(10, end(2)),
        at(15, end(3)),
    ]);
    assert_eq!(
        spans(&run),
        vec![(0, "a", 1, 2, "main", 0, 10), (1, "b", 1, 2, "main", 5, 10)]
    );
}

#[test]
fn the_sdks_incremental_clock_is_resolved_through_its_snapshot() {
    let reset = TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        timestamp: Some(1_000_000),
        timestamp_clock_id: Some(6),
        trace_packet_defaults: Some(TracePacketDefaults {
            timestamp_clock_id: Some(64),
            track_event_defaults: Some(TrackEventDefaults {
                track_uuid: Some(2),
                ..TrackEventDefaults::default()
            }),
        }),
        clock_snapshot: Some(ClockSnapshot {
            clocks: vec![
                Clock {
                    clock_id: Some(6),
                    timestamp: Some(1_000_000),
                    ..Clock::default()
                },
                Clock {
                    clock_id: Some(64),
                    timestamp: Some(1_000),
                    is_incremental: Some(true),
                    unit_multiplier_ns: Some(1_000),
                },
            ],
            primary_trace_clock: None,
        }),
        ..TracePacket::default()
    };
    let no_track = |mut e: TrackEvent| {
        e.track_uuid = None;
        e
    };
    let run = import(vec![
        thread_track(2, 1, 1, "t"),
        reset,
        at(5, no_track(begin(0, "a"))),   // 1_005 µs
        at(2, no_track(end(0))),          // 1_007 µs
        at(3, no_track(instant(0, "i"))), // 1_010 µs
    ]);
    assert_eq!(spans(&run), vec![(0, "a", 1, 1, "t", 0, 2_000)]);
    assert_eq!(run.events[0].t_ns, 5_000);
    assert_eq!(run.meta.origin_mono_ns, 1_005_000);
    assert_eq!(notes(&run), "");
}

#[test]
fn process_keeps_only_that_process() {
    let opts = ImportOptions {
        process: Some("game".into()),
        ..ImportOptions::default()
    };
    let packets = vec![
        process_track(1, 10, "game"),
        process_track(2, 20, "compositor"),
        thread_track(3, 10, 11, "main"),
        thread_track(4, 20, 21, "main"),
        at(0, begin(3, "a")),
        at(5, end(3)),
        at(0, begin(4, "b")),
        at(5, end(4)),
    ];
    let run = import_with(packets.clone(), opts);
    assert_eq!(spans(&run), vec![(0, "a", 10, 11, "main", 0, 5)]);
    assert!(notes(&run).contains("1 records of processes other than \"game\""));
    let opts = ImportOptions {
        process: Some("nope".into()),
        ..ImportOptions::default()
    };
    let err = IMPORT.result_with(encode(packets), opts).unwrap_err();
    assert!(err.message.contains("compositor, game"), "{err}");
}

#[test]
fn compressed_packets_are_read() {
    use std::io::Write;
    let inner = encode(vec![
        thread_track(2, 1, 1, "t"),
        at(0, begin(2, "z")),
        at(9, end(2)),
    ]);
    let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    deflate.write_all(&inner).unwrap();
    let run = import(vec![TracePacket {
        compressed_packets: Some(deflate.finish().unwrap()),
        ..TracePacket::default()
    }]);
    assert_eq!(spans(&run), vec![(0, "z", 1, 1, "t", 0, 9)]);
}

fn small_trace() -> Vec<u8> {
    encode(vec![
        thread_track(2, 1, 1, "t"),
        at(0, begin(2, "a")),
        at(10, end(2)),
        at(20, begin(2, "b")),
        at(30, end(2)),
    ])
}

#[test]
fn a_truncated_trace_is_an_error_at_the_cut_packet_or_with_skip_bad_a_note() {
    let bytes = small_trace();
    let cut = &bytes[..bytes.len() - 3];
    let last_packet = bytes.len() - encode(vec![at(30, end(2))]).len();
    let err = IMPORT
        .result_with(cut, ImportOptions::default())
        .unwrap_err();
    assert_eq!(err.at, Location::Byte(last_packet as u64));
    assert!(err.message.contains("only"), "{err}");
    assert!(
        err.message
            .contains("--skip-bad keeps the 4 packets before it"),
        "{err}"
    );

    let opts = ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    };
    let run = IMPORT.result_with(cut, opts).unwrap();
    assert_eq!(spans(&run).len(), 1);
    let info = run.import.unwrap();
    assert_eq!(info.skipped, 1);
    assert!(info.notes.join("\n").contains("framing broke at byte"));
    assert!(info.notes.join("\n").contains("1 slices were never closed"));
}

#[test]
fn a_packet_that_does_not_decode_is_an_error_or_skipped() {
    // Field 11 (track_event) as a varint: a wrong wire type inside a well-framed packet.
    let mut bytes = encode(vec![thread_track(2, 1, 1, "t"), at(0, begin(2, "a"))]);
    let bad_at = bytes.len();
    bytes.extend_from_slice(&[0x0A, 0x02, 0x58, 0x01]);
    bytes.extend(encode(vec![at(10, end(2))]));
    let err = IMPORT
        .result_with(&bytes, ImportOptions::default())
        .unwrap_err();
    assert_eq!(err.at, Location::Byte(bad_at as u64));
    assert!(
        err.message.contains("not a valid Perfetto TracePacket"),
        "{err}"
    );
    let opts = ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    };
    let run = IMPORT.result_with(&bytes, opts).unwrap();
    assert_eq!(spans(&run), vec![(0, "a", 1, 1, "t", 0, 10)]);
    assert_eq!(run.import.unwrap().skipped, 1);
}

#[test]
fn garbage_empty_and_packetless_files_are_clear_errors() {
    let err = IMPORT
        .result_with(b"", ImportOptions::default())
        .unwrap_err();
    assert!(err.message.contains("empty"), "{err}");
    let err = IMPORT
        .result_with(b"hello, world\n", ImportOptions::default())
        .unwrap_err();
    assert!(
        err.message.contains("not a Perfetto protobuf trace"),
        "{err}"
    );
    let err = IMPORT
        .result_with([0x0A, 0xFF, 0xFF], ImportOptions::default())
        .unwrap_err();
    assert!(err.message.contains("varint"), "{err}");
    // Even --skip-bad finds no packet before the framing breaks.
    let opts = ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    };
    let err = IMPORT.result_with([0x0A, 0x05, 0x10], opts).unwrap_err();
    assert!(err.message.contains("no trace packets"), "{err}");
    // Field 1 as a varint: a packet with the wrong wire type.
    let mut bytes = small_trace();
    bytes.extend_from_slice(&[0x08, 0x01]);
    let err = IMPORT
        .result_with(&bytes, ImportOptions::default())
        .unwrap_err();
    assert!(err.message.contains("wire type 0"), "{err}");
}

#[test]
fn no_cut_or_flipped_byte_makes_it_panic() {
    let bytes = small_trace();
    let opts = ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    };
    for len in 0..bytes.len() {
        let _ = IMPORT.result_with(&bytes[..len], ImportOptions::default());
        let _ = IMPORT.result_with(&bytes[..len], opts.clone());
    }
    for i in 0..bytes.len() {
        for flip in [0x01, 0x80, 0xFF] {
            let mut damaged = bytes.clone();
            damaged[i] ^= flip;
            let _ = IMPORT.result_with(&damaged, opts.clone());
        }
    }
}

#[test]
fn interned_annotation_names_and_string_values_give_keys() {
    let data = InternedData {
        debug_annotation_names: vec![InternedName {
            iid: Some(3),
            name: Some("req".into()),
        }],
        debug_annotation_string_values: vec![InternedString {
            iid: Some(4),
            str: Some(b"abc".to_vec()),
        }],
        ..InternedData::default()
    };
    let mut event = instant(2, "send");
    event.debug_annotations.push(DebugAnnotation {
        name_iid: Some(3),
        string_value_iid: Some(4),
        ..DebugAnnotation::default()
    });
    let opts = ImportOptions {
        key: Some("req".into()),
        ..ImportOptions::default()
    };
    let run = import_with(
        vec![
            thread_track(2, 1, 1, "t"),
            TracePacket {
                trusted_packet_sequence_id: Some(1),
                interned_data: Some(data),
                ..TracePacket::default()
            },
            at(0, event),
        ],
        opts,
    );
    assert_eq!(run.events[0].key, crate::import::keys::key_of("abc"));
}

#[test]
fn legacy_thread_descriptors_place_trackless_events_and_odd_things_are_noted() {
    let trackless = |mut e: TrackEvent| {
        e.track_uuid = None;
        e
    };
    let run = import(vec![
        TracePacket {
            trusted_packet_sequence_id: Some(1),
            thread_descriptor: Some(ThreadDescriptor {
                pid: Some(8),
                tid: Some(9),
                thread_name: None,
            }),
            ..TracePacket::default()
        },
        at(100, trackless(begin(0, "old style"))),
        at(150, trackless(end(0))),
        // A slice ending before it began, and one in another clock.
        at(200, trackless(begin(0, "backwards"))),
        at(190, trackless(end(0))),
        TracePacket {
            timestamp_clock_id: Some(3),
            ..at(300, instant(5, "monotonic"))
        },
        TracePacket {
            timestamp_clock_id: Some(64),
            ..at(400, instant(5, "no snapshot"))
        },
        TracePacket {
            zstd_compressed_packets: Some(vec![1, 2, 3]),
            ..TracePacket::default()
        },
        TracePacket {
            timestamp: Some(5),
            ..TracePacket::default()
        },
    ]);
    assert_eq!(spans(&run), vec![(0, "old style", 8, 9, "", 0, 50)]);
    let notes = notes(&run);
    for expected in [
        "1 slices ended before they began",
        "timestamps are in more than one clock (ids 0 and [3, 64])",
        "1 packets used a sequence clock with no clock snapshot",
        "1 zstd-compressed packet bundles were not read",
        "1 packets of other kinds",
        "2 records were on tracks no descriptor described",
    ] {
        assert!(notes.contains(expected), "{expected:?} not in {notes}");
    }
}

#[test]
fn a_clock_that_overflows_is_a_bad_record_not_a_panic() {
    let snapshot = TracePacket {
        trusted_packet_sequence_id: Some(1),
        clock_snapshot: Some(ClockSnapshot {
            clocks: vec![
                Clock {
                    clock_id: Some(6),
                    timestamp: Some(u64::MAX),
                    unit_multiplier_ns: Some(u64::MAX),
                    ..Clock::default()
                },
                Clock {
                    clock_id: Some(64),
                    timestamp: Some(0),
                    is_incremental: Some(true),
                    unit_multiplier_ns: Some(u64::MAX),
                },
            ],
            primary_trace_clock: None,
        }),
        ..TracePacket::default()
    };
    let on_clock_64 = |ts: u64| TracePacket {
        timestamp_clock_id: Some(64),
        ..at(ts, instant(2, "i"))
    };
    let bytes = encode(vec![
        thread_track(2, 1, 1, "t"),
        snapshot,
        on_clock_64(u64::MAX),
        on_clock_64(u64::MAX),
    ]);
    let err = IMPORT
        .result_with(&bytes, ImportOptions::default())
        .unwrap_err();
    assert!(err.message.contains("past"), "{err}");
    let opts = ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    };
    assert_eq!(
        IMPORT
            .result_with(&bytes, opts)
            .unwrap()
            .import
            .unwrap()
            .skipped,
        2
    );
}

/// A track event of unspecified type that Chrome writes the JSON way, phase and all.
fn legacy(track: u64, name: &str, phase: u8, duration_us: Option<i64>) -> TrackEvent {
    TrackEvent {
        track_uuid: Some(track),
        name: Some(name.into()),
        legacy_event: Some(LegacyEvent {
            phase: Some(i32::from(phase)),
            duration_us,
            ..LegacyEvent::default()
        }),
        ..TrackEvent::default()
    }
}

#[test]
fn legacy_phases_are_read_like_their_typed_events() {
    let run = import(vec![
        thread_track(2, 7, 8, "main"),
        at(1_000, legacy(2, "complete", b'X', Some(3))),
        at(10_000, legacy(2, "outer", b'B', None)),
        at(11_000, legacy(2, "mark", b'I', None)),
        at(15_000, legacy(2, "outer", b'E', None)),
        at(16_000, legacy(2, "queue", b'C', None)),
    ]);
    assert_eq!(
        spans(&run),
        [
            (0, "complete", 7, 8, "main", 0, 3_000),
            (1, "outer", 7, 8, "main", 9_000, 5_000),
        ]
    );
    assert_eq!(run.event_names, ["mark"]);
    assert!(
        notes(&run).contains("1 track events of other types"),
        "{}",
        notes(&run)
    );
}
