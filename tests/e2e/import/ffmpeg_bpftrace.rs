//! `framelab import` on real ffmpeg -benchmark_all logs and bpftrace histograms, through
//! the binary: format detection, the run written, bad files.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use framelab::model::{Bucket, Run};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

/// `framelab import FILE -o DIR/run.framelab [extra]`, which must succeed; the run and
/// framelab's stderr.
fn import_ok(file: &Path, extra: &[&str]) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "run");
    let out = framelab()
        .arg("import")
        .arg(file)
        .arg("-o")
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (load(&path), stderr(&out))
}

/// `framelab import FILE -o …` on a bad file: exit 1, the one error line.
fn import_fails(file: &Path, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "run");
    let out = framelab()
        .arg("import")
        .arg(file)
        .arg("-o")
        .arg(&path)
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        !text.contains("panicked") && !text.contains("backtrace"),
        "{text}"
    );
    error_line(&out)
}

fn stage_count(run: &Run, stage: &str) -> usize {
    let id = run.stages.iter().position(|s| s == stage).unwrap();
    run.spans.iter().filter(|s| s.stage as usize == id).count()
}

#[test]
fn ffmpeg_logs_are_detected_and_become_spans() {
    let (run, err) = import_ok(&fixture("ffmpeg-5.1-transcode-av.log"), &[]);
    let info = run.import.as_ref().unwrap();
    assert_eq!(info.format, "ffmpeg");
    assert_eq!(run.spans.len(), 273);
    assert_eq!(stage_count(&run, "decode_video"), 51);
    assert_eq!(stage_count(&run, "encode_video"), 50);
    assert_eq!(stage_count(&run, "decode_audio"), 90);
    assert_eq!(stage_count(&run, "encode_audio"), 80);
    let total: i64 = run.spans.iter().map(|s| s.dur_ns).sum();
    assert_eq!(total, 22_060_000);
    // One user and one sys reading per span.
    assert_eq!(run.telemetry.samples.len(), 2 * 273);
    assert_eq!(
        info.notes,
        [
            "41 other ffmpeg log lines ignored (not bench lines)",
            "ffmpeg -benchmark: utime=0.020s stime=0.003s rtime=0.039s",
            "ffmpeg -benchmark: maxrss=62492kB",
        ]
    );
    assert!(
        err.contains("imported 273 spans, 546 samples (ffmpeg)"),
        "{err}"
    );

    let (run, _) = import_ok(&fixture("ffmpeg-5.1-pcm-repeats.log"), &[]);
    // 154 bench lines and 10 `Last message repeated 1 times`.
    assert_eq!(run.spans.len(), 164);
    let (run, _) = import_ok(&fixture("ffmpeg-5.1-x264-encode.log"), &[]);
    assert_eq!(run.spans.len(), 122);
    assert_eq!(stage_count(&run, "flush_video"), 31);
}

#[test]
fn bpftrace_text_and_json_are_detected_and_become_histograms() {
    let (text, err) = import_ok(&fixture("bpftrace-0.17-maps.txt"), &[]);
    assert_eq!(text.import.as_ref().unwrap().format, "bpftrace");
    assert!(err.contains("6 histograms (bpftrace)"), "{err}");
    let names: Vec<_> = text.histograms.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "@bytes[bpftrace, 7]",
            "@l",
            "@lat_ns[bpftrace]",
            "@neg",
            "@under",
            "@usecs"
        ]
    );
    let neg = &text.histograms[3];
    assert_eq!(
        neg.buckets[..3],
        [
            Bucket {
                lo: None,
                hi: Some(0),
                count: 20
            },
            Bucket {
                lo: Some(0),
                hi: Some(1),
                count: 1
            },
            Bucket {
                lo: Some(1),
                hi: Some(2),
                count: 1
            },
        ]
    );
    assert_eq!(text.histograms[5].unit, "us");
    assert!(text.spans.is_empty());

    let (json, _) = import_ok(&fixture("bpftrace-0.17-maps.json"), &[]);
    assert_eq!(json.histograms.len(), 6);
    for (t, j) in text.histograms.iter().zip(&json.histograms) {
        assert_eq!(t.buckets, j.buckets, "{}", t.name);
    }

    let (interval, _) = import_ok(&fixture("bpftrace-0.17-interval.txt"), &[]);
    let names: Vec<_> = interval
        .histograms
        .iter()
        .map(|h| h.name.as_str())
        .collect();
    assert_eq!(names[..3], ["@usecs", "@k[1]", "@usecs #2"]);
    assert_eq!(interval.histograms.len(), 11);
}

#[test]
fn a_bad_ffmpeg_line_is_one_error_line_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.log");
    std::fs::write(
        &bad,
        "bench:        5 user        1 sys        7 real decode_video 0.0 \n\
         bench:        3 user        1 sys        9 real encode_video 0.0 \n\
         bench:        5 user        1 sys      oops real decode_video 0.0 \n\
         bench:        2 user        0 sys        4 real decode_video 0.0 \n",
    )
    .unwrap();
    let line = import_fails(&bad, &[]);
    assert!(
        line.starts_with(&format!(
            "error: {}:3: \"oops\" is not a number",
            bad.display()
        )),
        "{line}"
    );

    let (run, err) = import_ok(&bad, &["--skip-bad"]);
    assert_eq!(run.spans.len(), 3);
    assert_eq!(run.import.as_ref().unwrap().skipped, 1);
    assert!(err.contains("skipped 1 bad records; the first: "), "{err}");
}

