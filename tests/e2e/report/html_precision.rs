//! The HTML pages' distribution curves and worst-frame spans are exact to the nanosecond,
//! as `benches/validate/check_html.py` checks against numpy: a 1234 ns stage was drawn as
//! 1.23 µs (and a 23 ns one as 0.02, 13% off the text report). Through the real binary:
//! an import, `report --format html`, and `compare --format html` of two files of two runs.

use crate::common;

use common::{framelab, page_data, stderr};
use std::path::Path;

fn import_twice(dir: &Path, csv: &Path, name: &str) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.framelab"));
    for _ in 0..2 {
        let o = framelab()
            .args(["import", "--fps", "60", "-o"])
            .arg(&out)
            .arg(csv)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    out
}

#[test]
fn short_stages_are_drawn_to_the_nanosecond() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("spans.csv");
    let mut text = String::from("frame,stage,start_ns,dur_ns\n");
    for i in 0..100u64 {
        text += &format!("{i},work,{},1234\n", i * 10_000_000);
    }
    std::fs::write(&csv, text).unwrap();
    let a = import_twice(dir.path(), &csv, "a");
    let b = import_twice(dir.path(), &csv, "b");

    let page = dir.path().join("run.html");
    let o = framelab()
        .args(["report", "--run-id", "1", "--format", "html", "-o"])
        .arg(&page)
        .arg(&a)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let d = page_data(&page);
    let curve = &d["stages"]["series"][0]["us"];
    assert_eq!(d["stages"]["series"][0]["name"], "work");
    assert!(
        curve
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.as_f64() == Some(1.234)),
        "{curve}"
    );
    assert_eq!(d["gantt"][0]["spans"][0][3].as_f64(), Some(1.234));

    let page = dir.path().join("compare.html");
    let o = framelab()
        .args(["compare", "--format", "html", "-o"])
        .arg(&page)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let d = page_data(&page);
    let overlay = &d["stages"][0];
    assert_eq!(overlay["stage"], "work");
    for variant in overlay["variants"].as_array().unwrap() {
        let values = variant[1].as_array().unwrap();
        assert!(
            values.iter().all(|v| v.as_f64() == Some(1.234)),
            "{variant}"
        );
    }
}
