//! SDK overhead: ns per recorded span (begin + end) on one thread, against two bare `rdtsc`
//! measured in the same processes, and against established instrumentation crates doing the
//! same job. Run pinned to one core:
//!
//!     cargo build --release -p framelab-benches
//!     taskset -c 0 target/release/probe_overhead [--rounds 9] [--batches 3000] [--iters 2000]
//!
//! Every case runs in a fresh process (the SDK reads its environment once per process, and
//! each library keeps global state), `--rounds` times in rotating order; each process
//! interleaves batches of its case with batches of the baseline and reports both medians.
//! What was recorded is drained between batches, outside the timed region.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use framelab_benches::{arg, interleaved, median, parse_result, print_result, Plan, Sample};

/// A measured case: its name, its row label, and whether it records into a session.
struct Case {
    name: &'static str,
    label: &'static str,
    session: Option<Session>,
}

#[derive(Clone, Copy)]
enum Session {
    /// A session with the default ring, drained between batches.
    Drained,
    /// A 4-record ring never drained: every record takes the drop path.
    Full,
}

const CASES: &[Case] = &[
    Case {
        name: "framelab_span",
        label: "framelab span (Rust guard)",
        session: Some(Session::Drained),
    },
    Case {
        name: "framelab_lap",
        label: "framelab lap (Rust)",
        session: Some(Session::Drained),
    },
    Case {
        name: "framelab_c_span",
        label: "framelab fl_begin+fl_end (C ABI)",
        session: Some(Session::Drained),
    },
    Case {
        name: "framelab_c_lap",
        label: "framelab fl_lap (C ABI)",
        session: Some(Session::Drained),
    },
    Case {
        name: "framelab_off",
        label: "framelab span, no session",
        session: None,
    },
    Case {
        name: "framelab_c_off",
        label: "framelab C span, no session",
        session: None,
    },
    Case {
        name: "framelab_full",
        label: "framelab span, ring full (dropped)",
        session: Some(Session::Full),
    },
    Case {
        name: "tracy",
        label: "tracy-client span! (queue drained)",
        session: None,
    },
    Case {
        name: "tracing_layer",
        label: "tracing: Registry + Vec layer",
        session: None,
    },
    Case {
        name: "tracing_min",
        label: "tracing: minimal Subscriber",
        session: None,
    },
    Case {
        name: "puffin",
        label: "puffin profile_scope!",
        session: None,
    },
    Case {
        name: "fastrace",
        label: "fastrace LocalSpan",
        session: None,
    },
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plan = Plan {
        batches: arg(&args, "--batches", 3000),
        iters: arg(&args, "--iters", 2000),
    };
    match args.iter().position(|a| a == "--case") {
        Some(i) => run_case(&args[i + 1], plan),
        None => orchestrate(plan, arg(&args, "--rounds", 9)),
    }
}

// ---- the orchestrator ----------------------------------------------------------------------

fn orchestrate(plan: Plan, rounds: usize) {
    let cpus = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Cpus_allowed_list:")
                    .map(|v| v.trim().to_owned())
            })
        })
        .unwrap_or_default();
    if cpus.contains(',') || cpus.contains('-') {
        eprintln!("warning: not pinned to one CPU (allowed: {cpus}); run under `taskset -c 0`");
    }
    let mut results: BTreeMap<&str, Vec<Sample>> = BTreeMap::new();
    let mut notes: BTreeMap<&str, String> = BTreeMap::new();
    for round in 0..rounds {
        for k in 0..CASES.len() {
            let case = &CASES[(k + round) % CASES.len()];
            let (sample, note) = spawn_case(case, plan);
            eprintln!(
                "  {:<16} {:>8.2} ns  (2x rdtsc {:.2} ns) {note}",
                case.name, sample.case_ns, sample.base_ns
            );
            results.entry(case.name).or_default().push(sample);
            notes.insert(case.name, note);
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }
    print_table(plan, rounds, &cpus, &results, &notes);
}

