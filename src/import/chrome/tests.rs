use super::*;
use crate::import::decimal::DecimalError;
use crate::import::keys::key_of;
use crate::import::test_support::Importer;
use crate::import::{Format, ImportOptions};
use crate::model::Run;

const IMPORT: Importer = Importer(Format::Chrome);

fn skip_bad() -> ImportOptions {
    ImportOptions {
        skip_bad: true,
        ..ImportOptions::default()
    }
}

/// (frame, stage, pid, tid, start_ns, dur_ns) in the order they were made.
fn spans(run: &Run) -> Vec<(u64, &str, u32, u32, i64, i64)> {
    run.spans
        .iter()
        .map(|s| {
            let t = &run.threads[s.thread as usize];
            let stage = run.stages[usize::from(s.stage)].as_str();
            (s.frame, stage, t.pid, t.tid, s.start_ns, s.dur_ns)
        })
        .collect()
}

/// The notes but the marker of a trace without frames (`frames_are_undefined_...` tests it).
fn notes(run: &Run) -> Vec<String> {
    let mut notes = run.import.as_ref().unwrap().notes.clone();
    notes.retain(|n| n != crate::model::ImportInfo::NO_FRAMES);
    notes
}

#[test]
fn frames_are_undefined_without_a_frame_rule() {
    let json = r#"[{"ph":"X","name":"a","ts":1,"dur":1,"args":{"f":1}}]"#;
    let info = |run: Run| run.import.unwrap();
    assert!(info(IMPORT.result(json).unwrap()).frames_undefined());
    let with_arg = ImportOptions {
        frame_arg: Some("f".into()),
        ..ImportOptions::default()
    };
    assert!(!info(IMPORT.run_with(json, with_arg)).frames_undefined());
}

#[test]
fn microseconds_become_exact_nanoseconds_within_the_time_range() {
    assert_eq!(micros_to_ns("1234.5675"), Ok(1_234_568));
    assert_eq!(micros_to_ns("\"12.5\""), Ok(12_500));
    assert_eq!(micros_to_ns("2305843009213693.952"), Ok(1 << 61));
    assert!(micros_to_ns("2305843009213693.953")
        .unwrap_err()
        .contains("too large"));
    assert!(micros_to_ns("1e999999").unwrap_err().contains("too large"));
    assert!(micros_to_ns(".5").unwrap_err().contains("not a number"));
}

#[test]
fn counter_values_are_thousandths_and_huge_ones_integers() {
    assert_eq!(counter_milli("12.3456"), Ok(12_346));
    assert_eq!(counter_milli("1e17"), Ok(100_000_000_000_000_000_000));
    assert_eq!(counter_milli("\"12\""), Err(DecimalError::NotANumber));
    assert_eq!(counter_milli("1e19"), Err(DecimalError::OutOfRange));
}

#[test]
fn complete_slices_in_array_form() {
    let run = IMPORT
        .result(
            r#"[
        {"ph":"X","name":"capture","cat":"a","pid":1,"tid":2,"ts":1000.5,"dur":250.25},
        {"ph":"X","name":"encode","pid":1,"tid":3,"ts":1.0005e3,"dur":0.001},
        {"ph":"X","name":"capture","pid":1,"tid":2,"ts":"1300","dur":1}
        ]"#,
        )
        .unwrap();
    // The earliest ts (1000.5 µs) is the origin.
    assert_eq!(
        spans(&run),
        [
            (0, "capture", 1, 2, 0, 250_250),
            (1, "encode", 1, 3, 0, 1),
            (2, "capture", 1, 2, 299_500, 1_000),
        ]
    );
    assert_eq!(run.meta.origin_mono_ns, 1_000_500);
    assert!(notes(&run).is_empty());
}

