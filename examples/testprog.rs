//! A program the end-to-end tests run under `framelab run`, one behaviour per mode:
//!
//! - `spans N`: N frames of stages `a` (span guard) and `b`, `c` (laps), counter `bytes` = 100 each,
//!   an event `tick` per frame keyed by the frame id; 1 ms per frame.
//! - `abort N`: like `spans`, then aborts (SIGABRT) after N frames.
//! - `forever`: frames until killed.
//! - `until FILE`: frames until FILE exists (a test lets it end once it has seen what it
//!   waits for), then exits 0.
//! - `threads N`: stage `produce` on one thread, `consume` on another, same frame ids.
//! - `processes N`: stage `parent` here, stage `child` in a child process (this program again).
//! - `flood N`: N spans as fast as possible (with a tiny ring this forces drops).
//! - `cpu MS`: burns MS milliseconds of CPU time (not wall time), uninstrumented.
//! - `cpu-report MS FILE`: the same, then writes to FILE what the kernel says it used, just
//!   before exiting: `RUSAGE_US CLOCK_NS` (getrusage user + sys in µs, its CPU clock in ns).
//! - `thread-exit MS GO FILE`: a thread named `burner` waits until GO exists, burns MS
//!   milliseconds of its own CPU time, writes to FILE `TID CLOCK_NS` (its id and its thread
//!   CPU clock, read just before it returns) and ends; the program exits once it has.
//! - `rss MIB FILE`: sleeps 200 ms, then fills MIB MiB of fresh memory and writes to FILE
//!   its peak resident set as the kernel gives it (`VmHWM` of /proc/self/status, bytes),
//!   and exits at once: a peak reached in the last moments of a short life.
//! - `names N`: interns N distinct stage names.
//! - `hog S`: names itself `cpuhog` and spins for S seconds, uninstrumented (a CPU hog the
//!   scheduler tests pin beside a pipeline).
//! - `rate R S`: R spans per second for S seconds, in 1 ms batches (collector benchmarks).
//! - `old-sdk R S`: `rate R S` as a program built with an SDK from before the session's
//!   wakeup word: the word is removed before the first record, so its ring neither says
//!   it wakes the collector nor wakes it.
//! - `work N US`: N frames of stage `work` burning US µs of CPU, then a short `send` stage
//!   (bench and compare tests: one variant does more work per frame than another).
//! - `fail N`: like `work N 100`, then exits with status 1.
//! - `late-start MS N`: sleeps MS ms (a slow start-up), then N frames of stage `step`: the
//!   first one cold (50 ms), the rest 2 ms each.
//! - `late-thread MS`: records nothing for MS ms, then a thread named `late` records 100,000
//!   spans a second (stage `rate`) for 2 s: its ring is made MS ms into the run and holds
//!   0.65 s of them, so it is lossless only if found and drained well before that.
//! - `burst MS N`: N spans of stage `burst` as fast as possible, nothing for MS ms, then N
//!   more as fast as possible (a quiet spell, then a burst).
//! - `slow-middle`: frames until killed, each `grab` (0.2 ms), `encode` (15 ms), `send`
//!   (0.2 ms), span guards all: a stop signal most likely lands inside `encode`.
//! - `hostile N`: N frames on a thread named with a terminal escape, of a stage named
//!   `ESC]0;pwned BEL ESC[2J` (retitle the window, clear the screen) and a stage with a
//!   10,000-character name.
//! - `many-threads N [F]`: N threads alive at once, each F frames (default 20) of stage `t`
//!   (frame ids thread × 100000 + i), joined at the end; prints how many threads recorded
//!   (`enabled()`).
//! - `truncate-ring N` / `scribble-ring N`: a `victim` thread records N frames of stage `v`,
//!   then this program damages that thread's ring in the session directory (truncates the
//!   file to 0 bytes, or writes a head that went back and a drop count of 2^64 − 1 over
//!   its header) while the main thread records N frames of stage `m`; the victim never
//!   records again. Exits 0 without running the victim's exit code (which would touch the
//!   damaged ring).

