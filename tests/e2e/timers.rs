//! `framelab timers` end to end: what it measures and how it refuses bad input. Nothing here
//! depends on how precisely this machine waits: only counts, order and shape are checked.

use crate::common;

use common::*;

#[test]
fn a_short_run_measures_every_strategy_and_picks_one() {
    let out = run(&[
        "timers",
        "--interval",
        "2ms",
        "--duration",
        "20ms",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The plan is said before measuring, on stderr (stdout stays a JSON document).
    let plan = stderr(&out);
    assert!(
        plan.contains("framelab timers: 1 interval × ") && plan.contains(" = 0."),
        "{plan}"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["schema"], "framelab.timers/1");
    let fifo = v["fifo"]["permitted"].as_bool().unwrap();
    let rows = v["intervals"][0]["rows"].as_array().unwrap();
    assert_eq!(v["intervals"][0]["interval_ns"], 2_000_000);
    // 6 sleeping strategies × 2 slacks + spin, and one more per strategy with SCHED_FIFO.
    let expected = if fifo { 20 } else { 13 };
    assert_eq!(v["cells"], expected);
    assert_eq!(
        rows.len() + v["notes"].as_array().unwrap().len(),
        expected,
        "every cell is a row or a note"
    );
    for strategy in [
        "nanosleep",
        "clock_nanosleep",
        "timerfd",
        "epoll_wait",
        "condvar",
        "spin",
        "hybrid",
    ] {
        assert!(
            rows.iter().any(|r| r["strategy"] == strategy),
            "{strategy} measured"
        );
    }
    for r in rows {
        // A wait never returns before its deadline, so at most 20 ms / 2 ms of them fit.
        let waits = r["waits"].as_u64().unwrap();
        assert!((1..=10).contains(&waits), "{r}");
        let q = |k: &str| r[k].as_f64().unwrap();
        assert!(q("p50_ns") >= 0.0, "{r}");
        assert!(
            q("p50_ns") <= q("p99_ns") && q("p99_ns") <= q("p99_9_ns"),
            "{r}"
        );
        assert!(q("p99_9_ns") <= q("max_ns"), "{r}");
        assert!(q("cpu_per_wait_ns") >= 0.0, "{r}");
    }
    let pick = v["intervals"][0]["pick"]["row"].as_u64().unwrap() as usize;
    assert!(pick < rows.len());
    // Ten waits a cell at most: every p99 is an estimate, and the pick says so.
    assert_eq!(v["intervals"][0]["pick"]["provisional"], true);
}

/// A cell of 20 ms at 2 ms holds ten waits at most: far fewer than the 100 a p99 needs, so
/// every p99 is starred and the pick says it is provisional, and what duration makes it firm
/// (whatever this machine's lateness: only the wait count decides it).
#[test]
fn a_pick_on_starred_p99s_says_it_is_provisional() {
    let out = run(&["timers", "--interval", "2ms", "--duration", "20ms"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let picks: Vec<&str> = text.lines().filter(|l| l.contains("→ ")).collect();
    assert_eq!(picks.len(), 1, "{text}");
    assert!(picks[0].contains("→ provisional: "), "{text}");
    assert!(
        picks[0].contains("rest on fewer than 100 waits")
            && picks[0].ends_with("give --duration 300ms or more for a firm pick"),
        "{text}"
    );
}

#[test]
fn the_text_table_ends_each_interval_with_a_pick() {
    let out = run(&[
        "timers",
        "--interval",
        "1ms,2ms",
        "--duration",
        "20ms",
        "--need",
        "1ms",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("framelab timers · "), "{text}");
    assert!(text.contains("every 1000 µs (1000.00 fps)"), "{text}");
    assert!(text.contains("every 2000 µs (500.00 fps)"), "{text}");
    let picks = text
        .lines()
        .filter(|l| l.contains("cheapest with p99 ≤ 1000 µs") || l.contains("none reaches"))
        .count();
    assert_eq!(picks, 2, "{text}");
    let markdown = stdout(&run(&[
        "timers",
        "--interval",
        "1ms",
        "--duration",
        "10ms",
        "--format",
        "markdown",
    ]));
    assert!(markdown.starts_with("### framelab timers"), "{markdown}");
    assert!(
        markdown.contains("| strategy | slack | sched |"),
        "{markdown}"
    );
}

fn refused(args: &[&str], code: i32, needle: &str) {
    let out = run(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains(needle), "{args:?}: '{needle}' not in: {text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(stdout(&out).is_empty(), "nothing measured");
}

#[test]
fn bad_intervals_and_needs_are_one_clear_line() {
    refused(&["timers", "--interval", "0ms"], 2, "'0ms' is zero");
    refused(
        &["timers", "--interval", "-5ms"],
        2,
        "'-5ms' is not a duration",
    );
    refused(
        &["timers", "--interval", "1ms,soon"],
        2,
        "'soon' is not a duration",
    );
    refused(&["timers", "--interval", "5"], 2, "has no unit");
    refused(&["timers", "--need", "fast"], 2, "'fast' is not a duration");
    refused(&["timers", "--need", "0us"], 2, "is zero");
    refused(&["timers", "--duration", "0s"], 2, "is zero");
    // Values each fine alone but not together: usage errors too (the README's exit 2).
    refused(
        &["timers", "--interval", "1ms,1000us"],
        2,
        "--interval 1ms is given twice",
    );
    let out = run(&["timers", "--interval", "5ms", "--duration", "20ms"]);
    assert_eq!(out.status.code(), Some(2));
    let line = error_line(&out);
    assert!(line.contains("fewer than 10 waits"), "{line}");
    assert!(line.contains("give --duration 50ms or more"), "{line}");
}