#[test]
fn object_form_with_events_anywhere_and_names() {
    let run = IMPORT
        .result(
            r#"{"displayTimeUnit":"ns","metadata":{"x":[1,{"traceEvents":2}]},
        "traceEvents":[
          {"ph":"M","name":"process_name","pid":7,"args":{"name":"game"}},
          {"ph":"M","name":"thread_name","pid":7,"tid":8,"args":{"name":"render"}},
          {"ph":"M","name":"process_sort_index","pid":7,"args":{"sort_index":1}},
          {"ph":"X","name":"draw","pid":7,"tid":8,"ts":10,"dur":2},
          {"ph":"X","name":"sim","pid":7,"tid":9,"ts":11,"dur":3}
        ],
        "otherData":{"version":"x"}}"#,
        )
        .unwrap();
    assert_eq!(
        spans(&run),
        [(0, "draw", 7, 8, 0, 2_000), (1, "sim", 7, 9, 1_000, 3_000)]
    );
    let names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["render", "game"],
        "unnamed threads take the process name"
    );
}

#[test]
fn begin_end_pairs_per_thread_and_what_does_not_pair() {
    let run = IMPORT
        .result(
            r#"[
        {"ph":"B","name":"outer","pid":1,"tid":1,"ts":0},
        {"ph":"B","name":"inner","pid":1,"tid":1,"ts":1},
        {"ph":"B","name":"other thread","pid":1,"tid":2,"ts":1.5},
        {"ph":"E","pid":1,"tid":1,"ts":2},
        {"ph":"E","name":"not outer","pid":1,"tid":1,"ts":5},
        {"ph":"E","pid":1,"tid":1,"ts":6},
        {"ph":"E","pid":2,"tid":1,"ts":6},
        {"ph":"B","name":"never ends","pid":1,"tid":1,"ts":7}
        ]"#,
        )
        .unwrap();
    assert_eq!(
        spans(&run),
        [
            (0, "inner", 1, 1, 1_000, 1_000),
            (1, "outer", 1, 1, 0, 5_000)
        ]
    );
    assert_eq!(
        notes(&run),
        [
            "2 slices begun (B) were never ended (E): left out",
            "2 slice ends (E) had no open begin (B) on their thread: left out",
            "1 slice ends (E) named another slice than the one they closed (closed anyway)",
        ]
    );
}

#[test]
fn async_slices_match_on_category_id_and_name() {
    let run = IMPORT
        .result(
            r#"[
        {"ph":"b","name":"load","cat":"net","id":"0x1","pid":1,"tid":1,"ts":0},
        {"ph":"b","name":"load","cat":"net","id":"0x2","pid":1,"tid":1,"ts":1},
        {"ph":"b","name":"load","cat":"net","id2":{"local":"0x1"},"pid":1,"tid":4,"ts":2},
        {"ph":"e","name":"load","cat":"net","id":"0x2","pid":1,"tid":9,"ts":4},
        {"ph":"e","name":"load","cat":"net","id":1,"pid":1,"tid":9,"ts":5},
        {"ph":"e","name":"load","cat":"other","id":"0x1","pid":1,"tid":9,"ts":6},
        {"ph":"S","name":"legacy","cat":"x","id":7,"pid":1,"tid":1,"ts":3},
        {"ph":"F","name":"legacy","cat":"x","id":7,"pid":1,"tid":1,"ts":8.25}
        ]"#,
        )
        .unwrap();
    // Ends match by value (`"0x1"` and `1` are the same id); the span is on the begin's
    // thread. The never-ended begin at 0 is not a span: the origin is the first span's.
    assert_eq!(
        spans(&run),
        [
            (0, "load", 1, 1, 0, 3_000),
            (1, "load", 1, 4, 1_000, 3_000),
            (2, "legacy", 1, 1, 2_000, 5_250),
        ]
    );
    assert_eq!(
        notes(&run),
        [
            "1 async slices begun (b/S) were never ended (e/F): left out",
            "1 async slice ends (e/F) matched no begin (same pid, cat, id and name): left out",
        ]
    );
}

