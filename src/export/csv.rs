//! CSV export: one row per span, `frame,stage,pid,tid,thread,start_ns,dur_ns`, times in
//! integer ns after the run's launch. The first row is the launch marker (stage
//! `framelab:launch` at 0, no frame, no duration) so that `framelab import` of the file
//! takes the launch as its origin and gives back every span to the nanosecond.

use std::io::Write;

use crate::destination::csv_error;
use crate::formats::LAUNCH_MARKER;
use crate::model::{Run, SpanSource};

pub const HEADER: [&str; 7] = [
    "frame", "stage", "pid", "tid", "thread", "start_ns", "dur_ns",
];

/// Writes `run`'s spans as CSV to `out`, row by row.
pub fn write(run: &Run, out: &mut dyn Write) -> anyhow::Result<()> {
    write_from(run, run, out).map(|_| ())
}

/// Writes the spans of `spans` (a loaded run, or one streamed from its file) with the
/// names of `run` (its head) as CSV to `out`; returns how many.
pub fn write_from(run: &Run, spans: &dyn SpanSource, out: &mut dyn Write) -> anyhow::Result<u64> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(HEADER).map_err(csv_error)?;
    (csv.write_record(["", LAUNCH_MARKER, "", "", "", "0", ""])).map_err(csv_error)?;
    // One buffer for the numbers: no allocation per row.
    let mut number = String::with_capacity(24);
    let mut field = |csv: &mut csv::Writer<_>, n: &dyn std::fmt::Display| {
        number.clear();
        std::fmt::Write::write_fmt(&mut number, format_args!("{n}"))
            .map_err(|_| anyhow::anyhow!("cannot format a number"))?;
        csv.write_field(&number).map_err(csv_error)
    };
    let mut written = 0u64;
    spans.for_each_spans(&mut |chunk| {
        for span in chunk {
            let stage = run
                .stages
                .get(usize::from(span.stage))
                .map_or("", String::as_str);
            let thread = run.threads.get(span.thread as usize);
            let (pid, tid, name) = thread.map_or((0, 0, ""), |t| (t.pid, t.tid, t.name.as_str()));
            field(&mut csv, &span.frame)?;
            csv.write_field(stage).map_err(csv_error)?;
            field(&mut csv, &pid)?;
            field(&mut csv, &tid)?;
            csv.write_field(name).map_err(csv_error)?;
            field(&mut csv, &span.start_ns)?;
            field(&mut csv, &span.dur_ns)?;
            csv.write_record(None::<&[u8]>).map_err(csv_error)?;
        }
        written += chunk.len() as u64;
        Ok(())
    })?;
    csv.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{parse_bytes, Format, ImportOptions};
    use crate::model::{Span, ThreadInfo};

    fn sample_run() -> Run {
        let thread = |pid, tid, name: &str| ThreadInfo {
            pid,
            tid,
            name: name.into(),
            dropped: 0,
        };
        let span = |frame, stage, thread, start_ns, dur_ns| Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        };
        Run {
            stages: vec!["decode".into(), "render, \"final\"".into()],
            threads: vec![thread(100, 101, "main"), thread(100, 102, "gpu\nqueue")],
            spans: vec![
                span(0, 0, 0, 1_250, 4_000_000),
                span(0, 1, 1, 4_100_000, 7),
                span(u64::MAX, 0, 0, 9_000_000_123, 0),
            ],
            ..Run::default()
        }
    }

    #[test]
    fn writes_one_quoted_row_per_span() {
        let mut out = Vec::new();
        write(&sample_run(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "frame,stage,pid,tid,thread,start_ns,dur_ns\n\
             ,framelab:launch,,,,0,\n\
             0,decode,100,101,main,1250,4000000\n\
             0,\"render, \"\"final\"\"\",100,102,\"gpu\nqueue\",4100000,7\n\
             18446744073709551615,decode,100,101,main,9000000123,0\n"
        );
    }

    #[test]
    fn import_gives_back_the_same_spans() {
        let run = sample_run();
        let mut out = Vec::new();
        write(&run, &mut out).unwrap();
        let back = parse_bytes(Format::Csv, &out, ImportOptions::default()).unwrap();
        assert_eq!(back.named_spans(), run.named_spans());
        assert!(back.events.is_empty());
    }
}
