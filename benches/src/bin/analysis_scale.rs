//! The subcommands that read a whole run, on one run file: `report` (text, JSON, HTML),
//! `whatif --depth 2`, `export --format perfetto`, `compare` of the file with itself (as
//! two variants and as four) and `hist`,
//! each timed (wall, and CPU user + system, steadier on a loaded machine) with its peak RSS
//! (the kernel's `ru_maxrss` of the process), as `/usr/bin/time -f '%e s %M KiB'` gives them. With `--baseline OTHER_FRAMELAB` each
//! command runs with both binaries, alternately (baseline, this, this, baseline for two
//! repeats), and the table gives this/baseline ratios, and whether the two wrote the same
//! bytes (stdout, or the file written).
//!
//! cargo build --release -p framelab-benches --bin analysis_scale --bin framelab
//! target/release/analysis_scale RUN_FILE [--framelab PATH] [--baseline OTHER_FRAMELAB]
//!     [--repeat N] [--only NAME]
//!
//! A 10M-span run: `framelab run -o rate.framelab -- testprog rate 1000000 10`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

struct Options {
    run: PathBuf,
    framelab: PathBuf,
    baseline: Option<PathBuf>,
    repeat: usize,
    /// Only the subcommands whose name contains this.
    only: Option<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let beside = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name("framelab");
    let (mut run, mut framelab, mut baseline, mut repeat) = (None, beside, None, 1);
    let mut only = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--framelab" => framelab = PathBuf::from(value()?),
            "--baseline" => baseline = Some(PathBuf::from(value()?)),
            "--repeat" => repeat = value()?.parse().map_err(|e| format!("--repeat: {e}"))?,
            "--only" => only = Some(value()?),
            other if run.is_none() && !other.starts_with('-') => run = Some(PathBuf::from(other)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Options {
        run: run.ok_or("give the run file to analyse")?,
        framelab,
        baseline,
        repeat: repeat.max(1),
        only,
    })
}

/// One subcommand: its name in the table and its arguments (`RUN` is the run file,
/// `OUT` a file it writes).
const COMMANDS: [(&str, &[&str]); 8] = [
    ("report (text)", &["report", "RUN"]),
    (
        "report --format json",
        &["report", "--format", "json", "RUN"],
    ),
    (
        "report --format html",
        &["report", "--format", "html", "-o", "OUT", "RUN"],
    ),
    ("whatif --depth 2", &["whatif", "--depth", "2", "RUN"]),
    (
        "export --format perfetto",
        &["export", "--format", "perfetto", "-o", "OUT", "RUN"],
    ),
    (
        "compare (the run twice)",
        &["compare", "--variant", "a=RUN", "--variant", "b=RUN"],
    ),
    // Issue 29: memory independent of the number of runs.
    (
        "compare (the run 4 times)",
        &[
            "compare",
            "--variant",
            "a=RUN",
            "--variant",
            "b=RUN",
            "--variant",
            "c=RUN",
            "--variant",
            "d=RUN",
        ],
    ),
    ("hist", &["hist", "RUN"]),
];

/// Wall and CPU seconds and peak RSS (KiB) of one run, and the file holding what it wrote.
/// The output stays on disk: a child forked from this process counts this process's
/// resident memory into its own peak, so nothing big is held here.
struct Measured {
    seconds: f64,
    cpu_seconds: f64,
    max_rss_kib: i64,
    output: PathBuf,
}

/// Whether two files hold the same bytes, read a block at a time.
fn same_bytes(a: &Path, b: &Path) -> Result<bool, String> {
    let open = |p: &Path| std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut a, mut b) = (open(a)?, open(b)?);
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> Result<usize, String> {
    use std::io::Read;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]).map_err(|e| e.to_string())? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn measure(
    framelab: &Path,
    args: &[&str],
    run: &Path,
    dir: &Path,
    keep_as: &str,
) -> Result<Measured, String> {
    let out_file = dir.join("out");
    let stdout_file = dir.join("stdout");
    let _ = std::fs::remove_file(&out_file);
    let args: Vec<std::ffi::OsString> = (args.iter())
        .map(|&a| match a {
            "OUT" => out_file.clone().into_os_string(),
            a => a.replace("RUN", &run.to_string_lossy()).into(),
        })
        .collect();
    let stdout = std::fs::File::create(&stdout_file).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let child = Command::new(framelab)
        .args(&args)
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", framelab.display()))?;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; `status` and `usage` outlive the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let seconds = started.elapsed().as_secs_f64();
    if pid < 0 {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!(
            "{} {:?} failed (status {status})",
            framelab.display(),
            args
        ));
    }
    let written = if out_file.exists() {
        &out_file
    } else {
        &stdout_file
    };
    let kept = dir.join(keep_as);
    std::fs::rename(written, &kept).map_err(|e| e.to_string())?;
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Measured {
        seconds,
        cpu_seconds: cpu(usage.ru_utime) + cpu(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        output: kept,
    })
}