fn spawn_case(case: &Case, plan: Plan) -> (Sample, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = if case.name == "tracy" {
        Command::new(exe.with_file_name("tracy_overhead"))
    } else {
        let mut c = Command::new(&exe);
        c.args(["--case", case.name]);
        c
    };
    cmd.args([
        "--batches",
        &plan.batches.to_string(),
        "--iters",
        &plan.iters.to_string(),
    ]);
    cmd.env_remove("FRAMELAB_SESSION")
        .env_remove("FRAMELAB_RING_RECORDS")
        .env_remove("FRAMELAB_CLOCK");
    let dir = case.session.map(|s| {
        let dir =
            std::env::temp_dir().join(format!("fl-bench-{}-{}", std::process::id(), case.name));
        std::fs::create_dir_all(&dir).unwrap();
        // The wakeup word as framelab makes it, saying the collector is awake: the SDK
        // maps it and takes its slow path at each threshold crossing, as under `run`.
        let word = dir.join(framelab_probe::wire::WAKE_FILE);
        std::fs::write(word, [0u8; framelab_probe::wire::WAKE_FILE_BYTES]).unwrap();
        cmd.env("FRAMELAB_SESSION", &dir);
        if let Session::Full = s {
            cmd.env("FRAMELAB_RING_RECORDS", "4");
        }
        dir
    });
    // Holding Tracy's port keeps it from listening: its worker then empties the queue
    // every 10 ms, like a collector that keeps up.
    let _port = (case.name == "tracy").then(|| {
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let v6 = std::net::TcpListener::bind(("::", port)).ok();
        cmd.env("TRACY_PORT", port.to_string());
        (listener, v6)
    });
    let out = cmd.output().unwrap_or_else(|e| {
        panic!(
            "cannot run case {}: {e} (built with `cargo build --release -p framelab-benches`?)",
            case.name
        )
    });
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "case {} failed: {}\n{stdout}",
        case.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, sample, note) = stdout
        .lines()
        .find_map(parse_result)
        .expect("a RESULT line");
    (sample, note)
}

fn print_table(
    plan: Plan,
    rounds: usize,
    cpus: &str,
    results: &BTreeMap<&str, Vec<Sample>>,
    notes: &BTreeMap<&str, String>,
) {
    let med = |name: &str, f: &dyn Fn(&Sample) -> f64| {
        median(&mut results[name].iter().map(f).collect::<Vec<_>>())
    };
    let best = |name: &str| {
        results[name]
            .iter()
            .map(|s| s.case_ns)
            .fold(f64::MAX, f64::min)
    };
    let mut all_bases: Vec<f64> = results.values().flatten().map(|s| s.base_ns).collect();
    let base = median(&mut all_bases);
    let span = med("framelab_span", &|s| s.case_ns);
    println!(
        "\nns per span (begin + end; a lap is one boundary), one thread on CPU {cpus}: median over {rounds} \
         processes of the median of {} batches x {} iterations; best = the fastest process (memory layout \
         differs between processes); x 2 rdtsc = case / baseline within each process",
        plan.batches, plan.iters
    );
    println!("\n| case | ns/span | best | x 2 rdtsc | x framelab span |\n| --- | ---: | ---: | ---: | ---: |");
    let lowest_base = results
        .values()
        .flatten()
        .map(|s| s.base_ns)
        .fold(f64::MAX, f64::min);
    println!(
        "| 2x rdtsc (baseline) | {base:.2} | {lowest_base:.2} | 1.00 | {:.2} |",
        base / span
    );
    for case in CASES {
        let ns = med(case.name, &|s| s.case_ns);
        let ratio = med(case.name, &|s| s.case_ns / s.base_ns);
        println!(
            "| {} | {ns:.2} | {:.2} | {ratio:.2} | {:.2} |",
            case.label,
            best(case.name),
            ns / span
        );
    }
    for (name, note) in notes.iter().filter(|(_, n)| !n.is_empty()) {
        println!("\nnote ({name}): {note}");
    }
    let ratio = |n: &str| med(n, &|s| s.case_ns / s.base_ns);
    let lap = med("framelab_lap", &|s| s.case_ns) / span;
    let off = med("framelab_off", &|s| s.case_ns);
    let others = [
        "tracy",
        "tracing_layer",
        "tracing_min",
        "puffin",
        "fastrace",
    ];
    let cheapest = others
        .iter()
        .map(|n| med(n, &|s| s.case_ns))
        .fold(f64::MAX, f64::min);
    println!("\ntargets (issue 2):");
    let check = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "  span <= 1.3x two rdtsc: {:.2}x, {}",
        ratio("framelab_span"),
        check(ratio("framelab_span") <= 1.3)
    );
    println!("  lap <= 0.7x span: {lap:.2}x, {}", check(lap <= 0.7));
    println!("  disabled <= 1 ns: {off:.2} ns, {}", check(off <= 1.0));
    println!(
        "  cheaper than each library: cheapest other {cheapest:.2} ns, {}",
        check(span < cheapest)
    );
}

