//! The timing harness shared by the overhead benchmarks: batches of a measured case
//! interleaved with batches of the baseline (two bare `rdtsc`), medians of both. Each case
//! runs in a process of its own (see `probe_overhead`), which prints one `RESULT` line.

pub mod lttng;

use std::hint::black_box;
use std::time::Instant;

/// Batches and iterations per batch of one measurement.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub batches: usize,
    pub iters: u64,
}

/// Medians over batches, in ns per iteration.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub case_ns: f64,
    pub base_ns: f64,
}

/// The baseline: two back-to-back TSC reads, the least a span with a start and an end costs.
#[inline(never)]
pub fn two_rdtsc(iters: u64) {
    for _ in 0..iters {
        black_box(rdtsc());
        black_box(rdtsc());
    }
}

#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::time::UNIX_EPOCH.elapsed().unwrap().as_nanos() as u64
    }
}

/// Times `case` (which runs `iters` iterations) against the baseline, batch by batch in
/// alternating order so drift hits both alike. `between` runs after every batch, outside the
/// timed region: it drains what the case recorded.
pub fn interleaved(plan: Plan, mut case: impl FnMut(u64), mut between: impl FnMut()) -> Sample {
    let time = |f: &mut dyn FnMut(u64)| {
        let t = Instant::now();
        f(plan.iters);
        t.elapsed().as_nanos() as f64 / plan.iters as f64
    };
    let mut base = two_rdtsc;
    for _ in 0..plan.batches / 10 + 1 {
        time(&mut case); // warm up: caches, lazy initialisation, first touch of buffers
        between();
    }
    let (mut cases, mut bases) = (Vec::new(), Vec::new());
    for i in 0..plan.batches {
        if i % 2 == 0 {
            bases.push(time(&mut base));
            cases.push(time(&mut case));
        } else {
            cases.push(time(&mut case));
            bases.push(time(&mut base));
        }
        between();
    }
    Sample {
        case_ns: median(&mut cases),
        base_ns: median(&mut bases),
    }
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The line a case process prints and the orchestrator parses.
pub fn print_result(case: &str, s: Sample, note: &str) {
    println!("RESULT {case} {:.4} {:.4} {note}", s.case_ns, s.base_ns);
}

/// Parses `RESULT <case> <ns> <base_ns> [note]`.
pub fn parse_result(line: &str) -> Option<(String, Sample, String)> {
    let mut parts = line.strip_prefix("RESULT ")?.splitn(4, ' ');
    let case = parts.next()?.to_owned();
    let case_ns = parts.next()?.parse().ok()?;
    let base_ns = parts.next()?.parse().ok()?;
    let note = parts.next().unwrap_or("").to_owned();
    Some((case, Sample { case_ns, base_ns }, note))
}

/// Reads `--name value` from the arguments.
pub fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident memory of this process in MiB (shows whether a library's queue was drained).
pub fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}
