//! The run file writer's CPU per span at the batch sizes the collector hands it: a drain's
//! worth of spans per `spans()` call and a commit every half second, as `framelab run` does
//! at 100k and 1M spans/s. For a ratio against another build (ABBA), run this binary and the
//! other build's in turn:
//!
//! ```sh
//! cargo build --release -p framelab-benches --bin writer_cost
//! target/release/writer_cost [--spans N] [--dir DIR]
//! ```
//!
//! CPU is the process's own (user + sys, `getrusage`): the writer runs on the calling thread.

use std::path::PathBuf;

use framelab::model::{RunMeta, Span, ThreadInfo};
use framelab::store::RunWriter;

/// (spans/s it stands for, spans per `spans()` call, spans per commit).
const CASES: [(u64, usize, usize); 2] = [
    // A 20 ms drain tick at 100k spans/s, a commit every 0.5 s.
    (100_000, 2_000, 50_000),
    // A ring a quarter full (16,384 of 65,536 records) per drain at 1M spans/s.
    (1_000_000, 16_384, 500_000),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let spans: usize = match value("--spans").map(|v| v.parse()) {
        None => 2_000_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("--spans takes a positive count of spans (e.g. --spans 2000000)");
            std::process::exit(2);
        }
    };
    let dir = value("--dir")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let all = realistic_spans(spans);
    for (rate, batch, commit_every) in CASES {
        let path = dir.join(format!(
            "writer_cost-{}-{rate}.framelab",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let mut writer = RunWriter::create(&path, &RunMeta::default())?;
        for stage in ["capture", "detect", "track", "encode", "send"] {
            writer.add_stage(stage)?;
        }
        writer.add_thread(&ThreadInfo::default())?;
        writer.commit()?;
        let cpu0 = cpu_ns();
        let mut since_commit = 0;
        for chunk in all.chunks(batch) {
            writer.spans(chunk)?;
            since_commit += chunk.len();
            if since_commit >= commit_every {
                writer.commit()?;
                since_commit = 0;
            }
        }
        writer.commit()?;
        let cpu = cpu_ns() - cpu0;
        writer.finish()?;
        let _ = std::fs::remove_file(&path);
        println!(
            "{rate} spans/s: {spans} spans in batches of {batch}, a commit every {commit_every}: {:.0} ns CPU per span",
            cpu as f64 / spans as f64
        );
    }
    Ok(())
}

/// Frames counting up, 5 stages on one thread, 1 µs–10 ms durations (deterministic).
fn realistic_spans(n: usize) -> Vec<Span> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            Span {
                frame: (i / 5) as u64,
                stage: (i % 5) as u16,
                thread: 0,
                start_ns: i as i64 * 10_000,
                dur_ns: 1_000 + (state % 10_000_000) as i64,
            }
        })
        .collect()
}

fn cpu_ns() -> i64 {
    // SAFETY: getrusage with a valid out-pointer.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let ns = |tv: libc::timeval| tv.tv_sec * 1_000_000_000 + tv.tv_usec * 1_000;
    ns(usage.ru_utime) + ns(usage.ru_stime)
}
