//! The layouts as snapshots (tests/snapshots/hist_*), and the values behind them by hand.

use super::*;
use crate::analyze::fixtures::{reference_run, MS, US};
use crate::model::{Bucket, EventRecord, Histogram};
use crate::snapshot::check;

/// Events (event id, key, time) on thread 0, appended to `run`.
fn push_events(run: &mut Run, events: &[(u16, u64, i64)]) {
    for &(event, key, t_ns) in events {
        run.events.push(EventRecord {
            event,
            key,
            thread: 0,
            t_ns,
        });
    }
}

fn opts(stage: Option<&str>) -> HistOptions {
    HistOptions {
        stage: stage.map(str::to_owned),
        ..HistOptions::default()
    }
}

#[test]
fn stages_of_the_measured_window_only() {
    // Frames 2–9 are measured: 8 encodes, 6 of 5 ms, one of 15 ms and one of 5 ms.
    let (series, _) = collect(&reference_run(), &opts(Some("encode"))).unwrap();
    assert_eq!(series.len(), 1);
    let mut v = series[0].values_ns.clone();
    v.sort_unstable();
    assert_eq!(v, [vec![5 * MS; 7], vec![15 * MS]].concat());
}

#[test]
fn totals_and_intervals_come_from_frames() {
    let run = reference_run();
    let (totals, _) = collect(&run, &opts(Some("total"))).unwrap();
    assert_eq!(totals[0].values_ns.len(), 8);
    let (intervals, _) = collect(&run, &opts(Some("interval"))).unwrap();
    assert_eq!(
        intervals[0].values_ns,
        vec![
            10 * MS,
            10 * MS,
            10 * MS,
            19 * MS + 500 * US,
            5 * MS,
            5 * MS + 500 * US,
            10 * MS
        ]
    );
}

#[test]
fn log2_layout_of_every_stage() {
    check(
        "hist_log2.txt",
        &render_run(&reference_run(), &opts(None)).unwrap(),
    );
}

#[test]
fn linear_layout_with_summary() {
    let o = HistOptions {
        stage: Some("interval".into()),
        linear: Some(LinearSpec::step(2 * MS)),
        ..HistOptions::default()
    };
    let text = render_run(&reference_run(), &o).unwrap();
    // 10, 10, 10, 19.5, 5, 5.5, 10 ms: mean 10, median 10.
    assert!(
        text.contains("# NumSamples = 7; Min = 5.000 ms; Max = 19.50 ms\n# Mean = 10.00 ms;"),
        "{text}"
    );
    assert!(text.contains("Median = 10.00 ms"), "{text}");
    check("hist_linear.txt", &text);
}

#[test]
fn by_thread_splits_stages() {
    let o = HistOptions {
        by: Some(GroupBy::Thread),
        ..HistOptions::default()
    };
    check(
        "hist_by_thread.txt",
        &render_run(&reference_run(), &o).unwrap(),
    );
    let o = HistOptions {
        stage: Some("total".into()),
        by: Some(GroupBy::Thread),
        ..HistOptions::default()
    };
    assert!(render_run(&reference_run(), &o).is_err());
}

#[test]
fn pairs_of_events_with_notes() {
    let mut run = reference_run();
    run.event_names = vec!["commit".into(), "release".into()];
    push_events(
        &mut run,
        &[
            (0, 7, 30 * MS),
            (1, 7, 34 * MS),
            (0, 8, 40 * MS),
            (1, 9, 41 * MS),
        ],
    );
    let o = HistOptions {
        pair: Some(PairSpec::parse("commit:release").unwrap()),
        linear: Some(LinearSpec::step(MS)),
        ..HistOptions::default()
    };
    check("hist_pair.txt", &render_run(&run, &o).unwrap());
}

#[test]
fn imported_histograms_print_as_bpftrace_did() {
    let mut run = crate::model::Run::default();
    run.histograms.push(Histogram {
        name: "@usecs".into(),
        unit: "us".into(),
        buckets: vec![
            Bucket {
                lo: Some(0),
                hi: Some(1),
                count: 3,
            },
            Bucket {
                lo: Some(1),
                hi: Some(2),
                count: 0,
            },
            Bucket {
                lo: Some(2),
                hi: Some(4),
                count: 12,
            },
            Bucket {
                lo: Some(8192),
                hi: Some(16384),
                count: 47,
            },
        ],
    });
    check("hist_imported.txt", &render_run(&run, &opts(None)).unwrap());
}