// ---- the cases (each in its own process) ---------------------------------------------------

fn run_case(name: &str, plan: Plan) {
    match name {
        "framelab_span" | "framelab_lap" | "framelab_c_span" | "framelab_c_lap"
        | "framelab_full" => framelab_recording(name, plan),
        "framelab_off" | "framelab_c_off" => framelab_off(name, plan),
        "tracing_layer" => tracing_cases::layer(plan),
        "tracing_min" => tracing_cases::minimal(plan),
        "puffin" => puffin_case(plan),
        "fastrace" => fastrace_case::run(plan),
        _ => panic!("unknown case {name}"),
    }
}

fn framelab_recording(name: &str, plan: Plan) {
    use framelab_probe::ffi::{fl_begin, fl_end, fl_lap, fl_laps_start};
    use framelab_probe::{Laps, Stage};
    let stage = Stage::new("stage");
    assert!(
        framelab_probe::enabled(),
        "FRAMELAB_SESSION must name a directory"
    );
    let ring = RingDrain::attach(Path::new(&std::env::var_os("FRAMELAB_SESSION").unwrap()));
    let drain = || {
        if name != "framelab_full" {
            ring.drain()
        }
    };
    let c_stage = stage.id() as u32;
    let sample = match name {
        "framelab_span" | "framelab_full" => interleaved(
            plan,
            |n| {
                for i in 0..n {
                    let _span = stage.span(black_box(i));
                }
            },
            drain,
        ),
        "framelab_lap" => {
            let mut laps = Laps::start(0);
            interleaved(
                plan,
                |n| {
                    for _ in 0..n {
                        laps.lap(stage);
                    }
                },
                drain,
            )
        }
        "framelab_c_span" => interleaved(
            plan,
            |n| {
                for i in 0..n {
                    let span = fl_begin(c_stage, black_box(i));
                    // SAFETY: a valid FlSpan.
                    unsafe { fl_end(&span) };
                }
            },
            drain,
        ),
        _ => {
            let mut laps = fl_laps_start(0);
            interleaved(
                plan,
                |n| {
                    for _ in 0..n {
                        // SAFETY: laps is a live FlLaps.
                        unsafe { fl_lap(&mut laps, c_stage) };
                    }
                },
                drain,
            )
        }
    };
    let note = if name == "framelab_full" {
        format!("dropped={}", ring.dropped())
    } else {
        String::new()
    };
    print_result(name, sample, &note);
}

fn framelab_off(name: &str, plan: Plan) {
    use framelab_probe::ffi::{fl_begin, fl_end};
    let stage = framelab_probe::Stage::new("stage");
    assert!(!framelab_probe::enabled());
    // Cheap enough that a batch needs more iterations to rise above the timer's resolution.
    let plan = Plan {
        iters: plan.iters * 10,
        ..plan
    };
    let c_stage = stage.id() as u32;
    let sample = if name == "framelab_off" {
        interleaved(
            plan,
            |n| {
                for i in 0..n {
                    let _span = stage.span(black_box(i));
                }
            },
            || {},
        )
    } else {
        interleaved(
            plan,
            |n| {
                for i in 0..n {
                    let span = fl_begin(c_stage, black_box(i));
                    // SAFETY: a valid FlSpan.
                    unsafe { fl_end(&span) };
                }
            },
            || {},
        )
    };
    print_result(name, sample, "");
}

/// This thread's ring, mapped a second time so the benchmark can play the collector.
struct RingDrain {
    header: *const framelab_probe::wire::RingHeader,
}

extern "C" {
    fn gettid() -> i32;
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
}

impl RingDrain {
    fn attach(dir: &Path) -> RingDrain {
        use std::os::fd::AsRawFd;
        let _ = framelab_probe::Stage::new("stage").span(0); // makes sure the ring exists
                                                             // SAFETY: plain libc call.
        let path: PathBuf = dir.join(format!("r-{}-{}", std::process::id(), unsafe { gettid() }));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let len = file.metadata().unwrap().len() as usize;
        // SAFETY: mapping a whole ring file shared, read-write (PROT_READ|PROT_WRITE, MAP_SHARED).
        let map = unsafe { mmap(std::ptr::null_mut(), len, 3, 1, file.as_raw_fd(), 0) };
        assert!(map as isize != -1, "mmap failed");
        RingDrain { header: map.cast() }
    }

