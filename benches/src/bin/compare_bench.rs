//! `framelab compare` on an experiment of 2 variants × 10 runs × 100,000 frames (3 stages
//! a frame: 6M spans), with the default 10,000 bootstrap resamples.
//!
//!     cargo run --release -p framelab-benches --bin compare_bench [-- FILE]
//!
//! Writes the experiment once (to target/compare_bench.framelab unless FILE is given;
//! reused when present), then times the comparison three times in this process and
//! prints each, and the median. The loading and the statistics are also timed apart.

use std::path::{Path, PathBuf};
use std::time::Instant;

use framelab::compare::{self, CompareOptions, Source};
use framelab::experiment::{ExperimentRun, Fingerprint, RunStatus};
use framelab::model::{EndReason, ExitInfo, ProcessRole, ProcessStats, RunMeta, Span, ThreadInfo};
use framelab::store::{self, RunWriter};

const RUNS: usize = 10;
const FRAMES: u64 = 100_000;
const STAGES: [&str; 3] = ["capture", "convert", "encode"];

/// xorshift: cheap, deterministic noise for synthetic frame times.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One run: frames every 8.333 ms, stages back to back, variant "v2" 10% faster to encode.
fn write_run(path: &Path, variant: &str, seed: u64) -> anyhow::Result<i64> {
    let interval_ns = 8_333_333i64;
    let window_end = FRAMES as i64 * interval_ns + 1_000_000;
    let meta = RunMeta {
        name: variant.into(),
        command: vec!["./pipeline".into(), format!("--variant={variant}")],
        started_at: "2026-11-22T10:00:00Z".into(),
        framelab_version: "bench".into(),
        clock: "mono".into(),
        target_fps: Some(120.0),
        window_start_ns: 0,
        window_end_ns: window_end,
        end_reason: EndReason::Duration,
        exit: Some(ExitInfo {
            code: Some(0),
            signal: None,
            crashed: false,
        }),
        ..RunMeta::default()
    };
    let mut writer = RunWriter::create(path, &meta)?;
    for stage in STAGES {
        writer.add_stage(stage)?;
    }
    writer.add_thread(&ThreadInfo {
        pid: 1,
        tid: 1,
        name: "main".into(),
        dropped: 0,
    })?;
    let mut noise = Noise(seed * 7919 + 1);
    let encode_scale = if variant == "v2" { 0.9 } else { 1.0 };
    let mut batch = Vec::with_capacity(30_000);
    for frame in 0..FRAMES {
        let mut t = frame as i64 * interval_ns;
        let durations = [
            15_000.0 * (0.9 + 0.2 * noise.next()),
            450_000.0 * (0.9 + 0.2 * noise.next()),
            2_400_000.0
                * encode_scale
                * (0.8 + 0.4 * noise.next())
                * if noise.next() < 0.01 { 2.0 } else { 1.0 },
        ];
        for (stage, d) in durations.iter().enumerate() {
            let dur_ns = *d as i64;
            batch.push(Span {
                frame,
                stage: stage as u16,
                thread: 0,
                start_ns: t,
                dur_ns,
            });
            t += dur_ns;
        }
        if batch.len() >= 30_000 {
            writer.spans(&batch)?;
            writer.commit()?;
            batch.clear();
        }
    }
    writer.spans(&batch)?;
    writer.processes(&[ProcessStats {
        pid: 1,
        ppid: 0,
        name: "pipeline".into(),
        role: ProcessRole::Command,
        user_ns: window_end / 3,
        sys_ns: window_end / 50,
        wall_ns: window_end,
        peak_rss_bytes: 64 << 20,
        ..ProcessStats::default()
    }])?;
    writer.update_meta(&meta)?;
    let id = writer.run_id();
    writer.finish()?;
    Ok(id)
}

fn make_experiment(path: &Path) -> anyhow::Result<()> {
    let spec = serde_json::json!({
        "variants": [{"name": "main", "command": ["./pipeline"]}, {"name": "v2", "command": ["./pipeline"]}],
        "params": [], "runs": RUNS, "order": "interleaved", "seed": null, "pin": null,
        "prepare": null, "run": {"fps": 120.0, "budget_ns": null, "warmup_ns": 0, "duration_ns": null,
        "frames": null, "watch_pids": [], "watch_names": [], "grace_ns": 0, "ring_records": null}
    });
    let experiment_id = store::create_experiment(path, &spec.to_string())?;
    for slot in 0..2 * RUNS {
        let variant = if slot % 2 == 0 { "main" } else { "v2" };
        let run_id = write_run(path, variant, slot as u64)?;
        store::record_experiment_run(
            path,
            &ExperimentRun {
                run_id,
                experiment_id,
                variant: variant.into(),
                params: Default::default(),
                repetition: (slot / 2) as u32,
                slot: slot as u32,
                status: RunStatus::Ok,
                failure: None,
            },
            &Fingerprint::default(),
        )?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let path: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/compare_bench.framelab")
        });
    if !path.exists() {
        let t = Instant::now();
        make_experiment(&path)?;
        eprintln!(
            "wrote {} in {:.1} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let sources = [Source {
        path: path.clone(),
        variant: None,
        run_ids: None,
    }];
    let options = CompareOptions::default();
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let c = compare::compare(&sources, &options)?;
        let text = compare::render(&c, framelab::render::Format::Text).expect("text");
        times.push(t.elapsed().as_secs_f64());
        rows = c.groups[0].comparisons[0].rows.len();
        if times.len() == 1 {
            println!("{text}");
        }
    }
    let t = Instant::now();
    for run in store::list_runs(&path)? {
        let loaded = store::load_run(&path, Some(run.id))?;
        std::hint::black_box(compare::extract(&loaded));
    }
    let load_serial = t.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    println!(
        "RESULT compare 2 variants x {RUNS} runs x {FRAMES} frames ({} spans), {rows} metrics, {} resamples: \
         {:.2} s median of 3 ({:.2} / {:.2} / {:.2}); loading+analysis alone, one thread: {load_serial:.2} s",
        2 * RUNS as u64 * FRAMES * STAGES.len() as u64,
        options.resamples,
        times[1],
        times[0],
        times[1],
        times[2]
    );
    Ok(())
}
