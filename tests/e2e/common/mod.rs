//! Helpers for end-to-end tests: the framelab binary, the example programs, run files.
#![allow(dead_code)]

pub mod bpftrace_text;
pub mod json;
pub mod postgres;
pub mod proc_stat;
pub mod session;
pub mod store;
pub mod watchdog;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn framelab() -> Command {
    watchdog::arm();
    let mut command = Command::new(env!("CARGO_BIN_EXE_framelab"));
    command.env("NO_COLOR", "1");
    command
}

/// An example program built by `cargo test` (target/<profile>/examples/<name>).
pub fn example(name: &str) -> String {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "example {name} not built at {}: run `cargo test` (it builds examples)",
        path.display()
    );
    // `cargo test --test X` does not rebuild examples: refuse a stale one rather than test old code.
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(format!("{name}.rs"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(built), Some(written)) = (modified(&path), modified(&source)) {
        assert!(built >= written, "example {name} is older than its source: run `cargo build --examples` (or plain `cargo test`)");
    }
    path.to_string_lossy().into_owned()
}

/// Builds the SDK's static library the way a C user would (`cargo build -p framelab-probe`),
/// into a target directory of its own so it never waits on the `cargo test` that runs this;
/// the C tests link it.
pub fn probe_static_lib() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().unwrap();
    let target_dir = exe.ancestors().nth(3).unwrap().join("c-abi-test");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--offline", "-p", "framelab-probe", "--target-dir"])
        .arg(&target_dir)
        .current_dir(manifest)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building framelab-probe failed");
    target_dir.join("debug").join("libframelab_probe.a")
}

/// Compiles the C `code` (written to `dir/NAME.c`) into `dir/out` with `$CC` (else `cc`)
/// and `flags`: the output's path, or what the compiler said.
pub fn try_compile_c(
    dir: &Path,
    name: &str,
    code: &str,
    flags: &[&str],
    out: &str,
) -> Result<PathBuf, String> {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, code).unwrap();
    let output = dir.join(out);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(flags)
        .arg(&source)
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap_or_else(|e| panic!("a C compiler ({cc}) is needed for this test: {e}"));
    match built.status.success() {
        true => Ok(output),
        false => Err(format!("{cc} failed on {name}.c: {}", stderr(&built))),
    }
}

/// `try_compile_c` where a failure fails the test.
pub fn compile_c(dir: &Path, name: &str, code: &str, flags: &[&str], out: &str) -> PathBuf {
    try_compile_c(dir, name, code, flags, out).unwrap_or_else(|e| panic!("{e}"))
}