/// The lower time and RSS of the repeats (the least disturbed), and the last output.
fn best(runs: Vec<Measured>) -> Measured {
    let seconds = runs.iter().map(|m| m.seconds).fold(f64::INFINITY, f64::min);
    let cpu_seconds = (runs.iter().map(|m| m.cpu_seconds)).fold(f64::INFINITY, f64::min);
    let max_rss_kib = runs.iter().map(|m| m.max_rss_kib).min().unwrap_or(0);
    let output = runs
        .into_iter()
        .next()
        .map(|m| m.output)
        .unwrap_or_default();
    Measured {
        seconds,
        cpu_seconds,
        max_rss_kib,
        output,
    }
}

fn main() {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("analysis_scale: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = bench(&options) {
        eprintln!("analysis_scale: {e}");
        std::process::exit(1);
    }
}

fn bench(options: &Options) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("analysis_scale.{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    println!(
        "run file {} ({:.0} MB); best of {} each",
        options.run.display(),
        std::fs::metadata(&options.run)
            .map_err(|e| e.to_string())?
            .len() as f64
            / 1e6,
        options.repeat
    );
    match &options.baseline {
        None => println!(
            "{:<26} {:>7} {:>7} {:>9}",
            "subcommand", "s", "CPU s", "peak MiB"
        ),
        Some(_) => println!(
            "{:<26} {:>7} {:>7} {:>9} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7} {:>5}",
            "subcommand",
            "base s",
            "CPU s",
            "MiB",
            "this s",
            "CPU s",
            "MiB",
            "wall ×",
            "CPU ×",
            "RSS ×",
            "same"
        ),
    }
    let chosen = |name: &str| {
        options
            .only
            .as_ref()
            .is_none_or(|o| name.contains(o.as_str()))
    };
    for (name, args) in COMMANDS.into_iter().filter(|(name, _)| chosen(name)) {
        let (mut this, mut base) = (Vec::new(), Vec::new());
        for k in 0..options.repeat {
            // ABBA over repeats: neither binary always goes first.
            let baseline_first = k % 2 == 0;
            if let (Some(b), true) = (&options.baseline, baseline_first) {
                base.push(measure(b, args, &options.run, &dir, "base")?);
            }
            this.push(measure(
                &options.framelab,
                args,
                &options.run,
                &dir,
                "this",
            )?);
            if let (Some(b), false) = (&options.baseline, baseline_first) {
                base.push(measure(b, args, &options.run, &dir, "base")?);
            }
        }
        let this = best(this);
        let mib = |m: &Measured| m.max_rss_kib as f64 / 1024.0;
        if base.is_empty() {
            println!(
                "{name:<26} {:>7.2} {:>7.2} {:>9.0}",
                this.seconds,
                this.cpu_seconds,
                mib(&this)
            );
            continue;
        }
        let base = best(base);
        println!(
            "{name:<26} {:>7.2} {:>7.2} {:>9.0} {:>7.2} {:>7.2} {:>9.0} {:>7.2} {:>7.2} {:>7.3} {:>5}",
            base.seconds,
            base.cpu_seconds,
            mib(&base),
            this.seconds,
            this.cpu_seconds,
            mib(&this),
            this.seconds / base.seconds,
            this.cpu_seconds / base.cpu_seconds,
            mib(&this) / mib(&base),
            if same_bytes(&this.output, &base.output)? {
                "yes"
            } else {
                "NO"
            },
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