use framelab_probe::{Counter, Event, Laps, Stage};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("spans");
    let n: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    match mode {
        "spans" => frames(n),
        "abort" => {
            frames(n);
            std::process::abort();
        }
        "forever" => frames(u64::MAX),
        "until" => {
            let file = std::path::PathBuf::from(args.get(2).expect("until FILE"));
            frames_while(|| !file.exists());
        }
        "late-start" => {
            std::thread::sleep(Duration::from_millis(n));
            let frames: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(50);
            let step = Stage::new("step");
            for frame in 0..frames {
                let _span = step.span(frame);
                std::thread::sleep(Duration::from_millis(if frame == 0 { 50 } else { 2 }));
            }
        }
        "slow-middle" => {
            let (grab, encode, send) =
                (Stage::new("grab"), Stage::new("encode"), Stage::new("send"));
            for frame in 0.. {
                for (stage, micros) in [(&grab, 200), (&encode, 15_000), (&send, 200)] {
                    let _span = stage.span(frame);
                    std::thread::sleep(Duration::from_micros(micros));
                }
            }
        }
        "threads" => threads(n),
        "processes" => processes(n),
        "child" => child(n),
        "flood" => {
            let stage = Stage::new("flood");
            for frame in 0..n {
                let _span = stage.span(frame);
            }
        }
        "cpu" => burn_cpu(Duration::from_millis(n)),
        "thread-exit" => {
            let go = std::path::PathBuf::from(args.get(3).expect("thread-exit MS GO FILE"));
            let file = args.get(4).expect("thread-exit MS GO FILE").clone();
            std::thread::Builder::new()
                .name("burner".into())
                .spawn(move || {
                    while !go.exists() {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let end = thread_cpu() + Duration::from_millis(n);
                    let mut x = 1u64;
                    while thread_cpu() < end {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::gettid() };
                    let clock_ns = thread_cpu().as_nanos();
                    std::fs::write(&file, format!("{tid} {clock_ns}\n")).expect("writable");
                })
                .expect("a thread")
                .join()
                .expect("the burner ends");
        }
        "cpu-report" => {
            burn_cpu(Duration::from_millis(n));
            let path = args.get(3).expect("cpu-report MS FILE");
            // SAFETY: valid out-pointers.
            let (rusage_us, clock_ns) = unsafe {
                let mut usage: libc::rusage = std::mem::zeroed();
                libc::getrusage(libc::RUSAGE_SELF, &mut usage);
                let us = |tv: libc::timeval| tv.tv_sec * 1_000_000 + tv.tv_usec;
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts);
                (
                    us(usage.ru_utime) + us(usage.ru_stime),
                    ts.tv_sec * 1_000_000_000 + ts.tv_nsec,
                )
            };
            std::fs::write(path, format!("{rusage_us} {clock_ns}\n")).expect("writable");
        }
        "rss" => {
            let path = args.get(3).expect("rss MIB FILE");
            std::thread::sleep(Duration::from_millis(200));
            let memory = vec![1u8; n as usize * 1024 * 1024];
            std::hint::black_box(&memory);
            let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
            let kib: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .expect("VmHWM");
            std::fs::write(path, format!("{}\n", kib * 1024)).expect("writable");
            std::hint::black_box(&memory);
        }
        "hog" => {
            // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
            unsafe { libc::prctl(libc::PR_SET_NAME, c"cpuhog".as_ptr()) };
            let until = Instant::now() + Duration::from_secs(n);
            let mut x = 1u64;
            while Instant::now() < until {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        "late-thread" => {
            std::thread::sleep(Duration::from_millis(n));
            std::thread::Builder::new()
                .name("late".into())
                .spawn(|| rate(100_000, 2))
                .unwrap()
                .join()
                .unwrap();
        }
        "burst" => {
            let count: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1000);
            let stage = Stage::new("burst");
            for frame in 0..count {
                let _span = stage.span(frame);
            }
            std::thread::sleep(Duration::from_millis(n));
            for frame in count..2 * count {
                let _span = stage.span(frame);
            }
        }
        "rate" => {
            let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
            rate(n, seconds);
        }
        "old-sdk" => {
            if let Some(dir) = std::env::var_os(framelab_probe::wire::SESSION_ENV) {
                let word = std::path::Path::new(&dir).join(framelab_probe::wire::WAKE_FILE);
                std::fs::remove_file(word).expect("the session has a wakeup word");
            }
            let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(10);
            rate(n, seconds);
        }
        "work" => {
            let us: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100);
            work(n, Duration::from_micros(us));
        }
        "fail" => {
            work(n, Duration::from_micros(100));
            std::process::exit(1);
        }
        "hostile" => {
            std::thread::Builder::new()
                .name("\x1b[31mred\x07".into())
                .spawn(move || hostile(n))
                .unwrap()
                .join()
                .unwrap();
        }
        "many-threads" => many_threads(n, args.get(3).and_then(|a| a.parse().ok()).unwrap_or(20)),
        "truncate-ring" => damage_ring(n, Damage::Truncate),
        "scribble-ring" => damage_ring(n, Damage::Scribble),
        "names" => {
            for i in 0..n {
                let _ = Stage::new(&format!("stage{i}")).span(0);
            }
        }
        other => {
            eprintln!("testprog: unknown mode {other}");
            std::process::exit(2);
        }
    }
}

