//! Every output format states the unit of its values: the same number read from the text
//! table, the Markdown table, the CSV and the JSON of one real experiment (and one real
//! run's report, histogram and CSV export) agrees once each is converted by the unit its
//! own header or key names.

use crate::common;

use common::*;
use serde_json::Value;

/// Size of one `unit` in a base unit of its kind (s, bytes, fps, %, J).
fn scale(unit: &str) -> f64 {
    match unit {
        "s" | "seconds" => 1.0,
        "ms" => 1e-3,
        "µs" | "us" | "microseconds" => 1e-6,
        "ns" => 1e-9,
        "MiB" => 1024.0 * 1024.0,
        "bytes" | "B" => 1.0,
        "fps" | "%" | "percent" | "J" | "joules" => 1.0,
        other => panic!("unknown unit {other:?}"),
    }
}

/// Half a unit in the last printed digit of `printed` (a table's rounding).
fn rounding(printed: &str) -> f64 {
    let decimals = printed.split('.').nth(1).map_or(0, str::len);
    0.5 * 10f64.powi(-(decimals as i32))
}

/// `printed` (in `unit`) and `exact` (in `exact_unit`) are the same quantity.
fn same(what: &str, printed: &str, unit: &str, exact: f64, exact_unit: &str) {
    let shown: f64 = printed
        .parse()
        .unwrap_or_else(|_| panic!("{what}: {printed:?} is not a number"));
    let converted = exact * scale(exact_unit) / scale(unit);
    let allowed = rounding(printed) * 1.0001 + converted.abs() * 1e-9;
    assert!(
        (converted - shown).abs() <= allowed,
        "{what}: the table prints {printed} {unit}, the exact value {exact} {exact_unit} is {converted} {unit}"
    );
}

