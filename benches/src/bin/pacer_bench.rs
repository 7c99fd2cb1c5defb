//! Pacer precision and cost: at a target rate (175 fps by default), how late each frame
//! starts against its absolute deadline, and how much of a core the waiting takes, for
//!
//! - `pacer hybrid`: the SDK's `Pacer` (sleep, then spin an adaptive window);
//! - `pacer sleep`: the same grid, one absolute `clock_nanosleep` per frame;
//! - `nanosleep`: plain relative `nanosleep` for the time left to the same deadline, default
//!   timer slack: what a hand-written loop with `std::thread::sleep` does.
//!
//! Blocks of each variant alternate (rotating order, `--rounds` rounds of `--seconds` each)
//! so drift in the machine's load hits all of them alike. Each block runs on a fresh thread
//! with the process's default timer slack and no work between frames. The headline is the
//! ratio of p99 lateness, nanosleep ÷ pacer hybrid, pooled over all rounds and per round.
//!
//!     cargo build --release -p framelab-benches --bin pacer_bench
//!     target/release/pacer_bench [--fps 175] [--rounds 5] [--seconds 4] [--fifo]
//!
//! `--fifo` runs every block's thread as SCHED_FIFO priority 1 (root or CAP_SYS_NICE): how
//! much of the tail is the scheduler's rather than the timer's.

use framelab::analyze::stats::percentile_sorted;
use framelab_benches::arg;
use framelab_probe::monotonic_ns;
use framelab_probe::pacer::{LatePolicy, Pacer, WaitMethod};

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    PacerHybrid,
    PacerSleep,
    Nanosleep,
}

const VARIANTS: [Variant; 3] = [
    Variant::PacerHybrid,
    Variant::PacerSleep,
    Variant::Nanosleep,
];

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::PacerHybrid => "pacer hybrid (SDK default)",
            Variant::PacerSleep => "pacer sleep (clock_nanosleep abs)",
            Variant::Nanosleep => "nanosleep relative, default slack",
        }
    }
}

/// One block: lateness of every frame, ns, and the thread's CPU and wall time.
struct Block {
    lateness_ns: Vec<i64>,
    cpu_ns: u64,
    wall_ns: u64,
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn set_fifo() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: this thread's own handle and a valid parameter.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    if rc != 0 {
        eprintln!(
            "pacer_bench: --fifo: {}",
            std::io::Error::from_raw_os_error(rc)
        );
        std::process::exit(2);
    }
}

fn run_block(variant: Variant, fps: f64, frames: u64, fifo: bool) -> Block {
    std::thread::spawn(move || {
        if fifo {
            set_fifo();
        }
        let mut lateness_ns = Vec::with_capacity(frames as usize);
        let (cpu0, wall0) = (thread_cpu_ns(), monotonic_ns());
        match variant {
            Variant::PacerHybrid | Variant::PacerSleep => {
                let method = if variant == Variant::PacerHybrid {
                    WaitMethod::Hybrid
                } else {
                    WaitMethod::Sleep
                };
                let mut pacer = Pacer::new(fps, LatePolicy::Skip)
                    .expect("valid fps")
                    .with_method(method)
                    .recording(false);
                pacer.wait(0); // anchors the grid
                for frame in 1..=frames {
                    lateness_ns.push(pacer.wait(frame).late_ns as i64);
                }
            }
            Variant::Nanosleep => {
                let period = 1e9 / fps;
                let anchor = monotonic_ns();
                for frame in 1..=frames {
                    let deadline = anchor + (frame as f64 * period) as u64;
                    let now = monotonic_ns();
                    if now < deadline {
                        let left = deadline - now;
                        let ts = libc::timespec {
                            tv_sec: (left / 1_000_000_000) as libc::time_t,
                            tv_nsec: (left % 1_000_000_000) as libc::c_long,
                        };
                        // SAFETY: valid timespec.
                        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
                    }
                    lateness_ns.push(monotonic_ns().saturating_sub(deadline) as i64);
                }
            }
        }
        Block {
            lateness_ns,
            cpu_ns: thread_cpu_ns() - cpu0,
            wall_ns: monotonic_ns() - wall0,
        }
    })
    .join()
    .expect("block thread")
}

