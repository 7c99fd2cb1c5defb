//! `framelab import` on real ffmpeg -benchmark_all logs and bpftrace histograms, through
//! the binary: format detection, the run written, bad files.

use super::{fixture, import_into, stage_count};
use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use framelab::model::{Bucket, Run};

/// `framelab import FILE -o DIR/run.framelab [extra]`, which must succeed; the run and
/// framelab's stderr.
fn import_ok(file: &Path, extra: &[&str]) -> (Run, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "run");
    let out = import_into(file, &path, extra);
    assert!(out.status.success(), "{}", stderr(&out));
    (load(&path), stderr(&out))
}

/// `framelab import FILE -o …` on a bad file: exit 1, the one error line.
fn import_fails(file: &Path, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "run");
    let out = import_into(file, &path, extra);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        !text.contains("panicked") && !text.contains("backtrace"),
        "{text}"
    );
    error_line(&out)
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
/// map of one key by its map name; a map of several keys is refused with their names (a
/// usage error, exit 2).
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
    assert_eq!(out.status.code(), Some(2));
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
    // A usage error: exit 2, as clap's.
    assert_eq!(out.status.code(), Some(2));
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

/// `framelab import FIXTURE -o DIR/NAME.framelab`, which must succeed; the run file.
fn imported(dir: &tempfile::TempDir, fixture_name: &str, name: &str) -> PathBuf {
    let path = temp_run(dir, name);
    let out = framelab()
        .arg("import")
        .arg(fixture(fixture_name))
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// `hist --format json` of one histogram: its figures.
fn hist_json(path: &Path, stage: &str, extra: &[&str]) -> serde_json::Value {
    let out = framelab()
        .arg("hist")
        .arg(path)
        .args(["--stage", stage, "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{stage}: {}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["histograms"].as_array().unwrap().len(), 1, "{doc}");
    doc["histograms"][0].clone()
}

/// A real bpftrace print (read(2) latency of dd): each imported histogram's count, its
/// percentiles' bucket bounds and the shares below and at or above a value, checked against
/// the text read again here. The bounds must hold the percentile of both extreme data sets
/// the buckets allow (every value at its bucket's low end, or at its high end), and the
/// shares' ends are those data sets' shares exactly.
#[test]
fn imported_histograms_give_count_shares_and_bounded_percentiles() {
    use common::bpftrace_text::{buckets_of, extreme_values, type7};
    let dir = tempfile::tempdir().unwrap();
    let path = imported(&dir, "bpftrace-0.17-read-before.txt", "before");
    let text = std::fs::read_to_string(fixture("bpftrace-0.17-read-before.txt")).unwrap();
    // Log2 (ns, from the name) and linear (µs): thresholds on a bucket bound and inside one.
    for (map, per_value, below, above) in [
        (
            "@read_ns[4096]",
            1.0,
            ["8192ns", "10us"],
            ["16384ns", "20us"],
        ),
        (
            "@read_ns[65536]",
            1.0,
            ["262144ns", "300us"],
            ["1ms", "1.5ms"],
        ),
        ("@read_us", 1000.0, ["10us", "15us"], ["20us", "25us"]),
    ] {
        let mut buckets = buckets_of(&text, map);
        let total: u64 = buckets.iter().map(|b| b.count).sum();
        let mut args = Vec::new();
        for v in below {
            args.extend(["--below", v]);
        }
        for v in above {
            args.extend(["--above", v]);
        }
        let f = hist_json(&path, map, &args);
        assert_eq!(f["count"], total, "{map}: {f}");
        let drawn: Vec<u64> = (f["buckets"].as_array().unwrap().iter())
            .map(|b| b["count"].as_u64().unwrap())
            .filter(|&c| c > 0)
            .collect();
        let printed: Vec<u64> = buckets.iter().map(|b| b.count).filter(|&c| c > 0).collect();
        assert_eq!(drawn, printed, "{map}");
        // lhist's open bucket `[100, ...)` holds values of any size: left out of the
        // extreme data sets, and the figures that reach it must be unbounded above.
        let open_above = buckets.last().unwrap().hi.is_none();
        let open_count = if open_above {
            buckets.pop().unwrap().count
        } else {
            0
        };
        let (low, high) = (
            extreme_values(&buckets, true),
            extreme_values(&buckets, false),
        );
        for p in f["percentiles"].as_array().unwrap() {
            let q = p["p"].as_f64().unwrap();
            let rank_in_open = q * (total - 1) as f64 >= (total - open_count) as f64 - 1.0;
            let lo = p["lo"].as_f64().unwrap();
            if rank_in_open {
                assert!(p["hi"].is_null(), "{map} {p}");
                continue;
            }
            let hi = p["hi"].as_f64().unwrap();
            let (a, b) = (type7(&low, q), type7(&high, q));
            assert!(lo <= a && b < hi, "{map} {p}: extremes {a} and {b}");
            // Bounds of buckets, no wider than the two buckets the ranks fall in.
            assert!(buckets.iter().any(|x| x.lo == Some(lo as i64)), "{map} {p}");
            assert!(buckets.iter().any(|x| x.hi == Some(hi as i64)), "{map} {p}");
        }
        let threshold = |text: &str| -> f64 {
            let (n, unit) = text.split_at(text.find(|c: char| c.is_alphabetic()).unwrap());
            let ns = n.parse::<f64>().unwrap()
                * match unit {
                    "ns" => 1.0,
                    "us" => 1e3,
                    "ms" => 1e6,
                    _ => unreachable!(),
                };
            ns / per_value
        };
        let below_count =
            |values: &[i64], x: f64| values.iter().filter(|&&v| (v as f64) < x).count() as u64;
        for (side, asked) in [("below", below), ("at_or_above", above)] {
            let shares = f[side].as_array().unwrap();
            assert_eq!(shares.len(), 2, "{map} {side}: {f}");
            for (s, v) in shares.iter().zip(asked) {
                let x = threshold(v);
                // Every value of the open bucket is at or above these thresholds.
                let (most_below, least_below) = (below_count(&low, x), below_count(&high, x));
                let (least, most) = if side == "below" {
                    (least_below, most_below)
                } else {
                    (total - most_below, total - least_below)
                };
                assert_eq!(s["count_at_least"], least, "{map} {side} {v}: {s}");
                assert_eq!(s["count_at_most"], most, "{map} {side} {v}: {s}");
                let share = s["share_at_least"].as_f64().unwrap();
                assert!((share - least as f64 / total as f64).abs() < 1e-12, "{s}");
            }
        }
        // On a bucket bound the share is exact; inside a bucket it is a range.
        let on_bound = &f["below"][0];
        assert_eq!(
            on_bound["count_at_least"], on_bound["count_at_most"],
            "{map}: {f}"
        );
        let inside = &f["below"][1];
        assert!(
            inside["count_at_least"].as_u64() < inside["count_at_most"].as_u64(),
            "{map}: {f}"
        );
    }

    // The text says the same: the count, every percentile's bounds, a share as a range.
    let out = framelab()
        .arg("hist")
        .arg(&path)
        .args(["--stage", "@read_ns[4096]", "--below", "10us"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.starts_with("@read_ns[4096]:\n# count 17371 · values in ns (from name)\n"),
        "{shown}"
    );
    assert!(shown.contains("# p50 [8.192 µs, 16.38 µs) · p90 [8.192 µs, 16.38 µs) · p99 [16.38 µs, 32.77 µs) · p99.9 [32.77 µs, 65.54 µs)\n"), "{shown}");
    assert!(shown.contains("# below 10us: 0.01% to 98.28% (2 to 17072 values: 10us splits the bucket [8.192 µs, 16.38 µs) of 17070)\n"), "{shown}");
    assert!(shown.ends_with("note: percentiles (interpolated at p·(N−1)) lie in the bucket bounds shown, [lo, hi); a share whose value splits a bucket is given as a range\n"), "{shown}");

    // Markdown carries the figures too.
    let out = framelab()
        .arg("hist")
        .arg(&path)
        .args([
            "--stage", "@read_us", "--below", "15us", "--format", "markdown",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.starts_with("### @read\\_us\n"), "{md}");
    // The same figures as the text's `#` lines, a bullet each, then the buckets' table.
    assert!(
        md.contains("\n- count 17672 · values in us (from name)\n"),
        "{md}"
    );
    assert!(md.contains(" · p99.9 [100 µs, ∞)\n"), "{md}");
    assert!(md.contains("\n- below 15us: 0.02% to 97.07% "), "{md}");
    assert!(md.contains("| `[100, ...)` | 305 |\n"), "{md}");
}

/// `--below` without a unit, a map named without its key, a prefix of several maps: a usage
/// error (exit 2) in one line that names what to give. A threshold that cannot apply to a
/// histogram (its unit unknown) says so rather than vanish; `--unit` gives the unit.
#[test]
fn histogram_figures_refuse_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = imported(&dir, "bpftrace-0.17-read-before.txt", "before");
    let hist = |extra: &[&str]| {
        framelab()
            .arg("hist")
            .arg(&path)
            .args(extra)
            .output()
            .unwrap()
    };

    let out = hist(&["--stage", "@read_us", "--below", "1000"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("'1000' has no unit") && line.contains("ns, us, ms or s"),
        "{line}"
    );

    let out = hist(&["--stage", "@read_ns"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        error_line(&out),
        "error: --stage @read_ns: the map has 3 keys; give one as the report prints it: \
         '@read_ns[832]', '@read_ns[65536]', '@read_ns[4096]'"
    );
    let out = hist(&["--stage", "@read"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        error_line(&out),
        "error: --stage @read: no histogram has that name; 4 begin with it: give one as the \
         report prints it: '@read_ns[832]', '@read_ns[65536]', '@read_ns[4096]', '@read_us'"
    );

    // A map whose name says no unit: the share is not applied, and said; --unit applies it.
    let maps = imported(&dir, "bpftrace-0.17-maps.txt", "maps");
    let out = framelab()
        .arg("hist")
        .arg(&maps)
        .args(["--stage", "@l", "--below", "60us"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("# not applied: 60us: the histogram's unit is unknown"),
        "{}",
        stdout(&out)
    );
    let f = hist_json(&maps, "@l", &["--below", "60us", "--unit", "us"]);
    assert_eq!(f["unit_from"], "--unit", "{f}");
    // [0, 25) and [25, 50) below for certain, [50, 75) split by 60.
    assert_eq!(f["below"][0]["count_at_least"], 50, "{f}");
    assert_eq!(f["below"][0]["count_at_most"], 75, "{f}");
}

/// A real bpftrace print that holds, beside its hist(), every value it counted (a `printf`
/// per read, 5206 lines before the map: detected as bpftrace all the same): framelab's
/// count is the number of values, and each percentile's bounds and each share's range hold
/// the exact figure of those values.
#[test]
fn bucket_bounds_hold_the_exact_figures_of_the_values_bpftrace_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "raw");
    let out = framelab()
        .arg("import")
        .arg(fixture("bpftrace-0.17-raw.txt"))
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(fixture("bpftrace-0.17-raw.txt")).unwrap();
    let mut values: Vec<i64> = (text.lines())
        .filter_map(|l| l.strip_prefix("raw "))
        .map(|v| v.parse().unwrap())
        .collect();
    values.sort_unstable();
    // bpftrace's own count() of the same reads.
    let counted: usize = (text.lines())
        .find_map(|l| l.strip_prefix("@n: "))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(values.len(), counted);
    let f = hist_json(
        &path,
        "@lat_ns",
        &["--below", "10us", "--below", "600us", "--above", "1ms"],
    );
    assert_eq!(f["count"], values.len() as u64, "{f}");
    for p in f["percentiles"].as_array().unwrap() {
        let exact = common::bpftrace_text::type7(&values, p["p"].as_f64().unwrap());
        let (lo, hi) = (p["lo"].as_f64().unwrap(), p["hi"].as_f64().unwrap());
        assert!(lo <= exact && exact < hi, "{exact}: {p}");
    }
    for (side, ns, s) in [
        ("below", 10_000, &f["below"][0]),
        ("below", 600_000, &f["below"][1]),
        ("above", 1_000_000, &f["at_or_above"][0]),
    ] {
        let below = values.iter().filter(|&&v| v < ns).count() as u64;
        let exact = if side == "below" {
            below
        } else {
            values.len() as u64 - below
        };
        assert!(
            s["count_at_least"].as_u64().unwrap() <= exact
                && exact <= s["count_at_most"].as_u64().unwrap(),
            "{side} {ns}: exact {exact}, {s}"
        );
    }
}
