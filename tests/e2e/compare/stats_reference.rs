//! framelab's statistics against values computed independently with scipy and numpy
//! (tests/data/stats_reference.py made tests/data/stats_reference.json).

use framelab::stats::holm;
use framelab::stats::mann_whitney::{mann_whitney, PMethod};
use framelab::stats::{bootstrap_ratio, BootstrapOptions, RunValue};
use serde_json::Value;

fn reference() -> Value {
    let text = include_str!("../../data/stats_reference.json");
    serde_json::from_str(text).expect("reference JSON parses")
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn close(a: f64, b: f64, relative: f64) -> bool {
    (a - b).abs() <= relative * b.abs().max(1e-300)
}

#[test]
fn mann_whitney_u_and_p_match_scipy() {
    for case in reference()["mann_whitney"].as_array().unwrap() {
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        let r = mann_whitney(&x, &y).unwrap();
        let method = match r.method {
            PMethod::Exact => "exact",
            PMethod::Normal => "asymptotic",
        };
        assert_eq!(method, case["method"].as_str().unwrap(), "{case}");
        assert_eq!(r.u, case["u"].as_f64().unwrap(), "U of {case}");
        let p = case["p"].as_f64().unwrap();
        assert!(close(r.p_value, p, 1e-9), "p {} vs scipy {p}", r.p_value);
    }
}

#[test]
fn holm_matches_the_reference() {
    for case in reference()["holm"].as_array().unwrap() {
        let adjusted = holm(&floats(&case["p"]));
        for (a, e) in adjusted.iter().zip(floats(&case["adjusted"])) {
            assert!(close(*a, e, 1e-12), "{adjusted:?} vs {e}");
        }
    }
}

/// The interval's ends agree within a small share of its width: both are Monte Carlo
/// estimates (here 10,000 resamples, the reference 200,000 or 20,000).
fn assert_interval_matches(case: &Value, low: f64, high: f64, ratio: f64, share_of_width: f64) {
    let (rl, rh) = (
        case["low"].as_f64().unwrap(),
        case["high"].as_f64().unwrap(),
    );
    assert!(close(ratio, case["ratio"].as_f64().unwrap(), 1e-12));
    let width = rh - rl;
    assert!(
        (low - rl).abs() <= share_of_width * width && (high - rh).abs() <= share_of_width * width,
        "[{low}, {high}] vs reference [{rl}, {rh}]"
    );
}

#[test]
fn one_level_bootstrap_matches_scipy() {
    for case in reference()["bootstrap_one_level"].as_array().unwrap() {
        let side = |key: &str| -> Vec<RunValue> {
            floats(&case[key])
                .into_iter()
                .map(RunValue::Whole)
                .collect()
        };
        let r = bootstrap_ratio(
            &side("baseline"),
            &side("variant"),
            &BootstrapOptions::default(),
        )
        .unwrap();
        assert_interval_matches(case, r.low, r.high, r.ratio, 0.03);
    }
}

fn percentiles(runs: &[Vec<i64>], p: f64) -> Vec<RunValue<'_>> {
    runs.iter()
        .map(|s| RunValue::Percentile { sorted: s, p })
        .collect()
}

#[test]
fn two_level_bootstrap_matches_naive_frame_resampling() {
    for case in reference()["bootstrap_two_level"].as_array().unwrap() {
        let p = case["p"].as_f64().unwrap();
        let runs = |key: &str| -> Vec<Vec<i64>> {
            case[key].as_array().unwrap().iter().map(ints).collect()
        };
        let (base, var) = (runs("baseline"), runs("variant"));
        let r = bootstrap_ratio(
            &percentiles(&base, p),
            &percentiles(&var, p),
            &BootstrapOptions::default(),
        )
        .unwrap();
        assert_interval_matches(case, r.low, r.high, r.ratio, 0.03);
    }
}
