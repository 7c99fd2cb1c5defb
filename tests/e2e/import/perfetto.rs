//! `framelab import` of Perfetto traces and `framelab export --format perfetto`, through
//! the binary: a trace built with the message structs, the round trip, and bad files.

use super::{fixture, import_into as import};
use crate::common;

use common::{error_line, framelab, load, stderr, stdout};
use framelab::import::perfetto::proto::{
    DebugAnnotation, ProcessDescriptor, ThreadDescriptor, Trace, TracePacket, TrackDescriptor,
    TrackEvent, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
};
use framelab::model::Run;
use prost::Message;

fn descriptor(d: TrackDescriptor) -> TracePacket {
    TracePacket {
        track_descriptor: Some(d),
        ..TracePacket::default()
    }
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

fn slice(ts: u64, track: u64, begin: Option<(&str, u64)>) -> TracePacket {
    let event = match begin {
        Some((name, frame)) => TrackEvent {
            r#type: Some(TYPE_SLICE_BEGIN),
            track_uuid: Some(track),
            name: Some(name.into()),
            debug_annotations: vec![DebugAnnotation {
                name: Some("fid".into()),
                uint_value: Some(frame),
                ..DebugAnnotation::default()
            }],
            ..TrackEvent::default()
        },
        None => TrackEvent {
            r#type: Some(TYPE_SLICE_END),
            track_uuid: Some(track),
            ..TrackEvent::default()
        },
    };
    TracePacket {
        timestamp: Some(ts),
        trusted_packet_sequence_id: Some(1),
        track_event: Some(event),
        ..TracePacket::default()
    }
}

/// Two threads of one process; frame 2's decode overlaps frame 1's on the decoder
/// thread without nesting (on a second track of that thread); one slice never closes.
fn pipeline_trace() -> Vec<u8> {
    let b = |ts, track, name, frame| slice(ts, track, Some((name, frame)));
    let e = |ts, track| slice(ts, track, None);
    let packets = vec![
        descriptor(TrackDescriptor {
            uuid: Some(1),
            process: Some(ProcessDescriptor {
                pid: Some(300),
                process_name: Some("player".into()),
                ..ProcessDescriptor::default()
            }),
            ..TrackDescriptor::default()
        }),
        thread_track(2, 300, 301, "decoder"),
        thread_track(3, 300, 302, "presenter"),
        descriptor(TrackDescriptor {
            uuid: Some(4),
            parent_uuid: Some(2),
            name: Some("decoder lane 2".into()),
            ..TrackDescriptor::default()
        }),
        b(10_000_000, 2, "decode", 1),
        b(10_100_000, 2, "parse", 1),
        e(10_400_000, 2),
        b(12_000_000, 4, "decode", 2),
        e(14_000_000, 2),
        b(14_500_000, 3, "present", 1),
        e(15_000_000, 3),
        e(17_000_000, 4),
        b(18_000_000, 3, "present", 2),
        e(18_250_000, 3),
        b(20_000_000, 2, "decode", 3), // never closed
    ];
    Trace { packet: packets }.encode_to_vec()
}

type SpanRow = framelab::model::NamedSpan;

fn span_rows(run: &Run) -> Vec<SpanRow> {
    run.named_spans()
}

fn row(frame: u64, stage: &str, tid: u32, thread: &str, start: i64, dur: i64) -> SpanRow {
    (frame, stage.into(), 300, tid, thread.into(), start, dur)
}

#[test]
fn a_constructed_trace_imports_with_frames_threads_and_what_was_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("pipeline.pftrace");
    std::fs::write(&trace, pipeline_trace()).unwrap();
    let run_path = dir.path().join("pipeline.framelab");
    let out = import(&trace, &run_path, &["--frame-arg", "fid"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&run_path);
    assert_eq!(run.import.as_ref().unwrap().format, "perfetto");
    assert_eq!(
        span_rows(&run),
        vec![
            row(1, "decode", 301, "decoder", 0, 4_000_000),
            row(1, "parse", 301, "decoder", 100_000, 300_000),
            row(1, "present", 302, "presenter", 4_500_000, 500_000),
            row(2, "decode", 301, "decoder", 2_000_000, 5_000_000),
            row(2, "present", 302, "presenter", 8_000_000, 250_000),
        ]
    );
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("1 slices were never closed"), "{said}");
    assert!(
        stderr(&out).contains("imported 5 spans (perfetto)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn export_then_import_gives_the_same_spans_and_frames_without_options() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("pipeline.pftrace");
    std::fs::write(&trace, pipeline_trace()).unwrap();
    let first = dir.path().join("first.framelab");
    assert!(import(&trace, &first, &["--frame-arg", "fid"])
        .status
        .success());

    let exported = dir.path().join("export.pftrace");
    let out = (framelab().args(["export"]).arg(&first))
        .args(["--format", "perfetto", "-o"])
        .arg(&exported)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Format detected from the content; frames from the export's own annotations.
    let second = dir.path().join("second.framelab");
    let out = import(&exported, &second, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (a, b) = (load(&first), load(&second));
    assert_eq!(span_rows(&b), span_rows(&a));
    // Nothing of this import was left out; the notes are the exported run's own, carried
    // by the export so that the re-import's report says what the original's said.
    let notes = b.import.unwrap().notes;
    assert_eq!(
        notes,
        [
            format!(
                "the exported run was itself imported (perfetto from {})",
                trace.display()
            ),
            "in the exported run's import: 1 slices were never closed (a BEGIN with no END)"
                .to_owned()
        ]
    );
}

#[test]
fn a_truncated_trace_is_one_error_line_with_the_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = pipeline_trace();
    let trace = dir.path().join("cut.pftrace");
    std::fs::write(&trace, &bytes[..bytes.len() - 5]).unwrap();
    let out = import(&trace, &dir.path().join("cut.framelab"), &[]);
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(line.starts_with("error: "), "{line}");
    assert!(line.contains("cut.pftrace: at byte "), "{line}");
    assert!(line.contains("--skip-bad"), "{line}");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));

    let out = import(&trace, &dir.path().join("kept.framelab"), &["--skip-bad"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skipped 1 bad records"),
        "{}",
        stderr(&out)
    );
    assert_eq!(load(&dir.path().join("kept.framelab")).spans.len(), 5);
}

#[test]
fn a_file_that_is_not_a_trace_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("notes.txt");
    std::fs::write(&trace, "just some text\n").unwrap();
    let out = import(
        &trace,
        &dir.path().join("x.framelab"),
        &["--format", "perfetto"],
    );
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(line.contains("not a Perfetto protobuf trace"), "{line}");
}

