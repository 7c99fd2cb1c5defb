//! The HTML reports opened in a real headless Chromium: the page draws without a console
//! message or an exception, every plot holds the series and points the data says, a
//! hostile run file's names render as text, and a screenshot of each page is kept in
//! target/html-artifacts/. Skipped, saying so, where no Chromium is installed
//! (tests/tools/install.sh installs Debian's `chromium`).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{framelab, stderr};
use framelab::model::*;

const MS: i64 = 1_000_000;
const HOSTILE_STAGE: &str = "</script><script>alert(1)</script>";
const HOSTILE_COMMAND: &str = "<img src=x onerror=alert(1)>";

fn chromium() -> Option<&'static str> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let ok = Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(name);
        }
    }
    println!(
        "SKIPPED: no chromium on this machine (tests/tools/install.sh installs it); \
         the HTML pages were not opened in a browser"
    );
    None
}

/// target/html-artifacts: kept after the test for people to look at.
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_owned();
    let dir = target.join("html-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What the browser made of a page: the DOM after its scripts ran, and the browser's log.
struct Opened {
    dom: String,
    log: String,
}

fn open(browser: &str, page: &Path, screenshot: &Path) -> Opened {
    open_at(browser, page, "", screenshot)
}

/// [`open`] with `fragment` (`#…`) on the page's URL.
fn open_at(browser: &str, page: &Path, fragment: &str, screenshot: &Path) -> Opened {
    let profile = tempfile::tempdir().unwrap();
    let run = |extra: &[String]| {
        let mut command = Command::new(browser);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args(["--enable-logging=stderr", "--v=0", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}{fragment}", page.display()));
        browser_output(&mut command, profile.path())
    };
    let dumped = run(&["--dump-dom".into()]);
    assert!(dumped.status.success(), "{}", stderr(&dumped));
    let shot = run(&[
        "--window-size=1280,2600".into(),
        format!("--screenshot={}", screenshot.display()),
    ]);
    assert!(shot.status.success(), "{}", stderr(&shot));
    assert!(
        screenshot.exists(),
        "no screenshot at {}",
        screenshot.display()
    );
    println!("screenshot: {}", screenshot.display());
    Opened {
        dom: String::from_utf8_lossy(&dumped.stdout).into_owned(),
        log: format!("{}{}", stderr(&dumped), stderr(&shot)),
    }
}

/// A headless browser may never exit, or leave a helper process holding its output open
/// (either would hang the test, and CI with it). Each try runs in a process group of its own
/// with its output in files, for at most [`BROWSER_LIMIT`]; one that hangs is killed with its
/// helpers and tried once more, saying so.
fn browser_output(command: &mut Command, dir: &Path) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    for attempt in 1..=2 {
        let (out, err) = (dir.join("browser.out"), dir.join("browser.err"));
        let mut child = command
            .process_group(0)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .expect("chromium runs");
        let status = common::exited_within(&mut child, BROWSER_LIMIT);
        // SAFETY: the process group this function started; its helpers go with it.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
        if let Some(status) = status {
            return std::process::Output {
                status,
                stdout: std::fs::read(&out).unwrap(),
                stderr: std::fs::read(&err).unwrap(),
            };
        }
        println!(
            "chromium ran past {} s (try {attempt} of 2); killed",
            BROWSER_LIMIT.as_secs()
        );
    }
    panic!(
        "chromium ran past {} s twice: the browser hangs on this machine",
        BROWSER_LIMIT.as_secs()
    );
}

/// Far above the few seconds a page takes, even on a loaded 2-core VM.
const BROWSER_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The value of attribute `name` on the element of plot `plot`.
fn plot_attr(dom: &str, plot: &str, name: &str) -> Option<String> {
    let tag = regex::Regex::new(&format!(r#"<[a-z]+ [^>]*data-plot="{plot}"[^>]*>"#)).unwrap();
    let t = tag.find(dom)?.as_str();
    let re = regex::Regex::new(&format!(r#"{name}="([^"]*)""#)).unwrap();
    re.captures(t).map(|c| c[1].to_owned())
}

/// Every plot's (series, points), by its name.
fn plots(dom: &str) -> BTreeMap<String, (usize, usize)> {
    let tag = regex::Regex::new(r#"<[a-z]+ [^>]*data-plot="([^"]+)"[^>]*>"#).unwrap();
    let attr = |t: &str, name: &str| -> usize {
        let re = regex::Regex::new(&format!(r#"{name}="(\d+)""#)).unwrap();
        re.captures(t).unwrap_or_else(|| panic!("no {name} in {t}"))[1]
            .parse()
            .unwrap()
    };
    tag.captures_iter(dom)
        .map(|c| {
            let t = c.get(0).unwrap().as_str();
            (
                c[1].to_owned(),
                (attr(t, "data-series"), attr(t, "data-points")),
            )
        })
        .collect()
}

fn body_attr(dom: &str, name: &str) -> Option<String> {
    let body = regex::Regex::new(r"<body[^>]*>").unwrap();
    let tag = body.find(dom)?.as_str();
    let re = regex::Regex::new(&format!(r#"{name}="([^"]*)""#)).unwrap();
    re.captures(tag).map(|c| c[1].to_owned())
}

/// Drew, with no exception and nothing written to the console (a blocked load, an error).
fn assert_clean(opened: &Opened) {
    assert_eq!(
        body_attr(&opened.dom, "data-rendered").as_deref(),
        Some("1"),
        "the page's script did not finish"
    );
    assert_eq!(
        body_attr(&opened.dom, "data-errors").as_deref(),
        Some("0"),
        "{:?}",
        body_attr(&opened.dom, "data-error-messages")
    );
    let console: Vec<&str> = opened
        .log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console: {console:#?}");
}

/// A run of `frames` frames at 100 fps: capture and send on the main thread, encode on
/// another; every 50th frame's encode stalls past the budget. `slower` stretches encode.
fn run(frames: u64, slower: f64, seed: u64) -> Run {
    let mut spans = Vec::new();
    for i in 0..frames {
        let t = i as i64 * 10 * MS;
        let jitter = ((i * 7919 + seed * 104_729) % 1000) as i64 * 1000;
        let encode =
            ((4 * MS + jitter) as f64 * slower) as i64 + if i % 50 == 7 { 9 * MS } else { 0 };
        spans.push(Span {
            frame: i,
            stage: 0,
            thread: 0,
            start_ns: t,
            dur_ns: MS,
        });
        spans.push(Span {
            frame: i,
            stage: 1,
            thread: 1,
            start_ns: t + 2 * MS,
            dur_ns: encode,
        });
        let send_at = t + 2 * MS + encode + 200_000;
        spans.push(Span {
            frame: i,
            stage: 2,
            thread: 0,
            start_ns: send_at,
            dur_ns: 300_000,
        });
    }
    let end = frames as i64 * 10 * MS;
    let samples = (0..20)
        .map(|k| Sample {
            series: 0,
            t_ns: k * end / 20,
            value: if k == 10 { 900 } else { 1800 },
        })
        .collect();
    Run {
        meta: RunMeta {
            name: "browser test".into(),
            command: vec!["./host".into(), HOSTILE_COMMAND.into()],
            started_at: "2026-11-25T12:00:00Z".into(),
            host: Host {
                hostname: "h".into(),
                cpu_model: "Test CPU".into(),
                cores: 2,
                kernel: "6.18".into(),
                clocksource: "tsc".into(),
            },
            target_fps: Some(100.0),
            budget_ns: Some(10 * MS),
            window_start_ns: 100 * MS,
            window_end_ns: end,
            warmup_ns: 100 * MS,
            duration_ns: Some(end),
            end_reason: EndReason::Duration,
            ..RunMeta::default()
        },
        stages: vec!["capture".into(), "encode".into(), HOSTILE_STAGE.into()],
        threads: vec![
            ThreadInfo {
                pid: 10,
                tid: 10,
                name: "main".into(),
                dropped: 0,
            },
            ThreadInfo {
                pid: 10,
                tid: 11,
                name: "encoder".into(),
                dropped: 0,
            },
        ],
        spans,
        processes: vec![ProcessStats {
            pid: 10,
            name: "host".into(),
            role: ProcessRole::Command,
            user_ns: end / 2,
            wall_ns: end,
            ..ProcessStats::default()
        }],
        telemetry: Telemetry {
            series: vec![SampleSeries {
                source: "nvml".into(),
                metric: "sm_clock".into(),
                entity: "0".into(),
                label: "Test GPU".into(),
                unit: "MHz".into(),
                kind: SeriesKind::Gauge,
            }],
            samples,
            ..Telemetry::default()
        },
        histograms: vec![Histogram {
            name: "@usecs".into(),
            unit: "us".into(),
            buckets: vec![
                Bucket {
                    lo: Some(0),
                    hi: Some(8),
                    count: 30,
                },
                Bucket {
                    lo: Some(8),
                    hi: Some(16),
                    count: 12,
                },
                Bucket {
                    lo: Some(16),
                    hi: None,
                    count: 1,
                },
            ],
        }],
        ..Run::default()
    }
}

#[test]
fn a_run_report_draws_every_plot_and_keeps_hostile_names_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hostile.framelab");
    framelab::store::write_run(&file, &run(2000, 1.0, 1)).unwrap();
    let page = dir.path().join("report.html");
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wrote the HTML report to"),
        "{}",
        stderr(&out)
    );
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("run.png"));
    assert_clean(&opened);
    let p = plots(&opened.dom);
    assert_eq!(p["frame-total"], (1, 2000), "{p:?}");
    assert_eq!(p["frame-interval"], (1, 1999));
    // Three stages on the percentile grid (0–99 and nine tail points).
    assert_eq!(p["stages"], (3, 109));
    assert_eq!(p["fps"].0, 1);
    assert_eq!(p["telemetry-0"], (1, 20));
    assert_eq!(p["histogram-0"], (1, 3));
    let gantts: Vec<_> = p.iter().filter(|(k, _)| k.starts_with("gantt-")).collect();
    assert_eq!(gantts.len(), 5);
    // Each worst frame: two threads, three spans.
    assert!(gantts.iter().all(|(_, v)| **v == (2, 3)), "{gantts:?}");

    // The hostile names are text of the page, never elements.
    let dom = &opened.dom;
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let img = regex::Regex::new(r"<img[\s>]").unwrap();
    assert!(!img.is_match(dom), "an <img> element was made");
    let scripts = dom.matches("<script").count();
    assert_eq!(scripts, 3, "only the page's own three script elements");
}

/// The label boxes (x, y, width, height in CSS px) the page drew on plot `plot`, and the
/// plot area's box.
fn label_boxes(dom: &str, plot: &str) -> (Vec<[f64; 4]>, [f64; 4]) {
    let attr = |name: &str| {
        let raw = plot_attr(dom, plot, name)
            .unwrap_or_else(|| panic!("plot {plot} has no {name}: its labels are not placed"));
        serde_json::from_str::<serde_json::Value>(&raw.replace("&quot;", "\""))
            .unwrap_or_else(|e| panic!("{name}={raw}: {e}"))
    };
    let four = |v: &serde_json::Value| -> [f64; 4] {
        let a: Vec<f64> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        [a[0], a[1], a[2], a[3]]
    };
    let labels = attr("data-labels")
        .as_array()
        .unwrap()
        .iter()
        .map(four)
        .collect();
    (labels, four(&attr("data-plot-box")))
}

/// Six FPS lows a few fps apart (here all equal: every interval is 10 ms) drew their labels
/// on top of each other. Each is now readable: no two label boxes overlap, and each is
/// inside the plot area (a label past its right edge is cut off).
#[test]
fn the_fps_low_labels_do_not_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steady.framelab");
    let mut steady = run(2000, 1.0, 3);
    for span in &mut steady.spans {
        let t = span.frame as i64 * 10 * MS;
        match span.stage {
            1 => span.dur_ns = 4 * MS,
            2 => span.start_ns = t + 2 * MS + 4 * MS + 200_000,
            _ => {}
        }
    }
    framelab::store::write_run(&file, &steady).unwrap();
    let page = dir.path().join("steady.html");
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let named = common::page_data(&page)["fps"]["named"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(named, 6, "p1, p0.1 and the four lows: all equal here");
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("fps-lows.png"));
    assert_clean(&opened);
    // The budget's label, on a line at the top of the frame-time plot, is inside it too.
    for plot in ["frame-total", "frame-interval"] {
        let (labels, area) = label_boxes(&opened.dom, plot);
        assert_eq!(labels.len(), 1, "{plot}: {labels:?}");
        let a = labels[0];
        assert!(
            a[1] >= area[1] - 0.5 && a[0] + a[2] <= area[0] + area[2] + 0.5,
            "{plot}: the budget label {a:?} is cut off by the plot area {area:?}"
        );
    }
    let (labels, area) = label_boxes(&opened.dom, "fps");
    assert_eq!(labels.len(), named, "one label per named low: {labels:?}");
    let overlap = |a: &[f64; 4], b: &[f64; 4]| {
        a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3]
    };
    for (i, a) in labels.iter().enumerate() {
        assert!(a[2] > 20.0 && a[3] > 8.0, "label {i} has no size: {a:?}");
        assert!(
            a[0] >= area[0] - 0.5
                && a[1] >= area[1] - 0.5
                && a[0] + a[2] <= area[0] + area[2] + 0.5
                && a[1] + a[3] <= area[1] + area[3] + 0.5,
            "label {i} {a:?} is cut off by the plot area {area:?}"
        );
        for (j, b) in labels.iter().enumerate().skip(i + 1) {
            assert!(!overlap(a, b), "labels {i} {a:?} and {j} {b:?} overlap");
        }
    }
}

#[test]
fn zooming_on_a_long_run_draws_every_frame_of_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.framelab");
    // 40 000 frames, 10 ms apart: the whole run is drawn as min/max pairs of 10 frames.
    framelab::store::write_run(&file, &run(40_000, 1.0, 2)).unwrap();
    let page = dir.path().join("long.html");
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(browser) = chromium() else { return };
    let attrs = |opened: &Opened, plot: &str| {
        let get = |name| plot_attr(&opened.dom, plot, name).and_then(|v| v.parse().ok());
        (get("data-bucket"), get("data-visible"))
    };

    let whole = open(browser, &page, &artifacts().join("long.png"));
    assert_clean(&whole);
    let p = plots(&whole.dom);
    let (_, points) = p["frame-total"];
    assert!(points <= 8000, "{points}");
    assert_eq!(attrs(&whole, "frame-total"), (Some(10), Some(points)));

    // Opened zoomed on 100–120 s (a link to a zoomed view, as a drag would set it): the
    // level of every frame is drawn there, frames 10 000–11 999 (their ends), where the
    // whole run's level has a pair for each 10 frames (about 400 points).
    let zoomed = open_at(
        browser,
        &page,
        "#t=100,120",
        &artifacts().join("long-zoomed.png"),
    );
    assert_clean(&zoomed);
    assert_eq!(
        plots(&zoomed.dom)["frame-total"],
        (1, points),
        "the data is the same"
    );
    for plot in ["frame-total", "frame-interval"] {
        assert_eq!(attrs(&zoomed, plot), (Some(1), Some(2000)), "{plot}");
    }
}

/// Whether `#rrggbb` is a green or a red: a hue within 40° of 120° or of 0°, saturated.
fn reads_as_a_verdict(colour: &str) -> bool {
    let channel = |i: usize| u8::from_str_radix(&colour[i..i + 2], 16).unwrap() as f64 / 255.0;
    let (r, g, b) = (channel(1), channel(3), channel(5));
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    if max - min < 0.25 {
        return false; // a grey
    }
    let hue = if max == r {
        60.0 * ((g - b) / (max - min)).rem_euclid(6.0)
    } else if max == g {
        60.0 * ((b - r) / (max - min) + 2.0)
    } else {
        60.0 * ((r - g) / (max - min) + 4.0)
    };
    (hue - 120.0).abs() < 40.0 || !(20.0..=340.0).contains(&hue)
}

#[test]
fn a_comparison_draws_a_forest_per_metric_and_the_stage_overlays() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.framelab"), dir.path().join("b.framelab"));
    // Six runs a side; encode p50 first, the primary metric, fps tested after it.
    for k in 0..6 {
        framelab::store::write_run(&a, &run(300, 1.0, k)).unwrap();
        framelab::store::write_run(&b, &run(300, 1.25, k + 10)).unwrap();
    }
    let page = dir.path().join("compare.html");
    let out = framelab()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--show", "encode.p50,fps", "--resamples", "200"])
        .args(["--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("compare.png"));
    assert_clean(&opened);
    let p = plots(&opened.dom);
    let forests: Vec<_> = p.iter().filter(|(k, _)| k.starts_with("forest-")).collect();
    let names: Vec<&str> = forests.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["forest-encode.p50", "forest-fps"], "{p:?}");
    // Each: the baseline's row and b's, with every run as a dot.
    for (name, (rows, dots)) in &forests {
        assert_eq!(*rows, 2, "{name}");
        assert_eq!(*dots, 12, "{name}");
    }
    assert!(
        p.contains_key("forest-encode.p99") || p.keys().any(|k| k.contains("encode")),
        "{p:?}"
    );
    // One overlay per stage, both variants on each.
    for stage in 0..3 {
        assert_eq!(p[&format!("stage-{stage}")], (2, 109), "{p:?}");
    }
    // b's encode is 25% slower: the verdicts say so, and nothing improved.
    assert!(
        opened
            .dom
            .contains("class=\"verdict-regressed\">regressed<"),
        "no regression shown"
    );
    assert!(!opened.dom.contains("class=\"verdict-improved\""));
    // A variant's colour says nothing about better or worse: its diamonds, intervals and
    // dots are neither green nor red, the colours of improved and regressed (b was drawn
    // green, as if it had improved, while its verdict said regressed).
    let drawn = regex::Regex::new(
        r#"(?:fill|stroke)="(#[0-9a-f]{6})"[^>]*(?:transform="rotate|class="run")"#,
    )
    .unwrap();
    let colours: Vec<&str> = drawn
        .captures_iter(&opened.dom)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert!(!colours.is_empty(), "no diamond or dot found");
    for colour in colours {
        assert!(!reads_as_a_verdict(colour), "a variant drawn in {colour}");
    }

    // An interval unbounded above (a ratio over a zero baseline: +∞, which JSON writes as
    // null) is drawn to the plot's edge, not a TypeError that stops the page.
    let html = std::fs::read_to_string(&page).unwrap();
    let unbounded = regex::Regex::new(r#""high":[-0-9.e+]+"#)
        .unwrap()
        .replace_all(&html, r#""high":null"#);
    assert_ne!(unbounded, html, "no interval in the page's data");
    let open_ended = dir.path().join("open-ended.html");
    std::fs::write(&open_ended, unbounded.as_bytes()).unwrap();
    assert_clean(&open(
        browser,
        &open_ended,
        &artifacts().join("compare-open-ended.png"),
    ));
}

/// One run a side: no interval (`low` and `high` null), no verdict; the page draws, and
/// its table (the text's) has the difference beside the change.
#[test]
fn a_comparison_of_one_run_a_side_draws_without_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.framelab"), dir.path().join("b.framelab"));
    framelab::store::write_run(&a, &run(300, 1.0, 1)).unwrap();
    framelab::store::write_run(&b, &run(300, 1.25, 11)).unwrap();
    let page = dir.path().join("one.html");
    let out = framelab()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--show", "encode.p50,fps", "--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let data = common::page_data(&page);
    let forest = &data["forests"][0]["rows"][1];
    assert!(
        forest["low"].is_null() && forest["ratio"].is_number(),
        "{forest}"
    );
    let blocks = data["blocks"].as_array().unwrap();
    let table = (blocks.iter().filter_map(|b| b.get("table")))
        .find(|t| {
            t["headers"]
                .as_array()
                .unwrap()
                .contains(&"difference".into())
        })
        .expect("the comparison's table");
    // Not judged: a change, no interval, p-value or verdict column.
    let headers = table["headers"].to_string();
    assert!(
        headers.contains("\"change\"") && !headers.contains("verdict"),
        "{headers}"
    );
    // Not judged: the method names no primary metric tested first.
    let paragraphs: Vec<&str> = blocks
        .iter()
        .filter_map(|b| b["paragraph"].as_str())
        .collect();
    assert!(
        paragraphs.iter().any(|p| p.starts_with("one run a side"))
            && !paragraphs.iter().any(|p| p.contains("primary")),
        "{paragraphs:?}"
    );
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("compare-one-run.png"));
    assert_clean(&opened);
    assert!(opened.dom.contains(">difference<"), "no difference column");
}

#[test]
fn run_html_is_written_beside_the_report_which_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let (out, _) = common::run_testprog(
        &dir,
        "spans",
        &["--fps", "100", "--html", page.to_str().unwrap(), "--open"],
        &["spans", "300"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = common::stdout(&out);
    assert!(
        text.contains(&format!("  html      {}", page.display())),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("\"schema\":\"framelab.html-run/1\""));
    // No desktop in a test: --open says it could not, and the run still succeeds.
    if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
        assert!(
            stderr(&out).contains("could not open it: no desktop"),
            "{}",
            stderr(&out)
        );
    }
    // In Markdown too.
    let (md, _) = common::run_testprog(
        &dir,
        "markdown",
        &["--format", "markdown", "--html", page.to_str().unwrap()],
        &["spans", "50"],
    );
    assert!(md.status.success(), "{}", stderr(&md));
    assert!(
        common::stdout(&md).contains("\n- **html** "),
        "{}",
        common::stdout(&md)
    );
}

#[test]
fn html_needs_one_run_and_a_writable_place() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.framelab");
    framelab::store::write_run(&file, &run(50, 1.0, 1)).unwrap();
    framelab::store::write_run(&file, &run(50, 1.0, 2)).unwrap();
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args(["--format", "html"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        common::error_line(&out).contains("--run-id"),
        "{}",
        stderr(&out)
    );
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args([
            "--run-id",
            "1",
            "--format",
            "html",
            "-o",
            "/nonexistent/dir/r.html",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    common::error_line(&out);
    // Never over the run file it reads.
    let out = framelab()
        .arg("report")
        .arg(&file)
        .args(["--run-id", "1", "--format", "html", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        common::error_line(&out).contains("refusing to write"),
        "{}",
        stderr(&out)
    );
    assert_eq!(common::load(&file).spans.len(), 150);
    // A page that cannot be written is refused before anything runs.
    let (out, path) = common::run_testprog(
        &dir,
        "never",
        &["--html", "/nonexistent/dir/run.html"],
        &["spans", "10"],
    );
    assert!(!out.status.success());
    common::error_line(&out);
    assert!(!path.exists(), "the command ran anyway");
}

/// `compare EXPERIMENT --format html` beside it (`.html`), 200 resamples.
fn compare_page(experiment: &Path) -> PathBuf {
    let page = experiment.with_extension("html");
    let out = framelab()
        .arg("compare")
        .arg(experiment)
        .args(["--resamples", "200", "--format", "html", "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    page
}

#[test]
fn a_sweep_is_drawn_as_lines_over_the_parameter() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.framelab");
    let prog = common::example("testprog");
    let out = framelab()
        .args(["bench", "-n", "2", "--param", "n=100,200,300", "-o"])
        .arg(&file)
        .args(["--", &prog, "spans", "{n}"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let page = compare_page(&file);
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("sweep.png"));
    assert_clean(&opened);
    let p = plots(&opened.dom);
    // One variant, one point per value of n.
    assert_eq!(p["sweep-0"], (1, 3), "{p:?}");
    // Each value of n a row of the forest, the baseline's (n=100) first: two runs each.
    assert_eq!(p["forest-fps"], (3, 6), "{p:?}");
    // A sweep of one command is named by its parameter.
    assert!(opened.dom.contains(">n [n=100]<"));
}

/// The stage distributions are drawn at the first group of parameter values, whichever run
/// came first: here each variant's first run (at us=300) fails, so the first measured run
/// is at us=600, whose spans the page drew under the label "us=600" before.
#[test]
fn stage_overlays_are_at_the_first_parameter_values_when_the_first_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sweep.framelab");
    let prog = common::example("testprog");
    let script = format!(
        "[ -e \"$FRAMELAB_VARIANT.failed\" ] || {{ touch \"$FRAMELAB_VARIANT.failed\"; exit 1; }}; {prog} work 50 {{us}}"
    );
    let out = framelab()
        .current_dir(dir.path())
        .args(["bench", "-n", "3", "--shell", "--param", "us=300,600"])
        .arg("--variant")
        .arg(format!("a={script}"))
        .arg("--variant")
        .arg(format!("b={script}"))
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "two runs fail: {}",
        stderr(&out)
    );
    let data = common::page_data(&compare_page(&file));
    let work = (data["stages"].as_array().unwrap().iter())
        .find(|s| s["stage"] == "work")
        .expect("a work stage overlay");
    assert_eq!(work["group"], "us=300", "{work}");
    for (variant, us) in work["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (&v[0], &v[1]))
    {
        // 300 µs of CPU a frame: the fastest span is nowhere near us=600's 600 µs.
        let min = us[0].as_f64().unwrap();
        assert!((300.0..450.0).contains(&min), "{variant}: min {min} µs");
    }
}

#[test]
fn history_draws_a_plot_per_metric_with_a_line_per_machine() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("h.sqlite");
    let prog = common::example("testprog");
    for (i, commit) in ["c1", "c2", "c3"].iter().enumerate() {
        let file = dir.path().join(format!("{commit}.framelab"));
        let frames = (20 * (i + 1)).to_string();
        let out = framelab()
            .args(["run", "-o"])
            .arg(&file)
            .args(["--", &prog, "spans", &frames])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        // The same run again as recorded on a second machine.
        let copy = dir.path().join(format!("{commit}-other.framelab"));
        std::fs::copy(&file, &copy).unwrap();
        rusqlite::Connection::open(&copy)
            .unwrap()
            .execute("UPDATE runs SET host_name = '<b>fleet-02</b>'", [])
            .unwrap();
        let out = framelab()
            .args([
                "history", "add", "--commit", commit, "--branch", "main", "--store",
            ])
            .arg(&store)
            .arg(&file)
            .arg(&copy)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let page = dir.path().join("history.html");
    let out = framelab()
        .args(["history", "show", "--metric", "fps", "--store"])
        .arg(&store)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(browser) = chromium() else { return };
    let opened = open(browser, &page, &artifacts().join("history.png"));
    assert_clean(&opened);
    let p = plots(&opened.dom);
    // Two machines (two lines, never one averaged), three commits.
    assert_eq!(p["history-0"], (2, 3), "{p:?}");
    assert!(
        opened.dom.contains("&lt;b&gt;fleet-02&lt;/b&gt;"),
        "a host name stays text"
    );
}
