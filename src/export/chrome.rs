//! A run as Chrome trace event JSON (object form), for chrome://tracing and the Perfetto UI.
//!
//! - `otherData.framelab` comes first and marks the file as framelab's: the importer then
//!   takes frame ids from `args.frame` and event keys from `args.key`. Its `description`
//!   carries the rest of the run (name, target, window, processes, counters…:
//!   [`super::meta`]).
//! - The `framelab:launch` instant at ts 0 is the origin; times are the run's own (ns after
//!   launch) written as microseconds with exactly three decimals, so they come back to the
//!   nanosecond.
//! - `M` events name processes and threads; each span is an `X` slice named after its stage
//!   with `args: {"frame": N}`; events are `i` instants with `args: {"key": K}`; telemetry
//!   readings are `C` counters of a "telemetry" process (pid 0) named `SOURCE.METRIC[ENTITY]`
//!   with the unit.
//!
//! Written event by event: nothing the size of the run is built in memory.

use std::collections::BTreeSet;
use std::io::Write;

use crate::formats::LAUNCH_MARKER;
use crate::model::{Run, Span, SpanSource};

/// The pid the telemetry counters are shown under.
const TELEMETRY_PID: u32 = 0;

pub fn write(run: &Run, out: &mut dyn Write) -> anyhow::Result<()> {
    write_from(run, run, out).map(|_| ())
}

/// Writes `run` (its head: names, events, telemetry) with the spans of `spans` (the run
/// itself, or its file streamed) to `out`; returns how many spans.
pub fn write_from(run: &Run, spans: &dyn SpanSource, out: &mut dyn Write) -> anyhow::Result<u64> {
    write!(out, "{{\"otherData\":{{\"framelab\":{{\"version\":")?;
    json_string(out, env!("CARGO_PKG_VERSION"))?;
    write!(
        out,
        ",\"frames\":\"args.frame\",\"keys\":\"args.key\",\"run\":"
    )?;
    json_string(out, &run.meta.name)?;
    write!(out, ",\"description\":")?;
    serde_json::to_writer(&mut *out, &crate::formats::carried::Carried::of(run)?)?;
    writeln!(out, "}}}},\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let mut events = Events { out, first: true };
    events.start()?;
    write!(
        events.out,
        "{{\"ph\":\"i\",\"s\":\"g\",\"name\":\"{LAUNCH_MARKER}\",\"ts\":0,\"pid\":0,\"tid\":0}}"
    )?;
    write_names(run, &mut events)?;
    let mut written = 0u64;
    spans.for_each_spans(&mut |chunk| {
        written += chunk.len() as u64;
        Ok(write_spans(run, chunk, &mut events)?)
    })?;
    write_events(run, &mut events)?;
    write_samples(run, &mut events)?;
    write!(events.out, "\n]}}\n")?;
    Ok(written)
}

/// The events array, one event a line.
struct Events<'o> {
    out: &'o mut dyn Write,
    first: bool,
}

impl Events<'_> {
    /// Starts the next event (a separator before all but the first).
    fn start(&mut self) -> std::io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        Ok(())
    }
}

fn json_string(out: &mut dyn Write, s: &str) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, s).map_err(std::io::Error::from)
}

/// Nanoseconds as microseconds with three decimals: `-1` → `-0.001`, `1234567` → `1234.567`.
fn write_micros(out: &mut dyn Write, ns: i64) -> std::io::Result<()> {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    write!(out, "{sign}{}.{:03}", abs / 1000, abs % 1000)
}

fn write_names(run: &Run, events: &mut Events) -> std::io::Result<()> {
    let pids: BTreeSet<u32> = run.threads.iter().map(|t| t.pid).collect();
    for pid in pids {
        let Some(process) = run.processes.iter().find(|p| p.pid == pid) else {
            continue;
        };
        events.start()?;
        write!(
            events.out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":"
        )?;
        json_string(events.out, &process.name)?;
        write!(events.out, "}}}}")?;
    }
    for thread in run.threads.iter().filter(|t| !t.name.is_empty()) {
        events.start()?;
        write!(
            events.out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
            thread.pid, thread.tid
        )?;
        json_string(events.out, &thread.name)?;
        write!(events.out, "}}}}")?;
    }
    if !run.telemetry.samples.is_empty() {
        events.start()?;
        write!(
            events.out,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{TELEMETRY_PID},\"tid\":0,\
             \"args\":{{\"name\":\"telemetry\"}}}}"
        )?;
    }
    Ok(())
}