/// The names of issue 11 item 9: a window-title change and a screen clear, and 10 KB.
pub const HOSTILE_STAGE: &str = "\x1b]0;pwned\x07\x1b[2J";

fn hostile(n: u64) {
    let escape = Stage::new(HOSTILE_STAGE);
    let long = Stage::new(&"L".repeat(10_000));
    for frame in 0..n {
        {
            let _span = escape.span(frame);
            burn(Duration::from_micros(100));
        }
        let _span = long.span(frame);
        burn(Duration::from_micros(100));
    }
}

fn frames(n: u64) {
    let mut frame = 0;
    frames_while(|| {
        frame += 1;
        frame <= n
    });
}

/// `spans`' frames, numbered from 0, while `go_on()` says so before each.
fn frames_while(mut go_on: impl FnMut() -> bool) {
    let (a, b, c) = (Stage::new("a"), Stage::new("b"), Stage::new("c"));
    let bytes = Counter::new("bytes");
    let tick = Event::new("tick");
    for frame in (0..).take_while(|_| go_on()) {
        {
            let _span = a.span(frame);
            burn(Duration::from_micros(300));
        }
        let mut laps = Laps::start(frame);
        burn(Duration::from_micros(200));
        laps.lap(b);
        burn(Duration::from_micros(100));
        laps.lap(c);
        bytes.add(frame, 100);
        tick.mark(frame);
        std::thread::sleep(Duration::from_micros(400));
    }
}

fn work(n: u64, per_frame: Duration) {
    let (work, send) = (Stage::new("work"), Stage::new("send"));
    for frame in 0..n {
        {
            let _span = work.span(frame);
            burn_cpu(per_frame);
        }
        let _span = send.span(frame);
        burn(Duration::from_micros(10));
    }
}

/// `per_second` spans for `seconds`, on absolute 1 ms deadlines so the rate holds.
fn rate(per_second: u64, seconds: u64) {
    let stage = Stage::new("rate");
    let per_ms = per_second / 1000;
    let start = Instant::now();
    let mut frame = 0;
    for ms in 0..seconds * 1000 {
        for _ in 0..per_ms {
            let _span = stage.span(frame);
            frame += 1;
        }
        let next = start + Duration::from_millis(ms + 1);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    println!("{frame}");
}

fn threads(n: u64) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<u64>(2);
    let consumer = std::thread::Builder::new()
        .name("consumer".into())
        .spawn(move || {
            let consume = Stage::new("consume");
            for frame in rx {
                let _span = consume.span(frame);
                burn(Duration::from_micros(300));
            }
        })
        .unwrap();
    let produce = Stage::new("produce");
    for frame in 0..n {
        {
            let _span = produce.span(frame);
            burn(Duration::from_micros(300));
        }
        tx.send(frame).unwrap();
    }
    drop(tx);
    consumer.join().unwrap();
}

