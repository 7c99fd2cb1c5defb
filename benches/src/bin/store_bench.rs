//! The run file's speed and size: spans written per second, bytes per span on disk,
//! `load_run` time and peak memory, each beside a baseline measured in the same run.
//!
//! cargo build --release -p framelab-benches
//! target/release/store_bench [--spans N] [--dur uniform|log] [--dir DIR] [--keep]
//!
//! The realistic run of the brief: 5 stages per frame (one thread each), frames counting
//! up, starts spread over a 30 s run, durations between 1 µs and 10 ms (uniform by
//! default, the larger encoding; `--dur log` for log-uniform). Spans are generated before
//! timing. Each load runs in a fresh process (`--load FILE`) so its peak RSS is its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use framelab::model::{EndReason, RunMeta, Span, ThreadInfo};
use framelab::store::{load_run, RunWriter};

/// Spans per `spans()` call: a drain's worth at 1M spans/s.
const BATCH: usize = 4096;
/// A commit every this many spans: 4 per second at 1M spans/s.
const COMMIT_EVERY: usize = 250_000;
/// Spans the naive baseline writes (it is slow).
const BASELINE_SPANS: usize = 1_000_000;
const RUN_NS: i64 = 30_000_000_000;

struct Options {
    spans: usize,
    log_durations: bool,
    dir: PathBuf,
    /// Leave the run file in place (for poking at it with sqlite3).
    keep: bool,
}

fn parse_args() -> Result<Option<Options>, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        spans: 10_000_000,
        log_durations: false,
        dir: std::env::temp_dir(),
        keep: false,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--load" => {
                load_in_this_process(Path::new(&value()?));
                return Ok(None);
            }
            "--spans" => options.spans = value()?.parse().map_err(|e| format!("--spans: {e}"))?,
            "--dur" => options.log_durations = value()? == "log",
            "--dir" => options.dir = PathBuf::from(value()?),
            "--keep" => options.keep = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Some(options))
}

/// xorshift64*: reproducible noise without a dependency.
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn realistic_spans(n: usize, log_durations: bool) -> Vec<Span> {
    let frames = (n / 5).max(1) as i64;
    let interval = RUN_NS / frames;
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    (0..n)
        .map(|i| {
            let (frame, stage) = (i as i64 / 5, (i % 5) as u16);
            let dur_ns = if log_durations {
                (1e3 * 1e4f64.powf(noise.unit())) as i64 // 1 µs .. 10 ms, log-uniform
            } else {
                1_000 + (noise.unit() * 9_999_000.0) as i64 // 1 µs .. 10 ms, uniform
            };
            let start_ns =
                frame * interval + i64::from(stage) * interval / 5 + (noise.next() % 50_000) as i64;
            Span {
                frame: frame as u64,
                stage,
                thread: u32::from(stage),
                start_ns,
                dur_ns,
            }
        })
        .collect()
}

/// CPU seconds (user + sys) this process has used.
fn cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU seconds the calling thread has used.
fn thread_cpu_seconds() -> f64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn peak_rss_mib() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn remove_run_file(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// What recording cost, in seconds.
struct WriteCost {
    wall: f64,
    /// The whole process: the calling thread and SQLite's checkpoints on their own thread.
    cpu: f64,
    /// The thread calling `spans()` and `commit()` only.
    caller_cpu: f64,
}

/// Records `spans` the way the collector does.
fn write_with_run_writer(path: &Path, spans: &[Span]) -> anyhow::Result<WriteCost> {
    remove_run_file(path);
    let (t0, cpu0, thread0) = (Instant::now(), cpu_seconds(), thread_cpu_seconds());
    let frames = (spans.len() / 5).max(1) as i64;
    let mut meta = RunMeta {
        name: "store_bench".into(),
        command: vec!["store_bench".into()],
        clock: "mono".into(),
        target_fps: Some(frames as f64 / 30.0),
        budget_ns: Some(RUN_NS / frames),
        window_start_ns: 5_000_000_000,
        window_end_ns: RUN_NS,
        ..RunMeta::default()
    };
    let mut writer = RunWriter::create(path, &meta)?;
    for name in ["capture", "convert", "encode", "packetize", "send"] {
        writer.add_stage(name)?;
        writer.add_thread(&ThreadInfo {
            name: name.into(),
            ..ThreadInfo::default()
        })?;
    }
    let mut since_commit = 0;
    let mut slowest_s = 0f64;
    for batch in spans.chunks(BATCH) {
        let call = Instant::now();
        writer.spans(batch)?;
        since_commit += batch.len();
        if since_commit >= COMMIT_EVERY {
            writer.commit()?;
            since_commit = 0;
        }
        slowest_s = slowest_s.max(call.elapsed().as_secs_f64());
    }
    meta.end_reason = EndReason::Duration;
    writer.update_meta(&meta)?;
    let finish = Instant::now();
    writer.finish()?;
    println!(
        "stalls     slowest spans()+commit() call {:.1} ms; finish() {:.1} ms",
        slowest_s * 1e3,
        finish.elapsed().as_secs_f64() * 1e3
    );
    Ok(WriteCost {
        wall: t0.elapsed().as_secs_f64(),
        cpu: cpu_seconds() - cpu0,
        caller_cpu: thread_cpu_seconds() - thread0,
    })
}

/// The obvious way: one single-row INSERT per span, one transaction, into a table of
/// schema 8's `spans` columns (since schema 9 `spans` is a view over blocks), same settings
/// (foreign keys off, as in `RunWriter`): what blocks buy.
fn write_naively(path: &Path, spans: &[Span]) -> anyhow::Result<f64> {
    remove_run_file(path);
    let writer = RunWriter::create(path, &RunMeta::default())?;
    writer.finish()?;
    let mut conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = OFF;",
    )?;
    let t0 = Instant::now();
    conn.execute_batch(
        "CREATE TABLE span_rows (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, \
         frame INTEGER NOT NULL, stage_id INTEGER NOT NULL, thread_id INTEGER NOT NULL, \
         start_ns INTEGER NOT NULL, dur_ns INTEGER NOT NULL)",
    )?;
    let tx = conn.transaction()?;
    {
        let mut stmt = tx.prepare(
            "INSERT INTO span_rows (run_id, frame, stage_id, thread_id, start_ns, dur_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for s in spans {
            stmt.execute((1, s.frame as i64, s.stage, s.thread, s.start_ns, s.dur_ns))?;
        }
    }
    tx.commit()?;
    Ok(t0.elapsed().as_secs_f64())
}

