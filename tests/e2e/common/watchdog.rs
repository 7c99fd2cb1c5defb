//! A watchdog for this test program: no test here runs a process for minutes, so one that
//! has is hung, and a test waiting on it would hold CI until CI's own limit, printing nothing
//! that names it. Past [`HUNG_AFTER`] a process this program started, one below it, or one
//! holding open a pipe this program reads is described on stderr (command line, age, state,
//! what each of its threads waits in) and killed: the test waiting on it fails, naming it.
//! Past [`SUITE_LIMIT`] the whole program prints every process on the machine and exits, so a
//! test stuck on something else still ends the run with a listing of what was running.

use std::collections::{HashMap, HashSet};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The longest any process of one test may live (the slowest test, installing the Python
/// package, takes about two minutes on a loaded 2-core VM).
const HUNG_AFTER: Duration = Duration::from_secs(600);
/// The longest this whole program may run (about 9 minutes on a loaded 2-core VM).
const SUITE_LIMIT: Duration = Duration::from_secs(45 * 60);
const EVERY: Duration = Duration::from_secs(10);

/// Starts the watchdog, once per test program; every helper that starts a process calls it.
pub fn arm() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let armed = Instant::now();
        std::thread::Builder::new()
            .name("e2e-watchdog".into())
            .spawn(move || watch(armed))
            .expect("the watchdog thread starts");
    });
}