#[test]
fn unknown_stage_lists_those_that_exist() {
    let err = render_run(&reference_run(), &opts(Some("decode"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the run has no stage \"decode\"; it has capture, encode, send, total and interval"
    );
}

/// The line of values outside --min/--max names only the sides that have some, or both when
/// neither has.
#[test]
fn the_outside_line_names_the_sides_with_values() {
    let values: Vec<i64> = vec![5_000, 6_000, 7_000];
    let spec = |min, max| LinearSpec {
        buckets: Some(2),
        min_ns: Some(min),
        max_ns: Some(max),
        ..LinearSpec::default()
    };
    let line = |spec: LinearSpec| {
        let chart = super::chart_of("x", &values, Some(&spec), None);
        let text = crate::render::chart::text(&chart, &crate::render::style::Style::default());
        text.lines()
            .find(|l| l.contains("outside of min/max"))
            .unwrap()
            .to_owned()
    };
    let only_above = line(spec(0, 6_000));
    assert!(
        only_above.starts_with("# 2 values outside of min/max: 2 at or above 6"),
        "{only_above}"
    );
    assert!(!only_above.contains("below"), "{only_above}");
    let only_below = line(spec(6_000, 8_000));
    assert!(
        only_below.starts_with("# 1 value outside of min/max: 1 below 6"),
        "{only_below}"
    );
    assert!(!only_below.contains("above"), "{only_below}");
    let none = line(spec(0, 8_000));
    assert!(
        none.contains("0 below") && none.contains("0 at or above"),
        "{none}"
    );
}

/// Markdown of a pair (with a share read from the buckets) and the notes of unpaired
/// events: the text's document, each histogram a heading, its figures as bullets and a
/// table of its buckets, the notes in italics.
#[test]
fn markdown_of_figures_and_notes() {
    let mut run = reference_run();
    run.event_names = vec!["commit".into(), "release".into()];
    push_events(
        &mut run,
        &[(0, 7, 30 * MS), (1, 7, 34 * MS), (0, 8, 40 * MS)],
    );
    let o = HistOptions {
        pair: Some(PairSpec::parse("commit:release").unwrap()),
        thresholds: figures::Thresholds {
            below: vec![bounds::parse_threshold("3ms").unwrap()],
            above: vec![bounds::parse_threshold("1KiB").unwrap()],
        },
        format: Format::Markdown,
        ..HistOptions::default()
    };
    check("hist_pair.md", &render_run(&run, &o).unwrap());
}

/// Text and Markdown are one document: every summary line of the text is a bullet of the
/// Markdown, every bar a row of its table (the linear layout included, which Markdown
/// once refused).
#[test]
fn markdown_shows_the_figures_and_buckets_text_shows() {
    let linear = HistOptions {
        stage: Some("interval".into()),
        linear: Some(LinearSpec::step(2 * MS)),
        ..HistOptions::default()
    };
    let imported = {
        let mut run = reference_run();
        run.histograms.push(Histogram {
            name: "@usecs".into(),
            unit: "us".into(),
            buckets: vec![Bucket {
                lo: Some(8192),
                hi: Some(16384),
                count: 47,
            }],
        });
        (run, opts(Some("@usecs")))
    };
    for (run, o) in [(reference_run(), linear), imported] {
        let text = render_run(&run, &o).unwrap();
        let md = render_run(
            &run,
            &HistOptions {
                format: Format::Markdown,
                ..o
            },
        )
        .unwrap();
        let (mut summary, mut bars) = (0, 0);
        for line in text.lines() {
            if let Some(figures) = line.strip_prefix("# ") {
                summary += 1;
                assert!(md.contains(&format!("\n- {figures}\n")), "{figures}\n{md}");
            } else if let Some((head, _bar)) = line.split_once(" |") {
                // bpftrace's layout: the label in 16 columns, the count in 8.
                bars += 1;
                let (label, count) = (head[..16].trim_end(), head[16..].trim());
                let row = format!("| `{label}` | {count} |");
                assert!(md.lines().any(|l| l == row), "{row}\n{md}");
            }
        }
        assert!(bars >= 1, "{text}");
        assert!(summary >= 1, "{text}");
    }
}