/// Sum of the counts of bpftrace-style bucket lines (`[lo, hi)   N |@@@|`).
pub fn bucket_total(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with('[') || l.starts_with('('))
        .filter_map(|l| {
            l.split('|')
                .next()?
                .split_whitespace()
                .last()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

pub fn temp_run(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(format!("{name}.framelab"))
}

pub fn run(args: &[&str]) -> Output {
    framelab().args(args).output().expect("framelab runs")
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn load(path: &Path) -> framelab::model::Run {
    framelab::store::load_run(path, None).expect("run file loads")
}

/// The one line framelab printed as an error (ignoring the command's own output).
pub fn error_line(output: &Output) -> String {
    let text = stderr(output);
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(
        errors.len(),
        1,
        "expected exactly one error line, got: {text}"
    );
    errors[0].to_owned()
}

/// Runs `framelab run [framelab_args] -o DIR/NAME.framelab -- testprog [program_args]`.
pub fn run_testprog(
    dir: &tempfile::TempDir,
    name: &str,
    framelab_args: &[&str],
    program_args: &[&str],
) -> (Output, PathBuf) {
    run_testprog_with_env(dir, name, &[], framelab_args, program_args)
}

/// `run_testprog` with environment variables set for framelab (`FRAMELAB_SCHED`, …).
pub fn run_testprog_with_env(
    dir: &tempfile::TempDir,
    name: &str,
    env: &[(&str, &str)],
    framelab_args: &[&str],
    program_args: &[&str],
) -> (Output, PathBuf) {
    let path = temp_run(dir, name);
    let out = framelab()
        .envs(env.iter().copied())
        .arg("run")
        .args(framelab_args)
        .arg("-o")
        .arg(&path)
        .arg("--")
        .arg(example("testprog"))
        .args(program_args)
        .output()
        .expect("framelab runs");
    (out, path)
}

/// `run_testprog` for a run that must succeed; returns the loaded run.
pub fn record_testprog(
    framelab_args: &[&str],
    program_args: &[&str],
) -> (Output, framelab::model::Run) {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(&dir, "run", framelab_args, program_args);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    (out, run)
}

/// Records with each of `room` in turn (a --duration, say) until `came` holds for what was
/// recorded: a frame (or a print) the test needs before the end of a short run comes only
/// after the command's start-up, which a loaded machine can stretch over the whole run.
/// Such a run proves nothing, so it is made again with more room; the last one is returned
/// whatever it holds, for the test's assertions to say what is missing. The room, not the
/// machine's speed, decides.
pub fn record_with_room<R: Copy, T>(
    room: &[R],
    mut record: impl FnMut(R) -> T,
    came: impl Fn(&T) -> bool,
) -> T {
    let (last, tries) = room.split_last().expect("some room to try");
    for &r in tries {
        let recorded = record(r);
        if came(&recorded) {
            return recorded;
        }
    }
    record(*last)
}

/// xorshift64: deterministic jitter for generated runs, without a dependency.
pub struct Jitter(pub u64);

impl Jitter {
    /// The next value in `0..below`.
    pub fn next(&mut self, below: i64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below as u64) as i64
    }
}

/// The Python the Python-driven tests use: `$FRAMELAB_TEST_PYTHON`, else `python3`.
pub fn python() -> String {
    std::env::var("FRAMELAB_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The interpreter `python()` names itself (`sys.executable`), not a version manager's
/// shim that starts a shell first: a process started with it is the script's.
pub fn python_executable() -> Option<String> {
    let out = Command::new(python())
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// `child`'s exit status once it has exited, or `None` while it still runs after `limit`:
/// a guard far above what the test waits for, never a measure, so a hang fails the test
/// instead of hanging it.
pub fn exited_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A process the test started, killed and reaped on drop whatever happens.
pub struct Started(pub std::process::Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` (its standard output piped) and waits for its first line, `ready`.
pub fn start_ready(command: &mut Command) -> Started {
    use std::io::BufRead;
    watchdog::arm();
    let mut child = Started(
        command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

/// A Python-driven test that cannot run: a failure where CI requires Python
/// (`FRAMELAB_REQUIRE_PYTHON=1`), else `SKIPPED test: why; what would run it` on stderr,
/// where a person sees it (the harness captures print!).
pub fn python_skip_or_fail(test: &str, why: &str, what_would_run_it: &str) {
    if std::env::var_os("FRAMELAB_REQUIRE_PYTHON").is_some_and(|v| v == "1") {
        panic!("{test} cannot run: {why} (FRAMELAB_REQUIRE_PYTHON=1)");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {why}; {what_would_run_it}"
    );
}

/// The data an HTML page embeds (its `framelab-data` block), parsed.
pub fn page_data(path: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(path).unwrap();
    let open = r#"<script type="application/json" id="framelab-data">"#;
    let start = html.find(open).expect("the page has its data block") + open.len();
    let len = html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..start + len]).unwrap()
}

/// `framelab report PATH --format json`, which must succeed, parsed.
pub fn report_json(path: &Path) -> serde_json::Value {
    let out = framelab()
        .args(["report", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// Two options that cannot go together: clap's usage error (exit 2) says so.
pub fn assert_conflict(out: &Output) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    assert!(
        stderr(out).contains("cannot be used with"),
        "{}",
        stderr(out)
    );
}

/// A command's standard output and error, one after the other.
pub fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A Python virtual environment at `work/venv` (kept between runs: pip's downloads are
/// reused) and its interpreter, or why there cannot be one (no Python 3.9 or later, no
/// `venv` module).
pub fn python_venv(work: &Path) -> Result<PathBuf, String> {
    let version = Command::new(python())
        .args([
            "-c",
            "import sys; assert sys.version_info >= (3, 9), sys.version",
        ])
        .output();
    match version {
        Err(e) => return Err(format!("{} cannot be started: {e}", python())),
        Ok(out) if !out.status.success() => {
            return Err(format!(
                "{} is older than 3.9: {}",
                python(),
                output_text(&out).trim()
            ))
        }
        Ok(_) => {}
    }
    let dir = work.join("venv");
    let bin = dir.join("bin/python");
    // A venv left by an earlier run whose Python has gone (upgraded, removed) is made again.
    let works = |bin: &Path| {
        Command::new(bin)
            .args(["-c", "pass"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works(&bin) {
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new(python())
            .args(["-m", "venv"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("{} cannot be started: {e}", python()))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "`{} -m venv` failed: {}",
                python(),
                output_text(&out).trim()
            ));
        }
    }
    Ok(bin)
}