fn watch(armed: Instant) {
    let me = std::process::id();
    let mut killed = HashSet::new();
    loop {
        std::thread::sleep(EVERY);
        let table = ProcessTable::read();
        for pid in table.suspects(me, HUNG_AFTER) {
            if killed.insert(pid) {
                eprintln!("{}", table.describe_hang(pid, me));
                // SAFETY: kill on a pid read from /proc a moment ago; at worst it is gone.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
        if armed.elapsed() > SUITE_LIMIT {
            eprintln!(
                "e2e watchdog: the tests ran past {} min; every process now:\n{}",
                SUITE_LIMIT.as_secs() / 60,
                table.listing()
            );
            std::process::exit(124);
        }
    }
}

struct Process {
    ppid: u32,
    state: char,
    /// Clock ticks after boot.
    start_ticks: u64,
}

struct ProcessTable {
    processes: HashMap<u32, Process>,
    uptime_ticks: u64,
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as u64
}

impl ProcessTable {
    fn read() -> ProcessTable {
        let mut processes = HashMap::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The fields after the command name, which is in parentheses and may hold any.
            let Some((_, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let fields: Vec<&str> = rest.split(' ').collect();
            let (Some(state), Some(ppid), Some(start)) = (
                fields.first().and_then(|s| s.chars().next()),
                fields.get(1).and_then(|p| p.parse().ok()),
                fields.get(19).and_then(|s| s.parse().ok()),
            ) else {
                continue;
            };
            processes.insert(
                pid,
                Process {
                    ppid,
                    state,
                    start_ticks: start,
                },
            );
        }
        let uptime_s: f64 = std::fs::read_to_string("/proc/uptime")
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        ProcessTable {
            processes,
            uptime_ticks: (uptime_s * ticks_per_second() as f64) as u64,
        }
    }

    fn age(&self, pid: u32) -> Duration {
        let start = self.processes.get(&pid).map_or(u64::MAX, |p| p.start_ticks);
        let ticks = self.uptime_ticks.saturating_sub(start);
        Duration::from_millis(ticks * 1000 / ticks_per_second())
    }

    fn is_below(&self, mut pid: u32, ancestor: u32) -> bool {
        for _ in 0..64 {
            match self.processes.get(&pid) {
                Some(p) if p.ppid == ancestor => return true,
                Some(p) if p.ppid > 1 => pid = p.ppid,
                _ => return false,
            }
        }
        false
    }

    /// The processes older than `older_than` a test of `me` may be waiting on: its
    /// descendants (zombies left out: they hold nothing), and processes started after it
    /// that hold the writing end of a pipe `me` reads (a daemon that kept a command's output
    /// open after the command ended). Only the old ones' pipes are looked at.
    fn suspects(&self, me: u32, older_than: Duration) -> Vec<u32> {
        let start = |pid: u32| self.processes.get(&pid).map_or(0, |p| p.start_ticks);
        let old: Vec<u32> = (self.processes.iter())
            .filter(|(&pid, p)| {
                pid != me
                    && p.state != 'Z'
                    && start(pid) >= start(me)
                    && self.age(pid) >= older_than
            })
            .map(|(&pid, _)| pid)
            .collect();
        let (mut found, others): (Vec<u32>, Vec<u32>) =
            old.into_iter().partition(|&pid| self.is_below(pid, me));
        if !others.is_empty() {
            let read_pipes = pipes_read_by(me);
            found.extend(
                (others.into_iter())
                    .filter(|&pid| pipes_of(pid).iter().any(|p| read_pipes.contains(p))),
            );
        }
        found
    }

    fn describe_hang(&self, pid: u32, me: u32) -> String {
        let below: Vec<u32> = (self.processes.keys())
            .copied()
            .filter(|&p| self.is_below(p, pid))
            .collect();
        let how = if self.is_below(pid, me) {
            "started by the tests"
        } else {
            "holding open the output of a command a test waits on"
        };
        let mut text = format!(
            "e2e watchdog: a process {how} ran past {} s; killing it, so the test waiting on it \
             fails instead of hanging:",
            HUNG_AFTER.as_secs()
        );
        for p in std::iter::once(pid).chain(below) {
            text.push_str(&format!("\n  {}", self.line(p)));
            for (tid, wait) in waits(p) {
                text.push_str(&format!("\n      thread {tid} waits in {wait}"));
            }
        }
        text
    }

    fn line(&self, pid: u32) -> String {
        let args = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let (ppid, state) = self
            .processes
            .get(&pid)
            .map_or((0, '?'), |p| (p.ppid, p.state));
        format!(
            "pid {pid} (parent {ppid}, state {state}, {} s old): {}",
            self.age(pid).as_secs(),
            args.trim_end()
        )
    }

    fn listing(&self) -> String {
        let mut pids: Vec<u32> = self.processes.keys().copied().collect();
        pids.sort_unstable();
        (pids.into_iter())
            .map(|p| format!("  {}", self.line(p)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Each thread of `pid` with its kernel wait channel and, where readable (root), the
/// innermost frames of its kernel stack.
fn waits(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
    for entry in tasks.into_iter().flatten().flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let read = |what: &str| std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/{what}"));
        let name = read("comm").unwrap_or_default();
        let wchan = read("wchan").unwrap_or_default();
        let stack: Vec<String> = read("stack")
            .unwrap_or_default()
            .lines()
            .take(4)
            .map(|l| l.split_whitespace().nth(1).unwrap_or(l).to_owned())
            .collect();
        out.push((
            tid,
            format!("{} ({}) [{}]", wchan.trim(), name.trim(), stack.join(" < ")),
        ));
    }
    out
}

/// The pipes `pid` has open, by inode.
fn pipes_of(pid: u32) -> Vec<u64> {
    open_pipes(pid)
        .into_iter()
        .map(|(inode, _)| inode)
        .collect()
}

/// The pipes `pid` has open for reading only, by inode.
fn pipes_read_by(pid: u32) -> HashSet<u64> {
    (open_pipes(pid).into_iter())
        .filter(|&(_, reads_only)| reads_only)
        .map(|(inode, _)| inode)
        .collect()
}

/// Each pipe `pid` has open: its inode, and whether it is open for reading only.
fn open_pipes(pid: u32) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"));
    for entry in fds.into_iter().flatten().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let Some(inode) = (target.to_str())
            .and_then(|t| t.strip_prefix("pipe:["))
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let info = format!("/proc/{pid}/fdinfo/{}", entry.file_name().to_string_lossy());
        let flags = std::fs::read_to_string(info)
            .ok()
            .and_then(|t| {
                let line = t.lines().find(|l| l.starts_with("flags:"))?.to_owned();
                u32::from_str_radix(line.trim_start_matches("flags:").trim(), 8).ok()
            })
            .unwrap_or(u32::MAX);
        out.push((
            inode,
            flags != u32::MAX && flags & libc::O_ACCMODE as u32 == 0,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_daemon_holding_a_finished_commands_output_is_a_suspect_and_described() {
        // The shell ends at once; its background sleep keeps the shell's stdout open.
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 300 & echo $!"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = shell.stdout.take().unwrap();
        shell.wait().unwrap();
        let mut first = [0u8; 32];
        let n = std::io::Read::read(&mut out, &mut first).unwrap();
        let daemon: u32 = String::from_utf8_lossy(&first[..n]).trim().parse().unwrap();

        let me = std::process::id();
        let table = ProcessTable::read();
        let suspects = table.suspects(me, Duration::ZERO);
        let text = table.describe_hang(daemon, me);
        // SAFETY: the daemon this test started.
        unsafe { libc::kill(daemon as i32, libc::SIGKILL) };
        assert!(!table.is_below(daemon, me), "the daemon left the tree");
        assert!(suspects.contains(&daemon), "{daemon} not in {suspects:?}");
        assert!(
            text.contains("holding open the output of a command a test waits on")
                && text.contains(&format!("pid {daemon} "))
                && text.contains("sleep 300")
                && text.contains("waits in"),
            "{text}"
        );
        assert!(table.age(daemon) < HUNG_AFTER);
    }
}
