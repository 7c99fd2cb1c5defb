//! What capturing the command's output costs the command (issue 12): a command printing
//! 100 MB of ffmpeg-like progress lines, timed by the command itself (its shell reads the
//! clock before and after), run interleaved in these ways:
//!
//! - without framelab, writing to /dev/null, and into a pipe drained by `cat`;
//! - under framelab (in process, as `framelab run` does it) with nothing captured, its
//!   stdout being framelab's, which is /dev/null here;
//! - under framelab with `--keep-output` (a pipe framelab drains, forwards to /dev/null and
//!   keeps the last MiB of), and with a `--metric` matching every line too.
//!
//! Prints the median ms of each and its ratio to the /dev/null runs under framelab and
//! without it. Usage: capture_bench [ROUNDS] (default 10).

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use framelab::output::MetricSpec;
use framelab::session::{self, CaptureOptions, LaunchOptions, RunOptions};

const LINE: &str =
    "frame=  123 fps= 45.6 q=28.0 size=    1024kB time=00:00:01.00 bitrate=8388.6kbits/s speed=1.5x";
const BYTES: u64 = 100_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Way {
    DevNull,
    Pipe,
    Framelab,
    Keep,
    Metric,
}

impl Way {
    const ALL: [Way; 5] = [
        Way::DevNull,
        Way::Pipe,
        Way::Framelab,
        Way::Keep,
        Way::Metric,
    ];

    fn name(self) -> &'static str {
        match self {
            Way::DevNull => "without framelab, > /dev/null",
            Way::Pipe => "without framelab, | cat > /dev/null",
            Way::Framelab => "framelab run, not captured (framelab's stdout: /dev/null)",
            Way::Keep => "framelab run --keep-output (captured, tee'd to /dev/null)",
            Way::Metric => "framelab run --metric on every line (captured + regex)",
        }
    }
}

/// The command: prints 100 MB, timing itself into `$CAPTURE_BENCH_NS`.
fn script(tail: &str) -> String {
    format!(
        "a=$(date +%s%N); yes '{LINE}' | head -c {BYTES}{tail}; b=$(date +%s%N); \
         echo $((b - a)) > \"$CAPTURE_BENCH_NS\""
    )
}

fn once(way: Way, dir: &Path, round: usize) -> anyhow::Result<f64> {
    let timing = dir.join("ns");
    let _ = std::fs::remove_file(&timing);
    let env = ("CAPTURE_BENCH_NS", timing.display().to_string());
    match way {
        Way::DevNull | Way::Pipe => {
            let tail = if way == Way::DevNull {
                " > /dev/null"
            } else {
                " | cat > /dev/null"
            };
            let status = std::process::Command::new("sh")
                .args(["-c", &script(tail)])
                .env(env.0, &env.1)
                .status()?;
            anyhow::ensure!(status.success(), "the command failed");
        }
        _ => {
            let metrics = if way == Way::Metric {
                vec![MetricSpec::parse(r"speed:higher:stdout=speed=\s*([\d.]+)x")
                    .map_err(anyhow::Error::msg)?]
            } else {
                Vec::new()
            };
            let opts = RunOptions {
                command: vec!["sh".into(), "-c".into(), script("")],
                output: Some(dir.join(format!("run-{round}.framelab"))),
                launch: LaunchOptions {
                    grace: Duration::from_secs(2),
                    env: vec![(env.0.into(), env.1.clone())],
                    ..LaunchOptions::default()
                },
                capture: CaptureOptions {
                    keep_output: way == Way::Keep,
                    metrics,
                    ..CaptureOptions::default()
                },
                ..RunOptions::default()
            };
            let outcome = session::run(&opts)?;
            if way == Way::Metric {
                anyhow::ensure!(
                    outcome.metrics[0].value == Some(1.5),
                    "the metric was not read: {:?}",
                    outcome.metrics[0]
                );
            }
        }
    }
    let ns: f64 = std::fs::read_to_string(&timing)?.trim().parse()?;
    Ok(ns / 1e6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> anyhow::Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(10);
    let dir = tempfile_dir()?;
    // The commands' stdout (framelab's, when not captured) goes to /dev/null; the table to
    // the real stdout, restored at the end.
    let saved = unsafe { libc::dup(1) };
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    unsafe { libc::dup2(null.as_raw_fd(), 1) };
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); Way::ALL.len()];
    let result = (|| -> anyhow::Result<()> {
        for round in 0..rounds {
            for (i, way) in Way::ALL.iter().enumerate() {
                times[i].push(once(*way, &dir, round)?);
            }
            eprintln!("round {}/{rounds} done", round + 1);
        }
        Ok(())
    })();
    unsafe { libc::dup2(saved, 1) };
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    let (null, under) = (medians[0], medians[2]);
    println!("100 MB of {}-byte lines, {rounds} interleaved rounds, median ms as the command timed itself:\n", LINE.len() + 1);
    println!("| how | ms | × without framelab (> /dev/null) | × framelab, not captured |");
    println!("|---|--:|--:|--:|");
    for (way, ms) in Way::ALL.iter().zip(&medians) {
        println!(
            "| {} | {ms:.1} | {:.2} | {:.2} |",
            way.name(),
            ms / null,
            ms / under
        );
    }
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("capture_bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
