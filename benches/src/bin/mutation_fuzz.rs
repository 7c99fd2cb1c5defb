//! Mutation fuzzing of the whole command line: real fixtures (tests/fixtures/import),
//! mutated, each through the release binary as a user would run it — `import` (which prints
//! the text report), then `report --format markdown`, `hist` and `export` in all three
//! formats — counting panics, crashes (a signal), hangs (past the timeout), usage errors,
//! clean refusals, control bytes reaching a terminal output, and the peak memory of any
//! one process. Complements the in-process libFuzzer targets in fuzz/ (BENCHMARKS.md,
//! "Mutation fuzzing through the binary").
//!
//! ```sh
//! cargo build --release && cargo build --release -p framelab-benches --bin mutation_fuzz
//! target/release/mutation_fuzz --framelab target/release/framelab --inputs 8000 --seed 1
//! ```
//!
//! Every input is derived from `--seed` and its number, so a finding is reproduced with
//! `--only N` (the input is kept under `--keep DIR`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Options {
    framelab: PathBuf,
    fixtures: PathBuf,
    inputs: usize,
    seed: u64,
    jobs: usize,
    timeout: Duration,
    keep: PathBuf,
    only: Option<usize>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        framelab: PathBuf::from("target/release/framelab"),
        fixtures: PathBuf::from("tests/fixtures/import"),
        inputs: 8000,
        seed: 1,
        jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        timeout: Duration::from_secs(30),
        keep: PathBuf::from("target/mutation-fuzz"),
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--framelab" => o.framelab = PathBuf::from(value()?),
            "--fixtures" => o.fixtures = PathBuf::from(value()?),
            "--inputs" => o.inputs = number(value()?)? as usize,
            "--seed" => o.seed = number(value()?)?,
            "--jobs" => o.jobs = number(value()?)?.max(1) as usize,
            "--timeout" => o.timeout = Duration::from_secs(number(value()?)?),
            "--keep" => o.keep = PathBuf::from(value()?),
            "--only" => o.only = Some(number(value()?)? as usize),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// splitmix64: a reproducible stream of numbers per input, nothing more is needed here.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

struct Fixture {
    name: String,
    /// As stored (gzip-compressed for some).
    raw: Vec<u8>,
    /// Decompressed, when it was compressed.
    plain: Option<Vec<u8>>,
}

fn load_fixtures(dir: &Path) -> Vec<Fixture> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the fixtures directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|path| {
            let raw = std::fs::read(&path).unwrap();
            let plain = raw.starts_with(&[0x1f, 0x8b]).then(|| {
                let mut out = Vec::new();
                flate2_free_gunzip(&path, &mut out);
                out
            });
            Fixture {
                name: path.file_name().unwrap().to_string_lossy().into_owned(),
                raw,
                plain,
            }
        })
        .collect()
}

/// Decompresses with the system's gzip: this crate has no gzip dependency of its own.
fn flate2_free_gunzip(path: &Path, out: &mut Vec<u8>) {
    let mut child = Command::new("gzip")
        .args(["-dc"])
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip on PATH");
    child.stdout.take().unwrap().read_to_end(out).unwrap();
    child.wait().unwrap();
}

const INTERESTING: &[u8] = b"\0\xff\n\r,\"{}[]:-9.e\x1b\\ \t";
const NUMBERS: &[&str] = &[
    "99999999999999999999999",
    "-1",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "NaN",
    "0",
    "0.0000001",
    "4294967295",
];

