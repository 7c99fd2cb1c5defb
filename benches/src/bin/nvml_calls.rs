//! What each NVML call framelab's sampler makes costs in CPU, through framelab's own binding
//! (`sample::nvml::library`): each call alone after a pause (as at the sampler's 20 Hz, where
//! the driver's cached values have gone stale), then a whole reading in the sampler's order.
//!
//! ```sh
//! cargo build --release -p framelab-benches --bin nvml_calls
//! target/release/nvml_calls [--pause-ms 50] [--repeat 20]
//! ```
//!
//! CPU is this thread's (`CLOCK_THREAD_CPUTIME_ID`), so a driver that sleeps on the GPU does not
//! count, and one that spins does. Needs an NVIDIA GPU and its driver; says so and exits 1
//! without them.

use std::time::Duration;

use framelab::sample::nvml::api::{Clock, Nvml};
use framelab::sample::nvml::library::Library;

fn thread_cpu_us() -> f64 {
    // SAFETY: clock_gettime with a valid out-pointer.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e6 + t.tv_nsec as f64 / 1e3
}

type Call = (&'static str, fn(&Library) -> bool);

/// The sampler's calls on GPU 0, in the order one reading makes them; `true` when it answered.
const CALLS: [Call; 11] = [
    ("clock graphics", |n| {
        n.clock_mhz(0, Clock::Graphics).is_ok()
    }),
    ("clock sm", |n| n.clock_mhz(0, Clock::Sm).is_ok()),
    ("clock memory", |n| n.clock_mhz(0, Clock::Memory).is_ok()),
    ("utilisation", |n| n.utilization_pct(0).is_ok()),
    ("power", |n| n.power_mw(0).is_ok()),
    ("temperature", |n| n.temperature_c(0).is_ok()),
    ("memory used", |n| n.memory_used_bytes(0).is_ok()),
    ("throttle reasons", |n| n.throttle_reasons(0).is_ok()),
    // Made rarely by the sampler where slow (nvml/mod.rs: energy every 10 s, processes every 2 s).
    ("energy counter", |n| n.energy_mj(0).is_ok()),
    ("process utilisation", |n| {
        n.process_utilization(0, 0).is_ok()
    }),
    ("(none: the pause alone)", |_| true),
];

/// The calls every reading makes (the rest are made every 2 s where slow).
const EVERY_READING: usize = 8;

fn main() {
    let (mut pause_ms, mut repeat) = (50u64, 20u32);
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse().ok());
        match (pair[0].as_str(), value) {
            ("--pause-ms", Some(v)) => pause_ms = v,
            ("--repeat", Some(v)) => repeat = v as u32,
            _ => {
                eprintln!("nvml_calls: usage: nvml_calls [--pause-ms MS] [--repeat N]");
                std::process::exit(2);
            }
        }
    }
    let nvml = match Library::open(None) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("nvml_calls: no NVML here: {e}");
            std::process::exit(1);
        }
    };
    let pause = Duration::from_millis(pause_ms);
    println!(
        "GPU 0 {} · driver {} · each call alone after {pause_ms} ms, {repeat} times (µs of CPU a call):",
        nvml.name(0).unwrap_or_default(),
        nvml.driver_version().unwrap_or_default()
    );
    for (name, call) in CALLS {
        let (mut cpu, mut answered) = (0.0, 0);
        for _ in 0..repeat {
            std::thread::sleep(pause);
            let before = thread_cpu_us();
            answered += u32::from(call(&nvml));
            cpu += thread_cpu_us() - before;
        }
        println!(
            "  {name:<24} {:>8.1} µs  answered {answered}/{repeat}",
            cpu / f64::from(repeat)
        );
    }
    let mut cpu = 0.0;
    for _ in 0..repeat {
        std::thread::sleep(pause);
        let before = thread_cpu_us();
        for (_, call) in &CALLS[..EVERY_READING] {
            call(&nvml);
        }
        cpu += thread_cpu_us() - before;
    }
    let per_reading = cpu / f64::from(repeat);
    println!(
        "one reading (the first {EVERY_READING} calls in a row, {pause_ms} ms apart): {per_reading:.1} µs of CPU, {:.2}% of a core at that pace",
        per_reading / (pause_ms as f64 * 10.0)
    );
}