#[test]
fn a_bad_bpftrace_file_is_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(
        &bad,
        "@usecs:\n[0]   1 |@@@@|\n[2, 4)   many |@@|\n[4, 8)   2 |@@@@@@@@|\n",
    )
    .unwrap();
    let line = import_fails(&bad, &[]);
    assert_eq!(
        line,
        format!(
            "error: {}:3: \"many\" is not a count; expected a bucket like `[2, 4)   12 |@@@   |`",
            bad.display()
        )
    );

    let empty = dir.path().join("nothing.txt");
    std::fs::write(&empty, "Attaching 1 probe...\n\n@count: 3\n").unwrap();
    let line = import_fails(&empty, &["--format", "bpftrace"]);
    assert!(line.contains("no hist() or lhist() map"), "{line}");

    let noise = dir.path().join("noise.bin");
    std::fs::write(&noise, b"\x00\x01\x02 not a trace").unwrap();
    assert!(import_fails(&noise, &["--format", "ffmpeg"]).contains("no `bench: "));
}

/// The map's lines of a bpftrace text print: the bucket lines after `NAME:` up to a blank.
fn printed_counts(text: &str, name: &str) -> Vec<u64> {
    let start = text.find(&format!("\n{name}: \n")).expect(name) + name.len() + 4;
    (text[start..].lines())
        .take_while(|l| l.starts_with('['))
        .map(bucket_count)
        .collect()
}

/// The count of a bucket line, `[2, 4)   278 |@@@|`: the last word before the bar.
fn bucket_count(line: &str) -> u64 {
    let head = line.split('|').next().unwrap();
    head.split_whitespace().last().unwrap().parse().unwrap()
}

/// `hist RUN --stage NAME` picks one imported histogram by the name the report prints, or a
/// map of one key by its map name; a map of several keys is refused with their names.
#[test]
fn hist_picks_an_imported_histogram_by_its_printed_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "maps");
    let fixture_path = fixture("bpftrace-0.17-maps.txt");
    let out = framelab()
        .arg("import")
        .arg(&fixture_path)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The report names it so.
    assert!(
        stdout(&out).contains("@bytes[bpftrace, 7]"),
        "{}",
        stdout(&out)
    );
    let hist = |stage: &str, extra: &[&str]| {
        framelab()
            .arg("hist")
            .arg(&path)
            .args(["--stage", stage])
            .args(extra)
            .output()
            .unwrap()
    };
    let text = std::fs::read_to_string(&fixture_path).unwrap();
    for (stage, printed) in [
        ("@bytes[bpftrace, 7]", "@bytes[bpftrace, 7]"),
        ("@lat_ns", "@lat_ns[bpftrace]"),
    ] {
        let out = hist(stage, &[]);
        assert!(out.status.success(), "{stage}: {}", stderr(&out));
        let shown = stdout(&out);
        assert!(shown.starts_with(&format!("{printed}:\n")), "{shown}");
        assert_eq!(shown.matches(":\n").count(), 1, "one histogram: {shown}");
        // Its bucket counts are the text's (the empty ones at the ends left out).
        let drawn: Vec<u64> = (shown.lines().skip(1))
            .filter(|l| l.starts_with('['))
            .map(bucket_count)
            .collect();
        let expected = printed_counts(&text, printed);
        assert!(expected.iter().sum::<u64>() > 0);
        assert_eq!(drawn, expected, "{shown}");
    }
    let out = hist("@lat_ns[bpftrace]", &["--linear", "1ms"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("its own buckets"),
        "{}",
        stderr(&out)
    );
    let out = hist("nope", &[]);
    assert!(
        error_line(&out).contains("'@bytes[bpftrace, 7]'"),
        "{}",
        stderr(&out)
    );

    // A map of two keys: each by its name, the map alone refused with both.
    let two = dir.path().join("two.txt");
    std::fs::write(
        &two,
        "@q[1]: \n[1]  2 |@@@@|\n[2, 4)  1 |@@|\n\n@q[2]: \n[4, 8)  5 |@@@@@@@@@@|\n\n",
    )
    .unwrap();
    let path2 = temp_run(&dir, "two");
    let out = framelab()
        .arg("import")
        .arg(&two)
        .arg("-o")
        .arg(&path2)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = framelab()
        .arg("hist")
        .arg(&path2)
        .args(["--stage", "@q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        error_line(&out),
        "error: --stage @q: the map has 2 keys; give one as the report prints it: '@q[1]', '@q[2]'"
    );
    let out = framelab()
        .arg("hist")
        .arg(&path2)
        .args(["--stage", "@q[2]"])
        .output()
        .unwrap();
    assert!(stdout(&out).starts_with("@q[2]:\n"), "{}", stdout(&out));
    assert!(stdout(&out).contains(" 5 "), "{}", stdout(&out));
}
