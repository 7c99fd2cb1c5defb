//! The WAYLAND_DEBUG importer on a ~200 MB log: MB/s and peak memory against the input.
//!
//!     cargo run --release -p framelab-benches --bin import_wayland_bench [-- FILE]
//!
//! Writes the log once (to target/import_wayland_bench.log unless FILE is given; reused
//! when present) by repeating the real weston-presentation-shm client log of
//! tests/fixtures/import with its timestamps moved on each time (so the printed 32-bit
//! counter wraps, as in a long log), then imports it three times, each in a fresh process
//! so that each peak RSS is its own: the time to read the file, the time to parse it into a
//! run (`parse_bytes`: every line, spans, events, `finish`), and the process's peak RSS
//! over the input's size.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use framelab::import::{parse_bytes, read_input, Format, ImportOptions};

const TARGET_BYTES: u64 = 200_000_000;
const SOURCE: &str = "wayland-1.21-presentation-shm-client.log.gz";
/// The printed counter: 2^32 µs.
const WRAP_US: u64 = 1 << 32;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, file] = args.as_slice() {
        if flag == "--measure" {
            return measure(Path::new(file));
        }
    }
    let path = args.get(1).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/import_wayland_bench.log")
    });
    if !path.exists() {
        write_log(&path)?;
    }
    let size = std::fs::metadata(&path)?.len();
    println!(
        "input: {} ({:.1} MB), built from tests/fixtures/import/{SOURCE}",
        path.display(),
        size as f64 / 1e6
    );
    let exe = std::env::current_exe()?;
    let mut rates = Vec::new();
    for round in 1..=3 {
        let out = Command::new(&exe).arg("--measure").arg(&path).output()?;
        anyhow::ensure!(
            out.status.success(),
            "measuring process failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = String::from_utf8(out.stdout)?;
        print!("run {round}: {line}");
        let rate: f64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("parse_MB/s="))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("no rate in {line:?}"))?;
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!("median parse: {:.0} MB/s", rates[1]);
    Ok(())
}

/// One import, in this process: read, parse, report.
fn measure(path: &Path) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let input = read_input(path)?;
    let read_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let run = parse_bytes(Format::Wayland, &input, ImportOptions::default())?;
    let parse_s = t1.elapsed().as_secs_f64();
    let mb = input.len() as f64 / 1e6;
    let peak = peak_rss_bytes();
    println!(
        "read {read_s:.3} s, parse {parse_s:.3} s parse_MB/s={:.0} ({} spans {} events), \
         peak RSS {:.0} MB = {:.2} x input",
        mb / parse_s,
        run.spans.len(),
        run.events.len(),
        peak as f64 / 1e6,
        peak as f64 / input.len() as f64
    );
    Ok(())
}

fn peak_rss_bytes() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024
}

/// The source log repeated with its stamps moved on by its own length each time.
fn write_log(path: &Path) -> anyhow::Result<()> {
    let source_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/import")
        .join(SOURCE);
    let source = String::from_utf8(read_input(&source_path)?)?;
    let stamps: Vec<u64> = source.lines().filter_map(stamp_us).collect();
    let (first, last) = (stamps[0], stamps[stamps.len() - 1]);
    let period = last - first + 25_000;
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut shift = 0u64;
    while written < TARGET_BYTES {
        for line in source.lines() {
            let text = match (stamp_us(line), line.find(']')) {
                (Some(us), Some(close)) => {
                    let moved = (us + shift) % WRAP_US;
                    format!(
                        "[{:7}.{:03}]{}\n",
                        moved / 1000,
                        moved % 1000,
                        &line[close + 1..]
                    )
                }
                _ => format!("{line}\n"),
            };
            out.write_all(text.as_bytes())?;
            written += text.len() as u64;
        }
        shift += period;
    }
    out.flush()?;
    Ok(())
}

/// `[ 951964.436] ...` → 951964436.
fn stamp_us(line: &str) -> Option<u64> {
    let inner = line.strip_prefix('[')?.split(']').next()?.trim();
    let (ms, frac) = inner.split_once('.')?;
    Some(ms.parse::<u64>().ok()? * 1000 + frac.parse::<u64>().ok()?)
}