/// Frames start here and finish in a child process, which reads frame ids from a pipe.
fn processes(n: u64) {
    use std::io::Write;
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args(["child", &n.to_string()])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let parent = Stage::new("parent");
    for frame in 0..n {
        {
            let _span = parent.span(frame);
            burn(Duration::from_micros(300));
        }
        writeln!(pipe, "{frame}").unwrap();
    }
    drop(pipe);
    child.wait().unwrap();
}

fn child(_n: u64) {
    use std::io::BufRead;
    let stage = Stage::new("child");
    for line in std::io::stdin().lock().lines() {
        let frame: u64 = line.unwrap().trim().parse().unwrap();
        let _span = stage.span(frame);
        // Long enough in all that the child is seen alive and accounted.
        burn_cpu(Duration::from_millis(2));
    }
}

fn burn(d: Duration) {
    let until = Instant::now() + d;
    let mut x = 1u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Burns `d` of this process's CPU time, however busy the machine is.
fn burn_cpu(d: Duration) {
    let cpu_now = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    };
    let until = cpu_now() + d;
    let mut x = 1u64;
    while cpu_now() < until {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// The calling thread's CPU clock.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_THREAD_CPUTIME_ID exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// N threads that all exist at the same time (each makes its ring before any exits).
fn many_threads(n: u64, frames: u64) {
    let stage = Stage::new("t");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(n as usize));
    let handles: Vec<_> = (0..n)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let recording = framelab_probe::enabled();
                barrier.wait();
                for i in 0..frames {
                    let _span = stage.span(t * 100_000 + i);
                    burn(Duration::from_micros(20));
                }
                barrier.wait();
                recording
            })
        })
        .collect();
    let recorded = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|&r| r)
        .count();
    println!("{recorded}");
}

#[derive(Clone, Copy, PartialEq)]
enum Damage {
    Truncate,
    Scribble,
}

fn damage_ring(n: u64, damage: Damage) {
    let (done_tx, done_rx) = std::sync::mpsc::channel::<u32>();
    std::thread::Builder::new()
        .name("victim".into())
        .spawn(move || {
            let victim = Stage::new("v");
            for frame in 0..n {
                let _span = victim.span(frame);
                burn(Duration::from_micros(200));
            }
            // SAFETY: plain getter.
            done_tx.send(unsafe { libc::gettid() } as u32).unwrap();
            // Never records or exits again: its ring is about to be damaged.
            loop {
                std::thread::park();
            }
        })
        .unwrap();
    let tid = done_rx.recv().unwrap();
    // Let the collector drain what the victim recorded (not needed for correctness).
    std::thread::sleep(Duration::from_millis(100));
    let dir = std::env::var("FRAMELAB_SESSION").expect("run under framelab");
    let path = format!("{dir}/r-{}-{tid}", std::process::id());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("the victim's ring");
    match damage {
        Damage::Truncate => file.set_len(0).unwrap(),
        Damage::Scribble => {
            use framelab_probe::wire::RingHeader;
            use std::os::fd::AsRawFd;
            use std::sync::atomic::Ordering::SeqCst;
            // SAFETY: mapping the header page of a ring file of this process.
            let header = unsafe {
                let map = libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                );
                assert_ne!(map, libc::MAP_FAILED);
                &*map.cast::<RingHeader>()
            };
            header.dropped.store(u64::MAX, SeqCst);
            header.head.store(3, SeqCst);
        }
    }
    let main = Stage::new("m");
    for frame in 0..n {
        let _span = main.span(frame);
        burn(Duration::from_micros(200));
        std::thread::sleep(Duration::from_micros(300));
    }
    std::process::exit(0);
}