/// One to four mutations of `data`, `other` a second fixture to splice from.
fn mutate(data: &mut Vec<u8>, other: &[u8], rng: &mut Rng) {
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(9) {
            0 => {
                for _ in 0..1 + rng.below(8) {
                    if len > 0 {
                        let at = rng.below(len);
                        data[at] ^= 1 << rng.below(8);
                    }
                }
            }
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 if len > 0 => {
                let at = rng.below(len);
                let n = (1 + rng.below(64)).min(len - at);
                data.drain(at..at + n);
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let n = (1 + rng.below(256)).min(len - at);
                let copy = data[at..at + n].to_vec();
                let to = rng.below(len);
                data.splice(to..to, copy);
            }
            4 if len > 0 => data.truncate(rng.below(len)),
            5 if !other.is_empty() => {
                let at = rng.below(other.len());
                let n = (1 + rng.below(512)).min(other.len() - at);
                let to = rng.below(len + 1);
                data.splice(to..to, other[at..at + n].iter().copied());
            }
            6 => {
                // A run of digits replaced by an extreme number.
                let digits: Vec<usize> = (0..len).filter(|&i| data[i].is_ascii_digit()).collect();
                if let Some(&start) = digits.get(rng.below(digits.len().max(1))) {
                    let end = (start..len)
                        .find(|&i| !data[i].is_ascii_digit())
                        .unwrap_or(len);
                    let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes().to_vec();
                    data.splice(start..end, number);
                }
            }
            7 if len > 0 => {
                // A line repeated many times.
                let at = rng.below(len);
                let start = data[..at]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let end = data[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(len, |i| at + i + 1);
                let line = data[start..end].to_vec();
                let times = 1 + rng.below(200);
                data.splice(end..end, line.repeat(times));
            }
            _ => {
                // A hostile name: escapes, a newline, a long run.
                let at = rng.below(len + 1);
                let text: &[u8] = match rng.below(3) {
                    0 => b"\x1b]0;pwned\x07\x1b[2J",
                    1 => b"\"name\":\"\\u001b[2J\"",
                    _ => b"|*_`<b>",
                };
                data.splice(at..at, text.iter().copied());
            }
        }
    }
}

/// How one process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Ok,
    Refused,
    Usage,
    Panic,
    Signal(i32),
    Hang,
}

struct Ran {
    end: End,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    max_rss_kib: i64,
}