/// Markdown table rows (`| a | b |`) as cells, header and separator included.
fn markdown_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn compare_units_agree_across_text_markdown_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("units.framelab");
    let testprog = example("testprog");
    let out = framelab()
        .args(["bench", "-n", "2", "--resamples", "200", "--format", "json"])
        .arg("--variant")
        .arg(format!("light={testprog} work 40 200"))
        .arg("--variant")
        .arg(format!("heavy={testprog} work 40 400"))
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let compare = |format: &str| {
        let out = framelab()
            .arg("compare")
            .arg(&file)
            .args(["--resamples", "200", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let json: Value = serde_json::from_str(&compare("json")).unwrap();
    let markdown = compare("markdown");
    let text = compare("text");
    let csv_text = compare("csv");

    // label → (unit, light median cell) from the Markdown table.
    let table = markdown_rows(&markdown);
    let header = table
        .iter()
        .position(|r| r.first().map(String::as_str) == Some("metric"))
        .expect("a metric table");
    assert_eq!(table[header][1], "unit");
    let md_row = |label: &str| -> (String, String) {
        let row = table
            .iter()
            .skip(header + 2)
            .find(|r| r[0] == label)
            .unwrap_or_else(|| panic!("no Markdown row {label}: {markdown}"));
        let value = row[2].split(' ').next().unwrap().to_owned();
        (row[1].clone(), value)
    };

    let rows = json["groups"][0]["comparisons"][0]["rows"]
        .as_array()
        .unwrap();
    let mut csv = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = csv.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut seen = Vec::new();
    for record in csv.records() {
        let record = record.unwrap();
        let key = &record[col("metric")];
        let row = rows
            .iter()
            .find(|r| r["metric"] == key)
            .unwrap_or_else(|| panic!("CSV metric {key} is not in the JSON"));
        let label = row["label"].as_str().unwrap();
        let (unit, printed) = md_row(label);

        // The text table says the same as the Markdown one.
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{label}  ")))
            .unwrap_or_else(|| panic!("no text row {label}: {text}"));
        let rest: Vec<&str> = line.trim_start()[label.len()..]
            .split_whitespace()
            .collect();
        assert_eq!(
            (rest[0], rest[1]),
            (unit.as_str(), printed.as_str()),
            "{line}"
        );

        let csv_median: f64 = record[col("baseline_median")].parse().unwrap();
        let csv_unit = &record[col("unit")];
        same(&format!("CSV {key}"), &printed, &unit, csv_median, csv_unit);
        let json_median = row["baseline"]["median"].as_f64().unwrap();
        same(
            &format!("JSON {key}"),
            &printed,
            &unit,
            json_median,
            row["unit"].as_str().unwrap(),
        );
        seen.push(key.to_owned());
    }
    // The units most likely to go wrong were all checked.
    for key in [
        "peak_rss",
        "work.p50",
        "cpu_per_frame",
        "wall",
        "load",
        "fps",
    ] {
        assert!(
            seen.iter().any(|k| k == key),
            "{key} not compared: {seen:?}"
        );
    }
}

#[test]
fn report_hist_and_export_units_agree_with_the_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "units", &[], &["spans", "60"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = |format: &str| {
        let out = framelab()
            .arg("report")
            .arg(&path)
            .args(["--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let markdown = report("markdown");
    let text = report("text");
    let table = markdown_rows(&markdown);

    // The stage table: µs in text and Markdown, `_ns` keys in JSON.
    let stage_header = table
        .iter()
        .find(|r| r[0] == "stage (µs)")
        .expect("a stage table");
    assert_eq!(
        stage_header[1..7],
        ["min", "p50", "p95", "p99", "max", "mean"]
    );
    // With a scheduler timeline (root here), the on-CPU columns follow.
    let on_cpu = json["sched"].is_object();
    let expected: &[&str] = if on_cpu {
        &["on-CPU p50", "on-CPU p99"]
    } else {
        &[]
    };
    assert_eq!(stage_header[7..], *expected);
    let last = if on_cpu {
        "on-CPU p99   µs"
    } else {
        "mean   µs"
    };
    assert!(text.contains("stage ") && text.lines().any(|l| l.trim_end().ends_with(last)));
    for stage in json["stages"].as_array().unwrap() {
        let name = stage["name"].as_str().unwrap();
        let row = table.iter().find(|r| r[0] == name).unwrap();
        for (i, key) in ["min_ns", "p50_ns", "p95_ns", "p99_ns", "max_ns", "mean_ns"]
            .iter()
            .enumerate()
        {
            let exact = stage["dist"][key].as_f64().unwrap();
            same(&format!("{name} {key}"), &row[i + 1], "µs", exact, "ns");
        }
    }

    // The process table: seconds and MiB, against `_ns` and `_bytes`.
    let header = table.iter().find(|r| r[0] == "process").unwrap();
    assert_eq!(
        header[1..],
        ["role", "wall s", "user s", "sys s", "load %", "cores", "peak RSS"]
    );
    let process = &json["processes"][0];
    let row = table
        .iter()
        .find(|r| r[0] == process["name"].as_str().unwrap())
        .unwrap();
    assert_eq!(row[1], "command", "the launched command's role");
    same(
        "wall",
        &row[2],
        "s",
        process["wall_ns"].as_f64().unwrap(),
        "ns",
    );
    same(
        "user",
        &row[3],
        "s",
        process["user_ns"].as_f64().unwrap(),
        "ns",
    );
    let (rss, rss_unit) = row[7].split_once(' ').unwrap();
    same(
        "peak RSS",
        rss,
        rss_unit,
        process["peak_rss_bytes"].as_f64().unwrap(),
        "bytes",
    );

    // `hist --linear` prints the stage's min and max in the unit it names.
    let hist = framelab()
        .arg("hist")
        .arg(&path)
        .args(["--stage", "a", "--linear", "100us"])
        .output()
        .unwrap();
    assert!(hist.status.success(), "{}", stderr(&hist));
    let hist = stdout(&hist);
    let a = json["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "a")
        .unwrap();
    for (word, key) in [("Min = ", "min_ns"), ("Max = ", "max_ns")] {
        let at = hist
            .find(word)
            .unwrap_or_else(|| panic!("no {word}: {hist}"))
            + word.len();
        let mut parts = hist[at..].split([' ', ';', '\n']);
        let (value, unit) = (parts.next().unwrap(), parts.next().unwrap());
        same(
            &format!("hist {word}"),
            value,
            unit,
            a["dist"][key].as_f64().unwrap(),
            "ns",
        );
    }

    // The CSV export's `dur_ns` holds the exact spans the report's `_ns` figures come from.
    let exported = framelab()
        .arg("export")
        .arg(&path)
        .args(["--format", "csv", "-o", "-"])
        .output()
        .unwrap();
    let mut csv = csv::Reader::from_reader(&exported.stdout[..]);
    let headers = csv.headers().unwrap().clone();
    assert_eq!(&headers[6], "dur_ns");
    let durations: Vec<i64> = csv
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[1] == "a")
        .map(|r| r[6].parse().unwrap())
        .collect();
    for key in ["min_ns", "max_ns"] {
        let exact = a["dist"][key].as_f64().unwrap() as i64;
        assert!(
            durations.contains(&exact),
            "{key} {exact} not in the export"
        );
    }
}
