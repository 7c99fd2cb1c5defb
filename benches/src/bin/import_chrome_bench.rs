//! `framelab::import::parse_bytes` on a generated Chrome JSON trace of `X` slices (about
//! 200 MB unless told otherwise), as `framelab import --frame-arg frame` reads it.
//!
//!     cargo run --release -p framelab-benches --bin import_chrome_bench [-- MB]
//!
//! The trace is built in memory once; each of three imports is timed and its peak memory
//! taken (the process's VmHWM, reset before each import through /proc/self/clear_refs),
//! both shown against the input's size. The input itself is part of the peak.

use std::io::Write;
use std::time::Instant;

use framelab::import::{parse_bytes, Format, ImportOptions};

const STAGES: [&str; 4] = ["capture", "convert", "encode", "send"];

/// xorshift: cheap, deterministic noise for the durations.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A trace like a real pipeline's: 4 stages a frame on 3 threads of one process, frames
/// 8.333 ms apart, times in µs with 3 decimals, the frame id in args.
fn generate(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 4096);
    out.extend_from_slice(b"{\"traceEvents\":[\n");
    out.extend_from_slice(
        b"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,\"tid\":0,\"args\":{\"name\":\"pipeline\"}},\n",
    );
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let mut frame: u64 = 0;
    'frames: loop {
        let frame_start_ns = 1_000_000_000_000 + frame * 8_333_333;
        let mut t_ns = frame_start_ns;
        for (i, stage) in STAGES.iter().enumerate() {
            let dur_ns = 500_000 + noise.next() % 1_500_000;
            let tid = 4242 + i as u64 % 3;
            writeln!(
                out,
                "{{\"name\":\"{stage}\",\"cat\":\"pipeline,benchmark\",\"ph\":\"X\",\"ts\":{}.{:03},\
                 \"dur\":{}.{:03},\"pid\":4242,\"tid\":{tid},\"args\":{{\"frame\":{frame}}}}},",
                t_ns / 1000,
                t_ns % 1000,
                dur_ns / 1000,
                dur_ns % 1000
            )
            .unwrap();
            t_ns += dur_ns + 20_000;
            if out.len() >= bytes {
                break 'frames;
            }
        }
        frame += 1;
    }
    // The last event's comma off, and the array and object closed.
    out.truncate(out.len() - 2);
    out.extend_from_slice(b"\n],\"displayTimeUnit\":\"ns\"}\n");
    out
}

/// A `/proc/self/status` figure in bytes (`VmRSS`, `VmHWM`).
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU time this process has used (all threads), in seconds.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn reset_peak() {
    // "5" resets the peak resident set size (Linux 4.0+).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let input = generate(mb << 20);
    let size = input.len() as f64;
    println!(
        "input: {:.1} MB ({} bytes), {} X events",
        size / 1e6,
        input.len(),
        memchr_count(&input)
    );
    let opts = ImportOptions {
        frame_arg: Some("frame".into()),
        ..ImportOptions::default()
    };
    let mut speeds = Vec::new();
    for i in 1..=3 {
        reset_peak();
        let before = status_bytes("VmRSS");
        let start = Instant::now();
        let cpu_start = cpu_seconds();
        let run = parse_bytes(Format::Chrome, &input, opts.clone()).expect("the trace imports");
        let secs = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu_start;
        let peak = status_bytes("VmHWM");
        let speed = size / 1e6 / secs;
        speeds.push(speed);
        println!(
            "run {i}: {} spans in {:.3} s = {speed:.0} MB/s ({:.3} s of CPU = {:.0} MB/s); peak \
             memory {:.0} MB = {:.2}× the input (before the import {:.0} MB; the import's own \
             {:.2}×)",
            run.spans.len(),
            secs,
            cpu,
            size / 1e6 / cpu,
            peak as f64 / 1e6,
            peak as f64 / size,
            before as f64 / 1e6,
            peak.saturating_sub(before) as f64 / size
        );
        drop(run);
    }
    speeds.sort_by(f64::total_cmp);
    println!("median: {:.0} MB/s", speeds[1]);
}

fn memchr_count(input: &[u8]) -> usize {
    input.windows(8).filter(|w| w == b"\"ph\":\"X\"").count()
}