/// Runs framelab with `args`, killed past `timeout`. Reaped with `wait4` (for its peak
/// RSS), not through the `Child`.
#[allow(clippy::zombie_processes)]
fn run(framelab: &Path, args: &[&str], timeout: Duration) -> Ran {
    let mut child = Command::new(framelab)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("framelab starts");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let pid = child.id() as i32;
    let started = Instant::now();
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut hung = false;
    loop {
        // SAFETY: waits for the child spawned above (std never reaps it: not waited on).
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        if started.elapsed() > timeout && !hung {
            hung = true;
            // SAFETY: kills our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let stdout = reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    let end = if hung {
        End::Hang
    } else if libc::WIFSIGNALED(status) {
        End::Signal(libc::WTERMSIG(status))
    } else {
        match libc::WEXITSTATUS(status) {
            0 => End::Ok,
            _ if String::from_utf8_lossy(&stderr).contains("panicked") => End::Panic,
            1 | 3 => End::Refused,
            2 => End::Usage,
            _ => End::Panic,
        }
    };
    Ran {
        end,
        stdout,
        stderr,
        max_rss_kib: usage.ru_maxrss,
    }
}

#[derive(Default)]
struct Tally {
    inputs: usize,
    processes: usize,
    imported: usize,
    refused: usize,
    usage: usize,
    panics: usize,
    signals: usize,
    hangs: usize,
    control_bytes: usize,
    max_rss_kib: i64,
    findings: Vec<String>,
}

const FORMATS: &[&str] = &[
    "chrome",
    "perfetto",
    "wayland",
    "presentmon",
    "mangohud",
    "ffmpeg",
    "bpftrace",
    "csv",
    "jsonl",
];

fn one_input(o: &Options, fixtures: &[Fixture], n: usize, tally: &Mutex<Tally>) {
    let mut rng = Rng(o.seed ^ (n as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let f = &fixtures[rng.below(fixtures.len())];
    let other = &fixtures[rng.below(fixtures.len())];
    // Compressed fixtures: mostly the content, sometimes the gzip bytes themselves.
    let mut data = match &f.plain {
        Some(plain) if rng.below(5) != 0 => plain.clone(),
        _ => f.raw.clone(),
    };
    mutate(
        &mut data,
        other.plain.as_ref().unwrap_or(&other.raw),
        &mut rng,
    );
    let dir = std::env::temp_dir().join(format!("framelab-mfuzz-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join(format!("in-{}", f.name));
    std::fs::write(&input, &data).unwrap();
    let run_file = dir.join("run.framelab");
    let (input_s, run_s) = (input.to_string_lossy(), run_file.to_string_lossy());
    let mut import: Vec<&str> = vec!["import", &input_s, "-o", &run_s];
    if rng.below(2) == 0 {
        import.push("--skip-bad");
    }
    if rng.below(5) == 0 {
        import.extend(["--format", FORMATS[rng.below(FORMATS.len())]]);
    }
    let mut steps: Vec<(Vec<String>, Ran)> = Vec::new();
    let first = run(&o.framelab, &import, o.timeout);
    let imported = first.end == End::Ok;
    steps.push((import.iter().map(|s| s.to_string()).collect(), first));
    if imported {
        let out = dir.join("export");
        let out_s = out.to_string_lossy();
        let later: Vec<Vec<&str>> = vec![
            vec!["report", &run_s, "--format", "markdown"],
            vec!["hist", &run_s],
            vec!["export", &run_s, "--format", "perfetto", "-o", &out_s],
            vec!["export", &run_s, "--format", "chrome", "-o", &out_s],
            vec!["export", &run_s, "--format", "csv", "-o", &out_s],
        ];
        for args in later {
            let ran = run(&o.framelab, &args, o.timeout);
            steps.push((args.iter().map(|s| s.to_string()).collect(), ran));
        }
    }
    let mut t = tally.lock().unwrap();
    t.inputs += 1;
    t.imported += usize::from(imported);
    let mut finding = None;
    for (args, ran) in &steps {
        t.processes += 1;
        t.max_rss_kib = t.max_rss_kib.max(ran.max_rss_kib);
        let text_output = args[0] != "export" && !args.contains(&"json".to_string());
        let control = text_output && (ran.stdout.contains(&0x1b) || ran.stderr.contains(&0x1b));
        t.control_bytes += usize::from(control);
        match ran.end {
            End::Ok => {}
            End::Refused => t.refused += 1,
            End::Usage => t.usage += 1,
            End::Panic => t.panics += 1,
            End::Signal(_) => t.signals += 1,
            End::Hang => t.hangs += 1,
        }
        if matches!(
            ran.end,
            End::Panic | End::Signal(_) | End::Hang | End::Usage
        ) || control
        {
            let err = String::from_utf8_lossy(&ran.stderr);
            finding.get_or_insert(format!(
                "input {n} ({}): {:?}{} on `framelab {}`: {}",
                f.name,
                ran.end,
                if control {
                    ", control byte in the output"
                } else {
                    ""
                },
                args.join(" "),
                err.lines()
                    .find(|l| l.contains("panicked") || l.starts_with("error"))
                    .unwrap_or("")
            ));
        }
    }
    if let Some(finding) = finding {
        let kept = o.keep.join(format!("input-{n}-{}", f.name));
        let _ = std::fs::create_dir_all(&o.keep);
        let _ = std::fs::write(&kept, &data);
        t.findings.push(finding);
    }
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mutation_fuzz: {e}");
            std::process::exit(2);
        }
    };
    let fixtures = load_fixtures(&o.fixtures);
    assert!(
        !fixtures.is_empty(),
        "no fixtures in {}",
        o.fixtures.display()
    );
    let tally = Mutex::new(Tally::default());
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    let inputs: Vec<usize> = match o.only {
        Some(n) => vec![n],
        None => (0..o.inputs).collect(),
    };
    std::thread::scope(|s| {
        for _ in 0..o.jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&n) = inputs.get(i) else { break };
                one_input(&o, &fixtures, n, &tally);
                if i > 0 && i.is_multiple_of(1000) {
                    eprintln!(
                        "mutation_fuzz: {i} inputs, {:.0} s",
                        started.elapsed().as_secs_f64()
                    );
                }
            });
        }
    });
    let t = tally.into_inner().unwrap();
    println!(
        "mutation_fuzz: {} fixtures, seed {}, {} inputs mutated, {} processes in {:.0} s ({} jobs)",
        fixtures.len(),
        o.seed,
        t.inputs,
        t.processes,
        started.elapsed().as_secs_f64(),
        o.jobs
    );
    println!(
        "  imported {} · refused cleanly {} · usage errors {} · panics {} · killed by a signal {} · hangs (> {} s) {} · control bytes in a text output {} · peak RSS of one process {:.0} MiB",
        t.imported,
        t.refused,
        t.usage,
        t.panics,
        t.signals,
        o.timeout.as_secs(),
        t.hangs,
        t.control_bytes,
        t.max_rss_kib as f64 / 1024.0
    );
    for f in &t.findings {
        println!("  finding: {f}");
    }
    if !t.findings.is_empty() {
        println!("  inputs kept in {}", o.keep.display());
        std::process::exit(1);
    }
}
