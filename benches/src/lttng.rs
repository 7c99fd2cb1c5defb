//! The LTTng anchor of `collector_overhead --vs-lttng`: the same load (R events per second
//! from one thread in 1 ms batches, two integers each) traced by LTTng's user-space tracer
//! in its default channel (4 × 512 KiB sub-buffers, discard mode), and what its daemons
//! (`lttng-sessiond`, `lttng-consumerd` and their helpers) cost meanwhile.
//!
//! Needs `lttng`, `lttng-sessiond`, `babeltrace2` and the UST headers (Debian:
//! `apt-get install lttng-tools liblttng-ust-dev babeltrace2`, see
//! tests/tools/install-lttng.sh) and a C compiler. The producer is benches/lttng/anchor_rate.c.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One traced run.
pub struct Traced {
    pub sent: u64,
    pub recorded: u64,
    pub discarded: u64,
    /// CPU of every process of the session daemon's tree over the producer's run and the
    /// final flush.
    pub daemons_cpu_ns: i64,
    /// The producer's wall time: the window the CPU is a share of.
    pub window_ns: i64,
}

/// A session daemon started for the benchmark, stopped (by its pid) when dropped.
pub struct Lttng {
    daemon: Child,
    work: PathBuf,
    producer: PathBuf,
}

impl Lttng {
    /// Builds the producer and starts a session daemon; a one-line reason when it cannot.
    pub fn start(work: &Path) -> Result<Lttng, String> {
        for tool in ["lttng", "lttng-sessiond", "babeltrace2", "cc"] {
            if !on_path(tool) {
                return Err(format!(
                    "{tool} is not installed: run tests/tools/install-lttng.sh (Debian: apt-get install lttng-tools liblttng-ust-dev babeltrace2 gcc)"
                ));
            }
        }
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("lttng");
        let producer = work.join("anchor_rate");
        let built = Command::new("cc")
            .args(["-O2", "-I"])
            .arg(&source)
            .arg(source.join("anchor_rate.c"))
            .arg("-o")
            .arg(&producer)
            .args(["-llttng-ust", "-ldl"])
            .status()
            .map_err(|e| format!("cc could not run: {e}"))?;
        if !built.success() {
            return Err("the LTTng producer did not build: is liblttng-ust-dev installed?".into());
        }
        let home = work.join("lttng-home");
        std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
        // One already answering would take the producer's events, and the CPU measured
        // (this daemon's) would be nothing.
        let answering = Command::new("lttng")
            .env("LTTNG_HOME", &home)
            .arg("list")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if answering {
            return Err(
                "a session daemon is already running: stop it (pkill lttng-sessiond) and run again"
                    .into(),
            );
        }
        let daemon = Command::new("lttng-sessiond")
            .env("LTTNG_HOME", &home)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("lttng-sessiond could not start: {e}"))?;
        let mut lttng = Lttng {
            daemon,
            work: work.to_owned(),
            producer,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = lttng.daemon.try_wait() {
                return Err(format!("lttng-sessiond ended at once ({status})"));
            }
            if lttng.client(&["list"]).is_ok_and(|s| s.success()) {
                return Ok(lttng);
            }
            if Instant::now() > deadline {
                return Err("lttng-sessiond did not answer within 20 s (is another one running as another user?)".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client(&self, args: &[&str]) -> std::io::Result<std::process::ExitStatus> {
        Command::new("lttng")
            .env("LTTNG_HOME", self.work.join("lttng-home"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
    }

    fn client_output(&self, args: &[&str]) -> String {
        Command::new("lttng")
            .env("LTTNG_HOME", self.work.join("lttng-home"))
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Traces `rate` events per second for `seconds` in a fresh session.
    pub fn trace(&self, rate: u64, seconds: u64) -> Result<Traced, String> {
        let name = format!("framelab-anchor-{rate}");
        let output = self.work.join(&name);
        let _ = std::fs::remove_dir_all(&output);
        let out = format!("--output={}", output.display());
        let steps: [&[&str]; 3] = [
            &["create", name.as_str(), out.as_str()],
            &[
                "enable-event",
                "-u",
                "-s",
                name.as_str(),
                "framelab_anchor:span",
            ],
            &["start", name.as_str()],
        ];
        for step in steps {
            if !self.client(step).is_ok_and(|s| s.success()) {
                return Err(format!("lttng {} failed", step.join(" ")));
            }
        }
        let before = tree_cpu_ns(self.daemon.id());
        let started = Instant::now();
        let produced = Command::new(&self.producer)
            .env("LTTNG_HOME", self.work.join("lttng-home"))
            .args([rate.to_string(), seconds.to_string()])
            .output()
            .map_err(|e| format!("the producer could not run: {e}"))?;
        let window_ns = started.elapsed().as_nanos() as i64;
        // Stopping waits for the consumer to write out what was produced.
        self.client(&["stop", &name]).map_err(|e| e.to_string())?;
        let daemons_cpu_ns = tree_cpu_ns(self.daemon.id()) - before;
        let sent = String::from_utf8_lossy(&produced.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        let listing = self.client_output(&["list", &name]);
        let discarded = listing
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Discarded events:"))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum();
        let _ = self.client(&["destroy", &name]);
        let recorded = count_events(&output);
        let _ = std::fs::remove_dir_all(&output);
        let recorded = recorded?;
        Ok(Traced {
            sent,
            recorded,
            discarded,
            daemons_cpu_ns,
            window_ns,
        })
    }
}

impl Drop for Lttng {
    fn drop(&mut self) {
        // The daemon we started, by its pid: it stops its consumer daemons itself.
        unsafe { libc::kill(self.daemon.id() as i32, libc::SIGTERM) };
        let _ = self.daemon.wait();
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// Events in a trace, as babeltrace2 prints them (one line each); a one-line reason when it
/// cannot read the trace (a count of 0 would read as every event lost).
fn count_events(trace: &Path) -> Result<u64, String> {
    // Into a file, not a pipe: read only after stdout ends, a full pipe would hang both.
    let said_path = trace.with_extension("stderr");
    let said = std::fs::File::create(&said_path).map_err(|e| e.to_string())?;
    let mut child = Command::new("babeltrace2")
        .arg(trace)
        .stdout(Stdio::piped())
        .stderr(said)
        .spawn()
        .map_err(|e| format!("babeltrace2 could not run: {e}"))?;
    let mut lines = 0u64;
    if let Some(stdout) = child.stdout.take() {
        use std::io::BufRead;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, stdout);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            lines += 1;
            line.clear();
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let said = std::fs::read_to_string(&said_path).unwrap_or_default();
    let _ = std::fs::remove_file(&said_path);
    if !status.success() {
        let first = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "babeltrace2 could not read the trace ({status}): {first} (where its plugins are not in the usual place, set BABELTRACE_PLUGIN_PATH)"
        ));
    }
    Ok(lines)
}

/// CPU (ns) of `root` and every process below it, summed over their threads from
/// `/proc/PID/task/TID/schedstat` (nanosecond counters, unlike `stat`'s ticks).
fn tree_cpu_ns(root: u32) -> i64 {
    let mut total = 0;
    for pid in tree(root) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("schedstat");
            let text = std::fs::read_to_string(path).unwrap_or_default();
            total += text
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// `root` and its descendants, from each process's parent in `/proc/PID/stat`.
fn tree(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The parent is the second field after the command name, which ends at the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        index += 1;
    }
    found
}
