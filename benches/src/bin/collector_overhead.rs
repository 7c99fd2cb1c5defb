//! The collector under load: is it lossless at 1M spans/s from one producer thread, and what
//! does it cost at 100k spans/s?
//!
//! ```sh
//! cargo build --release --bin framelab --example testprog -p framelab
//! cargo build --release -p framelab-benches
//! target/release/collector_overhead [SECONDS] [--baseline OTHER_FRAMELAB] [--rates R1,R2,...] [--vs-lttng] [--run-args 'OPTIONS']
//! ```
//!
//! `--rates` replaces the default cases (100000,1000000 spans/s); with
//! `FRAMELAB_RING_RECORDS=4194304` in the environment the producer's ring holds 4M records
//! (the lossless rate from one thread: does `dropped` stay 0?).
//!
//! `--vs-lttng` traces the same rates with LTTng (one user-space tracepoint with two
//! integers, default channel) and prints framelab's window CPU as a ratio of LTTng's daemons'
//! CPU over the same load (`framelab_benches::lttng`).
//!
//! `--run-args` adds options to every `framelab run` (both builds), for example the span path
//! alone, as LTTng's daemons run it: `--run-args '--no-sample nvml --no-sample amdgpu
//! --no-sample cpufreq --no-sample rapl --no-sample threads'`.
//!
//! Each case runs `framelab run -- testprog rate R S` (R spans/s in 1 ms batches for S seconds,
//! default ring). framelab's own CPU is its rusage from wait4 (which includes the children it
//! reaped) minus the producer's CPU as framelab itself recorded it in the run file: that
//! includes starting up and loading, analysing and printing the report at the end. The window
//! figure is framelab's own getrusage over the measured window only (`runs.collector_cpu_ns`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(10);
    // `--baseline PATH`: another framelab (e.g. built from an earlier commit), run on the
    // same cases interleaved with this one, for a ratio measured in the same run.
    let baseline = args
        .iter()
        .position(|a| a == "--baseline")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let rates: Vec<u64> = match args.iter().position(|a| a == "--rates") {
        Some(i) => match args.get(i + 1).map(|list| {
            list.split(',')
                .map(|r| r.trim().parse::<u64>())
                .collect::<Result<Vec<u64>, _>>()
        }) {
            Some(Ok(rates)) if !rates.is_empty() && rates.iter().all(|&r| r >= 1000) => rates,
            _ => {
                eprintln!("--rates takes spans per second, at least 1000 each, separated by commas (e.g. --rates 100000,1000000)");
                std::process::exit(2);
            }
        },
        None => vec![100_000, 1_000_000],
    };
    let vs_lttng = args.iter().any(|a| a == "--vs-lttng");
    let run_args: Vec<String> = (args.iter().position(|a| a == "--run-args"))
        .and_then(|i| args.get(i + 1))
        .map(|options| options.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    if !run_args.is_empty() {
        println!("every run: framelab run {}", run_args.join(" "));
    }
    let release = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let framelab = release.join("framelab");
    let testprog = release.join("examples").join("testprog");
    for exe in [&framelab, &testprog] {
        if !exe.exists() {
            eprintln!("{} is missing: cargo build --release --bin framelab --example testprog -p framelab", exe.display());
            std::process::exit(2);
        }
    }
    let dir = std::env::temp_dir().join(format!("framelab-collector-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lttng = vs_lttng.then(|| {
        framelab_benches::lttng::Lttng::start(&dir).unwrap_or_else(|why| {
            eprintln!("--vs-lttng: {why}");
            std::process::exit(2);
        })
    });
    println!("| framelab | spans/s | seconds | spans sent | recorded | dropped | framelab CPU, whole run | % of one core | framelab CPU, window only | % of one core | ns per span (window) | recorded ÷ window, spans/s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // With a baseline: baseline, this, this, baseline (ABBA), so neither gains from going first.
    let mut binaries = vec![("this", framelab.clone())];
    if let Some(b) = &baseline {
        binaries = vec![
            ("baseline", b.clone()),
            ("this", framelab.clone()),
            ("this", framelab.clone()),
            ("baseline", b.clone()),
        ];
    }
    let mut window_pct: Vec<(&str, u64, f64)> = Vec::new();
    for &rate in &rates {
        for (label, exe) in &binaries {
            let path = dir.join(format!("rate-{rate}-{label}.framelab"));
            let _ = std::fs::remove_file(&path);
            let (cpu_total_ns, wall_ns) =
                run_framelab(exe, &run_args, &testprog, &path, rate, seconds);
            let run = framelab::store::load_run(&path, None).expect("run file");
            let producer_ns: i64 = run.processes.iter().map(|p| p.user_ns + p.sys_ns).sum();
            let collector_ns = cpu_total_ns - producer_ns;
            let sent = rate / 1000 * 1000 * seconds;
            let recorded = run.spans.len() as u64;
            let window_ns = run.meta.window_end_ns - run.meta.window_start_ns;
            let observer_ns = run.meta.collector_cpu_ns;
            let pct = observer_ns as f64 / window_ns as f64 * 100.0;
            window_pct.push((label, rate, pct));
            println!(
            "| {label} | {rate} | {seconds} | {sent} | {recorded} | {} | {:.3} s | {:.2}% | {:.3} s | {pct:.2}% | {:.0} | {:.0} |",
            run.meta.dropped_events,
            collector_ns as f64 / 1e9,
            collector_ns as f64 / wall_ns as f64 * 100.0,
            observer_ns as f64 / 1e9,
            observer_ns as f64 / recorded.max(1) as f64,
            recorded as f64 / (window_ns as f64 / 1e9),
        );
            if recorded + run.meta.dropped_events != sent {
                eprintln!(
                    "warning: {sent} sent but {recorded} recorded + {} dropped",
                    run.meta.dropped_events
                );
            }
        }
    }
    if let Some(anchor) = &lttng {
        for &rate in &rates {
            let traced = match anchor.trace(rate, seconds) {
                Ok(traced) => traced,
                Err(why) => {
                    eprintln!("--vs-lttng: {why}");
                    // Its session daemon is stopped when dropped: nothing is left running.
                    drop(lttng);
                    let _ = std::fs::remove_dir_all(&dir);
                    std::process::exit(2);
                }
            };
            let pct = traced.daemons_cpu_ns as f64 / traced.window_ns as f64 * 100.0;
            println!(
                "| LTTng (daemons) | {rate} | {seconds} | {} | {} | {} | – | – | {:.3} s | {pct:.2}% | {:.0} | – |",
                traced.sent,
                traced.recorded,
                traced.discarded,
                traced.daemons_cpu_ns as f64 / 1e9,
                traced.daemons_cpu_ns as f64 / traced.recorded.max(1) as f64,
            );
            window_pct.push(("lttng", rate, pct));
        }
        for &rate in &rates {
            let mean = |label: &str| mean_window_pct(&window_pct, label, rate);
            println!(
                "{rate} spans/s: this framelab's window CPU is {:.2}× LTTng's daemons' CPU on the same load{}",
                mean("this") / mean("lttng"),
                if baseline.is_some() { format!(" (the baseline's: {:.2}×)", mean("baseline") / mean("lttng")) } else { String::new() }
            );
        }
    }
    drop(lttng);
    if baseline.is_some() {
        for &rate in &rates {
            let mean = |label: &str| mean_window_pct(&window_pct, label, rate);
            println!(
                "{rate} spans/s: this framelab's window CPU is {:.2}× the baseline's (mean of 2 runs each, ABBA)",
                mean("this") / mean("baseline")
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The mean window CPU share of the runs of `label` at `rate`.
fn mean_window_pct(window_pct: &[(&str, u64, f64)], label: &str, rate: u64) -> f64 {
    let shares: Vec<f64> = (window_pct.iter())
        .filter(|(l, r, _)| *l == label && *r == rate)
        .map(|t| t.2)
        .collect();
    shares.iter().sum::<f64>() / shares.len().max(1) as f64
}

/// Runs framelab to completion; returns its CPU (with reaped children) and wall time, in ns.
// Reaped by `wait4` (for its rusage), which the lint cannot see.
#[allow(clippy::zombie_processes)]
fn run_framelab(
    framelab: &Path,
    run_args: &[String],
    testprog: &PathBuf,
    out: &Path,
    rate: u64,
    seconds: u64,
) -> (i64, i64) {
    let started = std::time::Instant::now();
    let child = Command::new(framelab)
        .arg("run")
        .args(run_args)
        .arg("-o")
        .arg(out)
        .arg("--")
        .arg(testprog)
        .args(["rate", &rate.to_string(), &seconds.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("framelab starts");
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let wall_ns = started.elapsed().as_nanos() as i64;
    let ns = |tv: libc::timeval| tv.tv_sec * 1_000_000_000 + tv.tv_usec * 1_000;
    (ns(usage.ru_utime) + ns(usage.ru_stime), wall_ns)
}