/// Plain SQL reading every column of every span through the `spans` view (decoded in SQL).
fn scan_in_sqlite(path: &Path) -> anyhow::Result<f64> {
    let conn = rusqlite::Connection::open(path)?;
    let t0 = Instant::now();
    let _: i64 = conn.query_row(
        "SELECT sum(frame + stage_id + thread_id + start_ns + dur_ns + run_id) FROM spans",
        [],
        |r| r.get(0),
    )?;
    Ok(t0.elapsed().as_secs_f64())
}

fn load_in_this_process(path: &Path) {
    let t0 = Instant::now();
    match load_run(path, None) {
        Ok(run) => println!(
            "load_run   {} spans in {:.3} s ({:.0} ns/span), peak RSS {:.0} MiB ({:.1} bytes/span)",
            run.spans.len(),
            t0.elapsed().as_secs_f64(),
            t0.elapsed().as_secs_f64() * 1e9 / run.spans.len().max(1) as f64,
            peak_rss_mib(),
            peak_rss_mib() * 1048576.0 / run.spans.len().max(1) as f64,
        ),
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(1);
        }
    }
}

fn main() -> anyhow::Result<()> {
    let options = match parse_args() {
        Ok(Some(options)) => options,
        Ok(None) => return Ok(()),
        Err(e) => {
            eprintln!("store_bench: {e}");
            std::process::exit(2);
        }
    };
    let n = options.spans;
    let spans = realistic_spans(n, options.log_durations);
    let path = options
        .dir
        .join(format!("store_bench-{}.framelab", std::process::id()));
    println!(
        "{n} spans, 5 stages/frame over 30 s, durations 1 µs–10 ms {}; file {}",
        if options.log_durations {
            "log-uniform"
        } else {
            "uniform"
        },
        path.display()
    );

    let cost = write_with_run_writer(&path, &spans)?;
    let wall = cost.wall;
    let bytes = std::fs::metadata(&path)?.len();
    let per_span_ns = |s: f64| s * 1e9 / n as f64;
    println!(
        "write      {:.2} M spans/s ({:.0} ns/span wall; CPU {:.0} ns/span in all, {:.0} in the \
         calling thread; batches of {BATCH}, a commit every {COMMIT_EVERY}, finish included)",
        n as f64 / wall / 1e6,
        per_span_ns(wall),
        per_span_ns(cost.cpu),
        per_span_ns(cost.caller_cpu)
    );
    println!(
        "           = {:.1}% of a core at 100k spans/s",
        per_span_ns(cost.cpu) * 100_000.0 / 1e9 * 100.0
    );
    println!(
        "size       {bytes} bytes = {:.2} bytes/span (whole file after finish)",
        bytes as f64 / n as f64
    );

    let baseline_path = options
        .dir
        .join(format!("store_bench-{}-naive.framelab", std::process::id()));
    let m = n.min(BASELINE_SPANS);
    let naive = write_naively(&baseline_path, &spans[..m])?;
    println!(
        "baseline   naive single-row INSERTs: {:.2} M spans/s on {m} spans; RunWriter is {:.2}x that",
        m as f64 / naive / 1e6,
        (n as f64 / wall) / (m as f64 / naive)
    );
    remove_run_file(&baseline_path);
    drop(spans);

    let scan = scan_in_sqlite(&path)?;
    println!(
        "sql view   SQLite decoding all span columns through the spans view: {scan:.3} s ({:.0} ns/span)",
        scan * 1e9 / n as f64
    );
    let me = std::env::current_exe()?;
    for _ in 0..3 {
        let status = Command::new(&me).arg("--load").arg(&path).status()?;
        anyhow::ensure!(status.success(), "the load process failed");
    }
    if !options.keep {
        remove_run_file(&path);
    }
    Ok(())
}