    /// Consumes everything recorded so far, as the collector does.
    fn drain(&self) {
        use std::sync::atomic::Ordering::{Acquire, Release};
        // SAFETY: the mapping stays for the life of the process.
        let h = unsafe { &*self.header };
        h.tail.store(h.head.load(Acquire), Release);
    }

    fn dropped(&self) -> u64 {
        // SAFETY: as above.
        unsafe { &*self.header }
            .dropped
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

fn puffin_case(plan: Plan) {
    puffin::set_scopes_on(true);
    let sample = interleaved(
        plan,
        |n| {
            for _ in 0..n {
                puffin::profile_scope!("stage");
            }
        },
        // A frame mark hands the thread's stream to the global profiler (no sink: discarded).
        || puffin::GlobalProfiler::lock().new_frame(),
    );
    print_result("puffin", sample, "");
}

mod tracing_cases {
    //! tracing with a recording layer that stores each span's enter and exit times (rdtsc,
    //! the cheapest clock) into a thread-local Vec; and, as the floor of what tracing can
    //! cost, a minimal Subscriber doing the same without the Registry. Spans carry no frame
    //! field: less than framelab records, in tracing's favour.

    use super::*;
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};
    use tracing_subscriber::layer::{Context, SubscriberExt};
    use tracing_subscriber::Layer;

    thread_local! {
        static TIMES: RefCell<Vec<(u64, u64)>> = RefCell::new(Vec::with_capacity(1 << 16));
        static NEXT_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
    }

    fn stamp(id: &Id) {
        TIMES.with(|t| {
            t.borrow_mut()
                .push((id.into_u64(), framelab_benches::rdtsc()))
        });
    }

    fn clear() {
        TIMES.with(|t| t.borrow_mut().clear());
    }

    struct Recorder;

    impl<S: Subscriber> Layer<S> for Recorder {
        fn on_enter(&self, id: &Id, _: Context<'_, S>) {
            stamp(id);
        }
        fn on_exit(&self, id: &Id, _: Context<'_, S>) {
            stamp(id);
        }
    }

    fn spans(n: u64) {
        for _ in 0..n {
            let _span = tracing::info_span!("stage").entered();
        }
    }

    pub fn layer(plan: Plan) {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Recorder))
            .unwrap();
        print_result("tracing_layer", interleaved(plan, spans, clear), "");
    }

    struct Minimal;

    impl Subscriber for Minimal {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(NEXT_ID.with(|n| n.replace(n.get() + 1)))
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, id: &Id) {
            stamp(id);
        }
        fn exit(&self, id: &Id) {
            stamp(id);
        }
    }

    pub fn minimal(plan: Plan) {
        tracing::subscriber::set_global_default(Minimal).unwrap();
        print_result("tracing_min", interleaved(plan, spans, clear), "");
    }
}

mod fastrace_case {
    //! fastrace's cheapest span: a LocalSpan under a local parent. The root span of each batch
    //! is made and submitted between batches, outside the timed region.

    use super::*;
    use fastrace::collector::{Config, Reporter, SpanContext, SpanRecord};
    use fastrace::local::LocalParentGuard;
    use fastrace::prelude::{LocalSpan, Span};

    struct Discard;

    impl Reporter for Discard {
        fn report(&mut self, spans: Vec<SpanRecord>) {
            black_box(spans);
        }
    }

    pub fn run(plan: Plan) {
        fastrace::set_reporter(Discard, Config::default());
        let root: RefCell<Option<(LocalParentGuard, Span)>> = RefCell::new(None);
        let new_root = || {
            let span = Span::root("batch", SpanContext::random());
            (span.set_local_parent(), span)
        };
        *root.borrow_mut() = Some(new_root());
        let batches = std::cell::Cell::new(0u32);
        let between = || {
            let old = root.borrow_mut().take();
            drop(old); // the guard first, then the root: submits the batch's spans
            *root.borrow_mut() = Some(new_root());
            batches.set(batches.get() + 1);
            if batches.get().is_multiple_of(64) {
                fastrace::flush();
            }
        };
        let sample = interleaved(
            plan,
            |n| {
                for _ in 0..n {
                    let _span = LocalSpan::enter_with_local_parent("stage");
                }
            },
            between,
        );
        print_result("fastrace", sample, "");
    }
}
