//! The analysis of a 10M-span run (2M frames × 5 stages on two threads), checked for
//! correctness and timed. Ignored by default: it is a measurement, and in a debug build slow.
//!
//!     cargo test --release --test report_scale -- --ignored --nocapture
//!
//! The printed times are for reading, never asserted.

use crate::common;

use common::Jitter;

use std::time::Instant;

use framelab::analyze::analyze;
use framelab::model::{CounterValue, Run, RunMeta, Span};
use framelab::render::Format;
use framelab::report::render;

const FRAMES: u64 = 2_000_000;
const STAGES: u16 = 5;
const BUDGET_NS: i64 = 8_333_333;

/// `frame_id` maps the frame number to the id recorded (sparse ids take another path).
fn synthetic_run(frame_id: fn(u64) -> u64) -> Run {
    let mut jitter = Jitter(0x2545_f491_4f6c_dd1d);
    let mut spans = Vec::with_capacity((FRAMES * STAGES as u64) as usize);
    // Stages 0–2 on thread 0, 3–4 on thread 1; the store hands spans over thread by thread.
    for thread in 0..2u32 {
        for frame in 0..FRAMES {
            let mut t = frame as i64 * BUDGET_NS;
            for stage in 0..STAGES {
                let dur = 200_000 + jitter.next(1_400_000);
                if (stage < 3) == (thread == 0) {
                    spans.push(Span {
                        frame: frame_id(frame),
                        stage,
                        thread,
                        start_ns: t,
                        dur_ns: dur,
                    });
                }
                t += dur + 10_000;
            }
        }
    }
    let counters = (0..FRAMES)
        .map(|frame| CounterValue {
            frame: frame_id(frame),
            counter: 0,
            value: 10_000 + jitter.next(5_000),
        })
        .collect();
    Run {
        meta: RunMeta {
            target_fps: Some(120.0),
            window_start_ns: 5_000_000_000,
            window_end_ns: FRAMES as i64 * BUDGET_NS,
            ..RunMeta::default()
        },
        stages: (0..STAGES).map(|s| format!("stage{s}")).collect(),
        counter_names: vec!["bytes".into()],
        spans,
        counters,
        ..Run::default()
    }
}

#[test]
#[ignore]
fn analysis_of_ten_million_spans() {
    check_and_time(synthetic_run(|f| f));
}

#[test]
#[ignore]
fn analysis_of_ten_million_spans_with_sparse_ids() {
    // Ids spread over the whole u64 range, as hashes or timestamps would be.
    check_and_time(synthetic_run(|f| f.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
}

fn check_and_time(run: Run) {
    assert_eq!(run.spans.len(), 10_000_000);

    let started = Instant::now();
    let a = analyze(&run);
    let analysed = started.elapsed();
    let started = Instant::now();
    let text = render(&a, Format::Text, false).unwrap();
    let rendered = started.elapsed();

    // Frames ending before 5 s are warmup: frame i ends a little after i × budget.
    let warmup = a.window.warmup_frames;
    assert!((595..=601).contains(&warmup), "{warmup}");
    assert_eq!(a.frames + warmup + a.window.after_frames, FRAMES);
    assert_eq!(a.stage_names.len(), STAGES as usize);
    assert!(a.stages[..5].iter().all(|r| r.dist.count == a.frames));
    assert_eq!(a.worst_frames.len(), 10);
    assert!(a.fps.as_ref().is_some_and(|f| f.low0_1_int.is_some()));
    println!("{text}");
    println!(
        "analyze: {:.3} s for {} spans; text render {:.3} ms",
        analysed.as_secs_f64(),
        run.spans.len(),
        rendered.as_secs_f64() * 1e3
    );
}