#[test]
fn instants_keyed_and_the_launch_marker_is_the_origin() {
    let opts = ImportOptions {
        key: Some("req".into()),
        ..ImportOptions::default()
    };
    let run = IMPORT
        .result_with(
            r#"[
        {"ph":"i","name":"send","pid":1,"tid":1,"ts":100,"args":{"req":"0x10"}},
        {"ph":"X","name":"work","pid":1,"tid":1,"ts":101,"dur":1},
        {"ph":"I","name":"recv","pid":1,"tid":1,"ts":103,"id":5},
        {"ph":"n","name":"mark","pid":1,"tid":2,"ts":104,"id2":{"local":3}},
        {"ph":"i","name":"bare","pid":1,"tid":2,"ts":105},
        {"ph":"i","name":"framelab:launch","pid":0,"tid":0,"ts":99.999}
        ]"#,
            opts,
        )
        .unwrap();
    let events: Vec<(&str, u64, i64)> = run
        .events
        .iter()
        .map(|e| {
            (
                run.event_names[usize::from(e.event)].as_str(),
                e.key,
                e.t_ns,
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("send", 16, 1),
            ("recv", 5, 3_001),
            ("mark", 3, 4_001),
            ("bare", 0, 5_001)
        ]
    );
    assert_eq!(spans(&run), [(0, "work", 1, 1, 1_001, 1_000)]);
    assert_eq!(run.threads.len(), 2, "the marker makes no thread");
}

#[test]
fn counters_become_series_and_fractions_milli_units() {
    let run = IMPORT
        .result(
            r#"[
        {"ph":"C","name":"queue","pid":3,"tid":1,"ts":0,"args":{"value":2}},
        {"ph":"C","name":"queue","pid":3,"tid":1,"ts":1,"args":{"value":5}},
        {"ph":"C","name":"mem","pid":3,"ts":0,"args":{"heap":1.5,"stack":"big"}},
        {"ph":"C","name":"mem","pid":3,"ts":2,"args":{"heap":2}}
        ]"#,
        )
        .unwrap();
    let series = &run.telemetry.series;
    let described: Vec<(&str, &str, &str, &str)> = series
        .iter()
        .map(|s| {
            (
                s.source.as_str(),
                s.metric.as_str(),
                s.entity.as_str(),
                s.unit.as_str(),
            )
        })
        .collect();
    assert_eq!(
        described,
        [
            ("chrome", "queue", "3", ""),
            ("chrome", "mem.heap", "3", "milli")
        ]
    );
    let samples: Vec<(u32, i64, i64)> = (run.telemetry.samples.iter())
        .map(|s| (s.series, s.t_ns, s.value))
        .collect();
    assert_eq!(
        samples,
        [(0, 0, 2), (0, 1_000, 5), (1, 0, 1_500), (1, 2_000, 2_000)]
    );
    assert_eq!(
        notes(&run),
        [
            "1 counter series had fractional values: stored × 1000, unit \"milli\"",
            "1 counter values (C) were not numbers: left out",
        ]
    );
}

#[test]
fn flows_and_other_phases_are_counted_in_one_note() {
    let run = IMPORT
        .result(
            r#"[{"ph":"s","id":1,"ts":0},{"ph":"f","id":1,"ts":1},{"ph":"t","ts":1},
        {"ph":"P","ts":1},{"ph":"O","ts":1},{"ph":"N","ts":1},{"ph":"D","ts":1},
        {"ph":"R","name":"navigationStart","ts":1},{"ph":"c","ts":1},{"ph":"s","id":2,"ts":3}]"#,
        )
        .unwrap();
    assert!(run.spans.is_empty());
    assert_eq!(
        notes(&run),
        [
            "10 events of phases framelab does not import (flows, samples, objects, marks...) \
          ignored: \"D\" ×1, \"N\" ×1, \"O\" ×1, \"P\" ×1, \"R\" ×1, \"c\" ×1, \"f\" ×1, \
          \"s\" ×2, \"t\" ×1"
        ]
    );
}