/// A number from the report note that starts with it, e.g. "52 slices were never closed".
fn note_count(run: &Run, text: &str) -> u64 {
    let notes = &run.import.as_ref().unwrap().notes;
    notes
        .iter()
        .find(|n| n.contains(text))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_real_chromium_trace_imports_and_every_slice_is_accounted_for() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("chromium-156-startup.pftrace.gz");
    let run_path = dir.path().join("chromium.framelab");
    let out = import(&trace, &run_path, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("imported  perfetto"),
        "{}",
        stdout(&out)
    );
    // No frame definition: no frame statistics, and one line says how to define frames.
    let text = stdout(&out);
    assert!(
        text.contains("\n  frames    none defined") && !text.contains("observed"),
        "{text}"
    );
    assert!(
        !text.contains("\n  fps ") && !text.contains("\n  stutter "),
        "{text}"
    );
    let run = load(&run_path);
    assert!(run.threads.iter().any(|t| t.name == "CrBrowserMain"));

    // Count BEGINs and ENDs straight from the file: each is a span, or counted in a note.
    let bytes = framelab::import::read_input(&trace).unwrap();
    let trace = Trace::decode(&bytes[..]).unwrap();
    let of_type = |t: i32| {
        (trace.packet.iter())
            .filter(|p| p.track_event.as_ref().and_then(|e| e.r#type) == Some(t))
            .count() as u64
    };
    let spans = run.spans.len() as u64;
    assert!(spans > 1000, "{spans}");
    let unclosed = note_count(&run, "never closed");
    let unmatched_ends = note_count(&run, "ENDs had no open BEGIN");
    assert_eq!(of_type(TYPE_SLICE_BEGIN), spans + unclosed);
    assert_eq!(of_type(TYPE_SLICE_END), spans + unmatched_ends);
    assert!(run.spans.iter().all(|s| s.dur_ns >= 0));
}

/// framelab's pid 0 is "no process known" (MangoHud, WAYLAND_DEBUG); Perfetto's is the
/// kernel's idle process, whose threads it shows as `swapper`. The export writes such
/// threads under pid 2^31-1 (no Linux or Windows pid) and the import reads them back as 0.
#[test]
fn threads_of_no_known_process_are_not_written_as_the_idle_process() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("mangohud.framelab");
    let out = import(
        &fixture("mangohud-0.6.8-glxgears-llvmpipe.csv"),
        &original,
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        (
            load(&original).threads[0].pid,
            load(&original).threads[0].tid
        ),
        (0, 0)
    );
    let trace = dir.path().join("mangohud.pftrace");
    let out = framelab()
        .arg("export")
        .arg(&original)
        .args(["--format", "perfetto", "-o"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let decoded = Trace::decode(std::fs::read(&trace).unwrap().as_slice()).unwrap();
    let pids: Vec<i32> = (decoded.packet.iter())
        .filter_map(|p| p.track_descriptor.as_ref())
        .flat_map(|d| {
            (d.process.as_ref().and_then(|p| p.pid))
                .into_iter()
                .chain(d.thread.as_ref().and_then(|t| t.pid))
        })
        .collect();
    assert_eq!(pids, [i32::MAX, i32::MAX], "process and thread descriptors");
    let back = dir.path().join("back.framelab");
    let out = import(&trace, &back, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let thread = &load(&back).threads[0];
    assert_eq!(
        (thread.pid, thread.tid, thread.name.as_str()),
        (0, 0, "MangoHud")
    );
}
