//! A server and a real load generator: three builds of a small HTTP server (Python's
//! standard library, tests/tools/http_cost_server.py) with a smaller cost per request
//! each, loaded by Debian's `ab`, whose printed "Requests per second" is the metric. The
//! step table must be ab's own numbers: its medians are the medians of what ab printed in
//! each run (read back from the output each run kept), its steps their ratios. The rate
//! from `--frames` (the whole run, the server's start-up included) is shown beside it
//! and said to include start-up.
//!
//! Needs `ab` and `python3` (tests/tools/install.sh, which .ci/run calls); without them
//! the test says so on the terminal and passes without running.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::*;
use serde_json::Value;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// Says why the test did not run where a person sees it: the harness captures print!,
/// not direct writes to stderr.
fn skip(why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED http_ab_e2e: {why}; run tests/tools/install.sh (apt-get install apache2-utils python3)"
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// What ab printed as its rate, read from the stdout a run kept.
fn ab_rate(stdout: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("Requests per second:"))
        .unwrap_or_else(|| panic!("no rate in: {text}"));
    line.split_whitespace().nth(3).unwrap().parse().unwrap()
}

#[test]
fn the_step_table_is_the_load_generators_own_numbers() {
    for program in ["ab", "python3"] {
        if !on_path(program) {
            return skip(&format!("{program} is not installed"));
        }
    }
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.framelab");
    let exported = dir.path().join("server.json");
    const REQUESTS: u32 = 300;
    let variant = |name: &str, cost_us: u32| {
        format!(
            "{name}={} {cost_us} {REQUESTS}",
            tools.join("serve_and_load.sh").display()
        )
    };
    let out = framelab()
        .args([
            "bench",
            "-n",
            "5",
            "--shell",
            "--frames",
            &REQUESTS.to_string(),
        ])
        .args([
            "--metric",
            r"req_s[req/s]:higher:stdout=Requests per second:\s+([\d.]+)",
        ])
        .args(["--variant", &variant("v1", 2400)])
        .args(["--variant", &variant("v2", 1600)])
        .args(["--variant", &variant("v3", 1000)])
        .args(["--show", "req_s,fps,cpu_per_frame"])
        .arg("--export-json")
        .arg(&exported)
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(c["headline_metric"], "req_s");

    // ab's own numbers, per variant, from the output each run kept.
    let experiment = framelab::store::load_experiment(&file).unwrap().unwrap();
    let mut by_variant: Vec<(String, Vec<f64>)> = Vec::new();
    for r in &experiment.runs {
        let run = framelab::store::load_run(&file, Some(r.run_id)).unwrap();
        let kept = run.outputs.iter().find(|o| o.stream == "stdout").unwrap();
        let rate = ab_rate(&kept.content);
        // The metric is exactly what ab printed.
        assert_eq!(run.metrics[0].value, Some(rate));
        match by_variant.iter_mut().find(|(v, _)| *v == r.variant) {
            Some((_, rates)) => rates.push(rate),
            None => by_variant.push((r.variant.clone(), vec![rate])),
        }
    }
    let medians: Vec<f64> = by_variant.into_iter().map(|(_, r)| median(r)).collect();
    let steps = c["groups"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    for (i, step) in steps.iter().enumerate() {
        assert!(
            close(step["median"].as_f64().unwrap(), medians[i]),
            "{step}"
        );
    }
    let ratio = |i: usize, key: &str| steps[i][key]["ratio"].as_f64().unwrap();
    assert!(close(ratio(1, "step"), medians[1] / medians[0]));
    assert!(close(ratio(2, "step"), medians[2] / medians[1]));
    assert!(close(ratio(2, "cumulative"), medians[2] / medians[0]));

    // The rate from --frames is there too, and said to include the server's start-up.
    let text = stdout(&out);
    assert!(text.contains("step by step: req_s (req/s)"), "{text}");
    assert!(
        text.contains("fps from --frames: includes start-up and shutdown"),
        "{text}"
    );

    // CPU per request from the rate: said to take rate × window as the requests done.
    let out = framelab()
        .arg("compare")
        .arg(&file)
        .args(["--show", "cpu_per.req_s"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("req_s (req/s) × each run's window is taken as the req done"),
        "{text}"
    );
}

/// A load generator's warmup phase left out: ab runs 2 s to warm the server, the script
/// prints `warmup done`, then ab runs the measured load. `:after=` takes the rate ab
/// printed for the second phase; without it, `:first` takes the warmup's.
#[test]
fn after_leaves_out_the_load_generators_warmup_phase() {
    for program in ["ab", "python3"] {
        if !on_path(program) {
            return skip(&format!("{program} is not installed"));
        }
    }
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/http_cost_server.py");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("warm.framelab");
    let port = dir.path().join("port");
    let script = format!(
        "python3 {} --cost-us 300 --port-file {port} & \
         until [ -s {port} ]; do sleep 0.01; done; url=http://127.0.0.1:$(cat {port})/; \
         ab -q -t 2 -c 2 $url; echo 'warmup done'; ab -q -n 300 -c 2 $url; kill $!",
        server.display(),
        port = port.display()
    );
    let rate = r"Requests per second:\s+([\d.]+)";
    let out = framelab()
        .args(["run", "--shell", "-o"])
        .arg(&file)
        .args([
            "--metric",
            &format!("warm[req/s]:higher:stdout:first={rate}"),
        ])
        .args([
            "--metric",
            &format!("req_s[req/s]:higher:stdout:first:after=^warmup done$={rate}"),
        ])
        .args([
            "--metric",
            &format!("never:stdout:after=^no such line$={rate}"),
        ])
        .arg("--")
        .arg(&script)
        .output()
        .unwrap();
    // The metric whose warmup end never came has no value: exit 3, said.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run = load(&file);
    let kept = run.outputs.iter().find(|o| o.stream == "stdout").unwrap();
    let text = String::from_utf8_lossy(&kept.content).into_owned();
    let (warmup, measured) = text.split_once("warmup done\n").expect("the marker");
    let (warm_rate, measured_rate) = (ab_rate(warmup.as_bytes()), ab_rate(measured.as_bytes()));
    // ab's own figures for each phase: the warmup ran 2 s, the measured phase 300 requests.
    assert!(
        measured.contains("Complete requests:      300"),
        "{measured}"
    );
    assert!(warmup.contains("Time taken for tests:   2."), "{warmup}");
    let value = |name: &str| run.metrics.iter().find(|m| m.name == name).unwrap();
    assert_eq!(value("req_s").value, Some(measured_rate));
    assert_eq!(value("warm").value, Some(warm_rate));
    let never = value("never");
    assert_eq!(never.value, None);
    assert!(
        never
            .failure
            .as_ref()
            .unwrap()
            .contains("matched the after= regex /^no such line$/"),
        "{never:?}"
    );
}