#[test]
fn a_missing_closing_bracket_is_accepted_and_noted() {
    for tail in ["", ",", ",\n", "\n"] {
        let json = format!(
            "[{{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}},\n\
             {{\"ph\":\"X\",\"name\":\"b\",\"ts\":2,\"dur\":1}}{tail}"
        );
        let run = IMPORT.result(&json).unwrap();
        assert_eq!(run.spans.len(), 2, "{tail:?}");
        assert_eq!(
            notes(&run),
            [
                "the events array has no closing ']' (Chrome leaves it off a trace cut short); \
              every complete event was read"
            ]
        );
    }
    // A trailing comma before the bracket is forgiven too.
    assert_eq!(
        IMPORT
            .result(r#"[{"ph":"X","ts":1,"dur":1},]"#)
            .unwrap()
            .spans
            .len(),
        1
    );
}

#[test]
fn a_file_cut_inside_an_event_is_an_error_at_its_byte() {
    let json = r#"[{"ph":"X","name":"a","ts":1,"dur":1},
{"ph":"X","name":"b","ts":2,"du"#;
    let err = IMPORT.result(json).unwrap_err();
    assert_eq!(err.at, Location::Byte(39));
    assert!(err.message.contains("ends inside this event"), "{err}");
    let run = IMPORT.result_with(json, skip_bad()).unwrap();
    assert_eq!(run.spans.len(), 1);
    assert_eq!(run.import.unwrap().skipped, 1);
    // The object form cut short, inside and after the events.
    let err = IMPORT
        .result(r#"{"traceEvents":[{"ph":"X","ts":1,"dur":1}"#)
        .unwrap();
    assert_eq!(err.spans.len(), 1);
    let err = IMPORT.result(r#"{"traceEvents":[],"#).unwrap_err();
    assert_eq!(err.at, Location::Byte(18));
}

#[test]
fn bad_events_name_their_byte_and_skip_bad_counts_them() {
    let cases = [
        (r#"[{"ph":"X","ts":-1,"dur":1}]"#, 1, "negative \"ts\" (-1)"),
        (
            r#"[{"ph":"X","ts":1,"dur":-0.5}]"#,
            1,
            "negative \"dur\" (-0.5)",
        ),
        (r#"[{"ph":"X","ts":1}]"#, 1, "without \"dur\""),
        (
            r#"[{"ph":"X","ts":"soon","dur":1}]"#,
            1,
            "\"ts\" is not a number",
        ),
        (r#"[{"ts":1}]"#, 1, "without \"ph\""),
        (
            r#"[{"ph":5,"ts":1}]"#,
            8,
            "bad trace event: invalid type: integer `5`",
        ),
        (r#"[ 17 ]"#, 4, "expected a trace event object"),
        (r#"[{"ph":"X","ts":1,"ts":2}]"#, 22, "duplicate field `ts`"),
        (
            r#"[{"ph":"E","ts":5,"pid":1},{"ph":"B","ts":6},{"ph":"E","ts":5}]"#,
            45,
            "comes before its begin",
        ),
    ];
    for (json, at, wanted) in cases {
        let err = IMPORT.result(json).unwrap_err();
        assert_eq!(err.at, Location::Byte(at), "{json}: {err}");
        assert!(err.message.contains(wanted), "{json}: {err}");
        let info = IMPORT
            .result_with(json, skip_bad())
            .unwrap()
            .import
            .unwrap();
        assert_eq!(info.skipped, 1, "{json}");
    }
}

#[test]
fn garbage_and_empty_files_are_errors() {
    for (input, at) in [
        ("", Location::Whole),
        ("  \n ", Location::Whole),
        ("hello", Location::Byte(0)),
        ("\u{feff}hello", Location::Byte(3)),
        ("{\"a\":1}", Location::Whole),
        ("{\"traceEvents\":{}}", Location::Byte(15)),
        ("[{\"ph\":\"i\",\"ts\":1} {}]", Location::Byte(19)),
        ("[{\"ph\":\"X\",]", Location::Byte(12)),
        ("[{\"ph\":\"X\",\"name\":\"\u{1}\"}]", Location::Byte(20)),
        ("{\"traceEvents\":[]]", Location::Byte(17)),
    ] {
        let err = IMPORT.result(input).unwrap_err();
        assert_eq!(err.at, at, "{input:?}: {err}");
    }
    assert!(IMPORT.result("\u{feff}[]").unwrap().spans.is_empty());
    let run = IMPORT.result("[] trailing").unwrap();
    assert_eq!(
        notes(&run),
        ["8 bytes after the end of the trace (byte 3) were ignored"]
    );
}

#[test]
fn frame_ids_from_an_argument_or_the_name() {
    let json = r#"[
        {"ph":"X","name":"decode #12","pid":1,"tid":1,"ts":0,"dur":1,"args":{"f":12}},
        {"ph":"X","name":"present #12","pid":1,"tid":1,"ts":1,"dur":1,"args":{"f":"12"}},
        {"ph":"B","name":"decode #13","pid":1,"tid":1,"ts":2},
        {"ph":"E","pid":1,"tid":1,"ts":3,"args":{"f":13}},
        {"ph":"X","name":"idle","pid":1,"tid":1,"ts":4,"dur":1}
    ]"#;
    let by_arg = IMPORT
        .result_with(
            json,
            ImportOptions {
                frame_arg: Some("f".into()),
                ..ImportOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        spans(&by_arg),
        [
            (12, "decode #12", 1, 1, 0, 1_000),
            (12, "present #12", 1, 1, 1_000, 1_000),
            (13, "decode #13", 1, 1, 2_000, 1_000),
        ]
    );
    assert_eq!(
        notes(&by_arg),
        ["1 slices had no args.f frame id: left out"]
    );
    let by_name = IMPORT
        .result_with(
            json,
            ImportOptions {
                frame_regex: Some(regex::Regex::new(r"#(\d+)").unwrap()),
                ..ImportOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        spans(&by_name),
        [
            (12, "decode", 1, 1, 0, 1_000),
            (12, "present", 1, 1, 1_000, 1_000),
            (13, "decode", 1, 1, 2_000, 1_000),
        ]
    );
    assert_eq!(
        notes(&by_name),
        ["1 slices had names --frame-regex does not match: left out"]
    );
}

#[test]
fn a_framelab_marker_after_the_events_still_counts() {
    let json = r#"{"traceEvents":[
        {"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1,"args":{"frame":40}},
        {"ph":"i","name":"commit","pid":1,"tid":1,"ts":6,"args":{"key":9}},
        {"ph":"i","name":"framelab:launch","ts":0}
    ],"otherData":{"framelab":{"version":"0"}}}"#;
    let run = IMPORT.result(json).unwrap();
    assert_eq!(spans(&run), [(40, "a", 1, 1, 5_000, 1_000)]);
    assert_eq!(run.events[0].key, 9);
    // Without the marker, the same file is anyone's trace.
    let plain = IMPORT
        .result(json.replace("framelab\":{", "other\":{"))
        .unwrap();
    assert_eq!(spans(&plain), [(0, "a", 1, 1, 5_000, 1_000)]);
    assert_eq!(plain.events[0].key, 0);
}

#[test]
fn process_filter_keeps_one_process_named_at_the_end() {
    let json = r#"[
        {"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},
        {"ph":"X","name":"b","pid":2,"tid":1,"ts":0,"dur":1},
        {"ph":"X","name":"c","pid":"3","tid":1,"ts":0,"dur":1},
        {"ph":"M","name":"process_name","pid":1,"args":{"name":"game"}},
        {"ph":"M","name":"process_name","pid":2,"args":{"name":"compositor"}},
        {"ph":"M","name":"process_name","pid":3,"args":{"name":"game"}}
    ]"#;
    let opts = |name: &str| ImportOptions {
        process: Some(name.into()),
        ..ImportOptions::default()
    };
    let run = IMPORT.result_with(json, opts("game")).unwrap();
    let kept: Vec<&str> = spans(&run).iter().map(|s| s.1).collect();
    assert_eq!(kept, ["a", "c"]);
    assert_eq!(
        notes(&run),
        ["1 events of other processes than --process left out"]
    );
    let err = IMPORT.result_with(json, opts("editor")).unwrap_err();
    assert_eq!(
        err.message,
        "no process named \"editor\" in this trace (--process); its processes: compositor, game"
    );
}

#[test]
fn string_and_huge_ids_fold_to_32_bits() {
    let run = IMPORT
        .result(
            r#"[{"ph":"X","name":"a","pid":"renderer","tid":-1,"ts":0,"dur":1},
        {"ph":"X","name":"a","pid":4294967296,"tid":7,"ts":0,"dur":1}]"#,
        )
        .unwrap();
    let t = &run.threads;
    assert_eq!(t[0].pid, {
        let k = key_of("renderer");
        (k ^ (k >> 32)) as u32
    });
    assert_eq!(t[0].tid, u32::MAX);
    assert_eq!((t[1].pid, t[1].tid), (1, 7));
}

#[test]
fn escaped_names_are_unescaped() {
    let run = IMPORT
        .result(r#"[{"ph":"X","name":"a\"b\u00e9","ts":0,"dur":1}]"#)
        .unwrap();
    assert_eq!(run.stages, ["a\"bé"]);
}
