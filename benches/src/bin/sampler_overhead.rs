//! What telemetry costs: the sampler thread's own CPU, as a % of one core, at 20 Hz
//! (`--sample-every 50ms`, the default) and 1 kHz (`1ms`, the shortest).
//!
//! ```sh
//! cargo build --release -p framelab-benches --bin sampler_overhead
//! target/release/sampler_overhead [--seconds S] [--threads N] [--sources LIST] [--sysfs DIR|fixture]
//! ```
//!
//! The sampler runs in this process exactly as under `framelab run`, over a workload child
//! (this program again) with N threads that each work 1 ms and sleep 4 ms, so the `threads`
//! source has live threads to read. The cost is the sampler thread's on-CPU time from
//! `/proc/self/task/TID/schedstat` (nanoseconds, not clock ticks) over the wall time, and per
//! source the CPU the sampler measured around its reads (`sample_sources.cpu_ns`).
//!
//! `--sysfs fixture` (the default on a machine without cpufreq or RAPL, such as most VMs)
//! reads a generated tree with one cpufreq file per core and two RAPL domains, so those
//! sources are exercised; their cost there is a tmpfs read, cheaper than a real sysfs
//! attribute: the real figure needs a machine that has them (`--sysfs /sys`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use framelab::model::SourceState;
use framelab::sample::{ProcessTree, Sampler, SamplingOptions, SourceKind};
use framelab::session::procfs::Procfs;

struct Options {
    seconds: f64,
    threads: usize,
    sources: Vec<SourceKind>,
    sysfs: Option<PathBuf>,
}