struct Stats {
    frames: usize,
    p50_us: f64,
    p99_us: f64,
    p99_9_us: f64,
    max_us: f64,
    cpu_pct: f64,
}

fn stats(lateness_ns: &mut [i64], cpu_ns: u64, wall_ns: u64) -> Stats {
    lateness_ns.sort_unstable();
    let q = |p| percentile_sorted(lateness_ns, p).unwrap_or(f64::NAN) / 1e3;
    Stats {
        frames: lateness_ns.len(),
        p50_us: q(0.5),
        p99_us: q(0.99),
        p99_9_us: q(0.999),
        max_us: q(1.0),
        cpu_pct: cpu_ns as f64 * 100.0 / wall_ns.max(1) as f64,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fps: f64 = arg(&args, "--fps", 175.0);
    let rounds: usize = arg(&args, "--rounds", 5);
    let seconds: f64 = arg(&args, "--seconds", 4.0);
    let frames = (fps * seconds).round().max(1.0) as u64;
    let fifo = args.iter().any(|a| a == "--fifo");
    // SAFETY: reads this thread's timer slack.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    println!(
        "pacer_bench: {fps} fps, {rounds} rounds × {} variants × {frames} frames ({seconds} s), \
         default timer slack {} µs, {} cores, {}",
        VARIANTS.len(),
        slack as f64 / 1e3,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if fifo { "SCHED_FIFO 1" } else { "SCHED_OTHER" }
    );

    let mut pooled: Vec<(Vec<i64>, u64, u64)> = vec![(Vec::new(), 0, 0); VARIANTS.len()];
    let mut round_p99: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len()];
    for round in 0..rounds {
        for k in 0..VARIANTS.len() {
            let v = (round + k) % VARIANTS.len(); // rotate which variant goes first
            let mut block = run_block(VARIANTS[v], fps, frames, fifo);
            let s = stats(&mut block.lateness_ns, block.cpu_ns, block.wall_ns);
            round_p99[v].push(s.p99_us);
            let p = &mut pooled[v];
            p.0.extend_from_slice(&block.lateness_ns);
            p.1 += block.cpu_ns;
            p.2 += block.wall_ns;
        }
        eprintln!(
            "round {}: p99 µs {}",
            round + 1,
            VARIANTS
                .iter()
                .enumerate()
                .map(|(v, var)| format!("{} {:.1}", var.label(), round_p99[v][round]))
                .collect::<Vec<_>>()
                .join(" · ")
        );
    }

    println!();
    println!(
        "| lateness at {fps} fps | frames | p50 µs | p99 µs | p99.9 µs | max µs | CPU % of a core | p99 per round µs |"
    );
    println!("| :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- |");
    let mut p99 = Vec::new();
    for (v, variant) in VARIANTS.iter().enumerate() {
        let (lateness, cpu, wall) = &mut pooled[v];
        let s = stats(lateness, *cpu, *wall);
        p99.push(s.p99_us);
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.2} | {} |",
            variant.label(),
            s.frames,
            s.p50_us,
            s.p99_us,
            s.p99_9_us,
            s.max_us,
            s.cpu_pct,
            round_p99[v]
                .iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|r| round_p99[2][r] / round_p99[0][r])
        .collect();
    ratios.sort_by(f64::total_cmp);
    println!();
    println!(
        "headline: p99 lateness nanosleep ÷ pacer hybrid = {:.1}× pooled; per round median {:.1}× (min {:.1}×, max {:.1}×)",
        p99[2] / p99[0],
        framelab_benches::median(&mut ratios.clone()),
        ratios.first().copied().unwrap_or(f64::NAN),
        ratios.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "targets: pacer hybrid p99 ≤ 20 µs: {}; CPU ≤ 10% of a core: {}",
        if p99[0] <= 20.0 { "met" } else { "NOT met" },
        {
            let (_, cpu, wall) = &pooled[0];
            if (*cpu as f64 * 100.0 / (*wall).max(1) as f64) <= 10.0 {
                "met"
            } else {
                "NOT met"
            }
        }
    );
}