/// A thread's (pid, tid); (0, 0) for an index the run does not hold.
fn pid_tid(run: &Run, thread: u32) -> (u32, u32) {
    run.threads
        .get(thread as usize)
        .map_or((0, 0), |t| (t.pid, t.tid))
}

fn write_spans(run: &Run, spans: &[Span], events: &mut Events) -> std::io::Result<()> {
    for span in spans {
        let stage = run
            .stages
            .get(usize::from(span.stage))
            .map_or("?", String::as_str);
        let (pid, tid) = pid_tid(run, span.thread);
        events.start()?;
        write!(events.out, "{{\"ph\":\"X\",\"cat\":\"framelab\",\"name\":")?;
        json_string(events.out, stage)?;
        write!(events.out, ",\"ts\":")?;
        write_micros(events.out, span.start_ns)?;
        write!(events.out, ",\"dur\":")?;
        write_micros(events.out, span.dur_ns)?;
        write!(
            events.out,
            ",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"frame\":{}}}}}",
            span.frame
        )?;
    }
    Ok(())
}

fn write_events(run: &Run, events: &mut Events) -> std::io::Result<()> {
    for event in &run.events {
        let name = (run.event_names.get(usize::from(event.event))).map_or("?", String::as_str);
        let (pid, tid) = pid_tid(run, event.thread);
        events.start()?;
        write!(
            events.out,
            "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"framelab\",\"name\":"
        )?;
        json_string(events.out, name)?;
        write!(events.out, ",\"ts\":")?;
        write_micros(events.out, event.t_ns)?;
        write!(
            events.out,
            ",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"key\":{}}}}}",
            event.key
        )?;
    }
    Ok(())
}