fn parse() -> Options {
    let mut o = Options {
        seconds: 10.0,
        threads: 8,
        sources: vec![SourceKind::Cpufreq, SourceKind::Rapl, SourceKind::Threads],
        sysfs: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--seconds" => o.seconds = value.parse().expect("--seconds S"),
            "--threads" => o.threads = value.parse().expect("--threads N"),
            "--sources" => {
                o.sources = value
                    .split(',')
                    .map(|s| SourceKind::parse(s).expect("--sources nvml,cpufreq,..."))
                    .collect()
            }
            "--sysfs" => o.sysfs = Some(PathBuf::from(value)),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    o
}

/// The workload child: N threads working 1 ms in every 5.
fn workload(threads: usize) -> ! {
    for _ in 0..threads {
        std::thread::spawn(|| loop {
            let t = Instant::now();
            while t.elapsed() < Duration::from_millis(1) {
                std::hint::black_box(0u64);
            }
            std::thread::sleep(Duration::from_millis(4));
        });
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// A sysfs tree with a cpufreq file per core and two RAPL domains.
fn fixture(cores: usize) -> PathBuf {
    let root = std::env::temp_dir().join(format!("framelab-sampler-bench-{}", std::process::id()));
    for core in 0..cores {
        let dir = root.join(format!("devices/system/cpu/cpu{core}/cpufreq"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("scaling_cur_freq"), "2400000\n").unwrap();
    }
    for (id, name) in [("intel-rapl:0", "package-0"), ("intel-rapl:0:0", "core")] {
        let dir = root.join("class/powercap").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(dir.join("energy_uj"), "123456789\n").unwrap();
        std::fs::write(dir.join("max_energy_range_uj"), "262143328850\n").unwrap();
    }
    root
}

/// On-CPU ns of the thread named `name` in this process, from schedstat.
fn thread_cpu_ns(name: &str) -> Option<i64> {
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        // comm holds at most 15 bytes of the name.
        if name.starts_with(comm.trim()) && !comm.trim().is_empty() {
            let stat = std::fs::read_to_string(entry.path().join("schedstat")).ok()?;
            return stat.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

fn has_real(sys: &Path, kind: SourceKind) -> bool {
    match kind {
        SourceKind::Cpufreq => sys
            .join("devices/system/cpu/cpu0/cpufreq/scaling_cur_freq")
            .exists(),
        SourceKind::Rapl => sys.join("class/powercap/intel-rapl:0/energy_uj").exists(),
        _ => true,
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--workload") {
        let n = std::env::args()
            .nth(2)
            .and_then(|a| a.parse().ok())
            .unwrap_or(8);
        workload(n);
    }
    let o = parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let sys = match &o.sysfs {
        Some(p) if p.as_os_str() == "fixture" => fixture(cores),
        Some(p) => p.clone(),
        None => {
            let real = Path::new("/sys");
            if o.sources.iter().all(|&k| has_real(real, k)) {
                real.to_path_buf()
            } else {
                fixture(cores)
            }
        }
    };
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args(["--workload", &o.threads.to_string()])
        .spawn()
        .expect("starting the workload");
    std::thread::sleep(Duration::from_millis(200));
    let names: Vec<&str> = o.sources.iter().map(|k| k.name()).collect();
    println!(
        "sources {} · sysfs {} · workload {} threads (pid {}) · {} cores · {} s per case",
        names.join(","),
        sys.display(),
        o.threads,
        child.id(),
        cores,
        o.seconds
    );
    println!();
    println!("| --sample-every | source | every | reads | CPU per read | source CPU, % of one core | sampler thread, % of one core |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for every in [Duration::from_millis(50), Duration::from_millis(1)] {
        let options = SamplingOptions {
            every,
            disabled: SourceKind::ALL
                .into_iter()
                .filter(|k| !o.sources.contains(k))
                .collect(),
            roots: framelab::sample::Roots {
                sys: sys.clone(),
                ..Default::default()
            },
        };
        let tree = ProcessTree::fixed(Procfs::system(), vec![child.id()]);
        let samples = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = samples.clone();
        let sink = Box::new(move |batch: framelab::sample::Batch| {
            counted.fetch_add(
                batch.samples.len() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            true
        });
        let started = Instant::now();
        let sampler = Sampler::start(options, framelab_probe::monotonic_ns() as i64, tree, sink);
        // Let the sources open before measuring.
        std::thread::sleep(Duration::from_millis(100));
        let cpu0 = thread_cpu_ns("framelab-sampler").unwrap_or(0);
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(o.seconds));
        let cpu1 = thread_cpu_ns("framelab-sampler").unwrap_or(0);
        let wall = t0.elapsed().as_nanos() as f64;
        let statuses = sampler.stop();
        let run_wall = started.elapsed().as_nanos() as f64;
        let thread_pct = (cpu1 - cpu0) as f64 * 100.0 / wall;
        for (i, s) in statuses
            .iter()
            .filter(|s| s.state != SourceState::Disabled)
            .enumerate()
        {
            let every_s = if s.every_ns > 0 {
                format!("{} ms", s.every_ns as f64 / 1e6)
            } else {
                "-".into()
            };
            let (per_read, pct) = if s.reads > 0 {
                (
                    format!("{:.1} µs", s.cpu_ns as f64 / s.reads as f64 / 1e3),
                    format!(
                        "{:.3}%",
                        s.cpu_ns as f64 * 100.0
                            / (if s.wall_ns > 0 {
                                s.wall_ns as f64
                            } else {
                                run_wall
                            })
                    ),
                )
            } else {
                ("-".into(), "-".into())
            };
            let whole = if i == 0 {
                format!("**{thread_pct:.3}%**")
            } else {
                String::new()
            };
            println!(
                "| {} | {} {} | {every_s} | {} | {per_read} | {pct} | {whole} |",
                humantime::format_duration(every),
                s.source,
                match s.state {
                    SourceState::On => "",
                    SourceState::Off => "(off)",
                    SourceState::Stopped => "(stopped)",
                    SourceState::Disabled => "(disabled)",
                },
                s.reads
            );
            if s.state != SourceState::On {
                eprintln!("  {}: {}", s.source, s.detail);
            }
        }
        eprintln!(
            "  {}: {} samples recorded",
            humantime::format_duration(every),
            samples.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}