fn write_samples(run: &Run, events: &mut Events) -> std::io::Result<()> {
    let names: Vec<String> = (run.telemetry.series.iter())
        .map(crate::formats::series_name)
        .collect();
    for sample in &run.telemetry.samples {
        let name = names
            .get(sample.series as usize)
            .map_or("?", String::as_str);
        events.start()?;
        write!(events.out, "{{\"ph\":\"C\",\"cat\":\"telemetry\",\"name\":")?;
        json_string(events.out, name)?;
        write!(events.out, ",\"ts\":")?;
        write_micros(events.out, sample.t_ns)?;
        write!(
            events.out,
            ",\"pid\":{TELEMETRY_PID},\"tid\":0,\"args\":{{\"value\":{}}}}}",
            sample.value
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::reference_run;
    use crate::import::{parse_bytes, Format, ImportOptions};
    use crate::model::{EventRecord, Sample, SampleSeries, Span, ThreadInfo};

    fn export(run: &Run) -> Vec<u8> {
        let mut out = Vec::new();
        write(run, &mut out).unwrap();
        out
    }

    #[test]
    fn micros_have_three_decimals_exactly() {
        let text = |ns| {
            let mut out = Vec::new();
            write_micros(&mut out, ns).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(0), "0.000");
        assert_eq!(text(1), "0.001");
        assert_eq!(text(999), "0.999");
        assert_eq!(text(1_234_567), "1234.567");
        assert_eq!(text(-1), "-0.001");
        assert_eq!(text(-1_000), "-1.000");
        assert_eq!(text(i64::MIN), "-9223372036854775.808");
        assert_eq!(text(i64::MAX), "9223372036854775.807");
    }

    #[test]
    fn reference_run_comes_back_to_the_nanosecond() {
        let run = reference_run();
        let json = export(&run);
        let back = parse_bytes(Format::Chrome, &json, ImportOptions::default()).unwrap();
        assert_eq!(&back.named_spans(), &run.named_spans());
        // The launch marker is the origin; the run description gives back the launch's
        // CLOCK_MONOTONIC time and the rest of the metadata.
        assert_eq!(back.meta.origin_mono_ns, run.meta.origin_mono_ns);
        assert_eq!(back.meta.name, run.meta.name);
        assert_eq!(
            (back.meta.window_start_ns, back.meta.window_end_ns),
            (run.meta.window_start_ns, run.meta.window_end_ns)
        );
        assert!(back.import.unwrap().notes.is_empty());
    }

    /// Odd nanoseconds, large times and frame ids, several threads and processes,
    /// names that need escaping, events with keys, and telemetry.
    fn odd_run() -> Run {
        let threads = vec![
            ThreadInfo {
                pid: 10,
                tid: 10,
                name: "main \"loop\"".into(),
                dropped: 0,
            },
            ThreadInfo {
                pid: 10,
                tid: 11,
                name: "worker\\1".into(),
                dropped: 0,
            },
            ThreadInfo {
                pid: 4_000_000_000,
                tid: 4_000_000_001,
                name: "gpu".into(),
                dropped: 0,
            },
        ];
        let span = |frame, stage, thread, start_ns, dur_ns| Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        };
        Run {
            stages: vec!["capture".into(), "encode ünï".into(), "present\n".into()],
            event_names: vec!["commit".into(), "release".into()],
            threads,
            spans: vec![
                span(0, 0, 0, 1, 999),
                span(0, 1, 1, 999, 1),
                span(1, 0, 0, 1_000, 0),
                span(u64::MAX, 2, 2, 2_000_000_000_000_000_123, 123_456_789_012),
                span(7, 1, 2, 86_400_000_000_123, 1_000_000_001),
                span(3, 2, 1, 0, 7),
            ],
            events: vec![
                EventRecord {
                    event: 0,
                    key: 42,
                    thread: 0,
                    t_ns: 5_001,
                },
                EventRecord {
                    event: 1,
                    key: u64::MAX - 1,
                    thread: 1,
                    t_ns: 9_999_999,
                },
            ],
            telemetry: crate::model::Telemetry {
                sources: vec![],
                series: vec![SampleSeries {
                    source: "nvml".into(),
                    metric: "sm_clock".into(),
                    entity: "0".into(),
                    unit: "MHz".into(),
                    ..SampleSeries::default()
                }],
                samples: vec![
                    Sample {
                        series: 0,
                        t_ns: 1_500,
                        value: 1_980,
                    },
                    Sample {
                        series: 0,
                        t_ns: 51_500,
                        value: 2_010,
                    },
                ],
            },
            ..Run::default()
        }
    }

    #[test]
    fn odd_values_come_back_to_the_nanosecond() {
        let run = odd_run();
        let json = export(&run);
        let back = parse_bytes(Format::Chrome, &json, ImportOptions::default()).unwrap();
        assert_eq!(&back.named_spans(), &run.named_spans());
        let events: Vec<(String, u64, i64)> = back
            .events
            .iter()
            .map(|e| {
                (
                    back.event_names[usize::from(e.event)].clone(),
                    e.key,
                    e.t_ns,
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                ("commit".to_owned(), 42, 5_001),
                ("release".to_owned(), u64::MAX - 1, 9_999_999)
            ]
        );
        let series = &back.telemetry.series;
        // The counter `nvml.sm_clock[0] (MHz)` is given back its series whole.
        assert_eq!(series, &run.telemetry.series);
        let samples: Vec<(i64, i64)> = back
            .telemetry
            .samples
            .iter()
            .map(|s| (s.t_ns, s.value))
            .collect();
        assert_eq!(samples, [(1_500, 1_980), (51_500, 2_010)]);
    }

    #[test]
    fn spans_before_the_launch_come_back_too() {
        let mut run = odd_run();
        run.spans[0].start_ns = -1_234_567;
        let back = parse_bytes(Format::Chrome, &export(&run), ImportOptions::default()).unwrap();
        assert_eq!(&back.named_spans(), &run.named_spans());
    }

    #[test]
    fn the_export_is_valid_json_with_the_marker_first() {
        let json = export(&reference_run());
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert!(value["otherData"]["framelab"].is_object());
        let events = value["traceEvents"].as_array().unwrap();
        assert_eq!(events[0]["name"], LAUNCH_MARKER);
        let slices = events.iter().filter(|e| e["ph"] == "X").count();
        assert_eq!(slices, reference_run().spans.len());
        let text = String::from_utf8(json).unwrap();
        assert!(text.find("\"otherData\"").unwrap() < text.find("\"traceEvents\"").unwrap());
    }
}
