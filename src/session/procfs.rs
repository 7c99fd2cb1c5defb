//! Reading processes from /proc: CPU times, parent, name, peak RSS, children.

use std::path::{Path, PathBuf};

use crate::sample::files::{PerProcess, Reread};

/// CPU times in nanoseconds; `children_*` are of reaped children (cutime/cstime).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user_ns: i64,
    pub sys_ns: i64,
    pub children_user_ns: i64,
    pub children_sys_ns: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    pub ppid: u32,
    /// The process group.
    pub pgrp: u32,
    pub comm: String,
    /// The state letter: `R`, `S`, `D`, … `Z` for a zombie (exited, not yet reaped: its
    /// times are final).
    pub state: char,
    pub cpu: CpuTimes,
    /// Start time since boot (CLOCK_MONOTONIC-comparable on a machine that never suspended).
    pub start_ns: i64,
}

/// A view of a /proc tree; tests point it at a fixture directory.
#[derive(Clone, Debug)]
pub struct Procfs {
    root: PathBuf,
    ns_per_tick: i64,
    /// Where processes' CPU clocks are read.
    clock: CpuClock,
    /// The real /proc's `stat` files, kept open (see `OpenStats`); `None` for a fixture
    /// tree, whose files do not fail once their process is gone.
    open_stats: Option<OpenStats>,
}

/// Each process's `/proc/PID/stat`, kept open and read again from offset 0: the accounting
/// reads every process at each reading (20 a second), and opening the file by its path
/// (the path walk, the descriptor's allocation, the close) cost three times the read
/// itself (`perf` of an idle run, BENCHMARKS.md "The collector's fixed cost, again").
/// A descriptor stays bound to its process: once the process is reaped the read fails
/// (`ESRCH`), the descriptor is dropped, and the next read opens the path again (which may
/// then name a new process of that pid, as a read by path always did).
#[derive(Debug, Default)]
struct OpenStats(std::cell::RefCell<PerProcess<Reread>>);

impl Clone for OpenStats {
    /// A copy opens its own: descriptors are not shared.
    fn clone(&self) -> OpenStats {
        OpenStats::default()
    }
}

impl OpenStats {
    /// The text of `pid`'s stat file through its kept descriptor, opening it first; `None`
    /// when it cannot be read.
    fn read(&self, root: &Path, pid: u32) -> Option<String> {
        let mut files = self.0.borrow_mut();
        let file = files.get_or_open(pid, || {
            Some(Reread::new(root.join(pid.to_string()).join("stat")))
        })?;
        let text = file.read().ok().map(str::to_owned);
        if text.is_none() {
            files.close(pid);
        }
        text
    }
}

/// Where a process's CPU clock is read.
#[derive(Clone, Debug)]
enum CpuClock {
    /// The kernel's (`clock_getcpuclockid`), next to the real /proc.
    Kernel,
    /// None: a fixture tree.
    None,
    /// A test's readings by pid, which it moves as it likes (the accounting's tests of the
    /// clock's path).
    #[cfg(test)]
    Scripted(ScriptedClocks),
}

/// Each process's CPU clock in nanoseconds, as a test sets it.
#[cfg(test)]
pub type ScriptedClocks = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u32, i64>>>;

/// The system's clock ticks per second (USER_HZ), what /proc counts CPU time in.
pub fn system_ticks_per_second() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as i64
    } else {
        100
    }
}

impl Procfs {
    pub fn system() -> Procfs {
        Procfs {
            clock: CpuClock::Kernel,
            open_stats: Some(OpenStats::default()),
            ..Procfs::at("/proc", system_ticks_per_second())
        }
    }

    pub fn at(root: impl Into<PathBuf>, ticks_per_second: i64) -> Procfs {
        Procfs {
            root: root.into(),
            ns_per_tick: 1_000_000_000 / ticks_per_second.max(1),
            clock: CpuClock::None,
            open_stats: None,
        }
    }

    /// The length of a clock tick, the unit of every CPU time in `stat`.
    pub fn ns_per_tick(&self) -> i64 {
        self.ns_per_tick
    }

    /// The process's CPU clock (`clock_getcpuclockid` + `clock_gettime`): user + sys of all
    /// its threads, live and exited, in nanoseconds; readable for any process (no permission
    /// is checked) and still while it is a zombie. `None` for a fixture tree or a process
    /// that is gone.
    pub fn cpu_clock_ns(&self, pid: u32) -> Option<i64> {
        match &self.clock {
            CpuClock::Kernel => process_cpu_clock_ns(pid),
            CpuClock::None => None,
            #[cfg(test)]
            CpuClock::Scripted(clocks) => clocks.lock().unwrap().get(&pid).copied(),
        }
    }

    /// This tree with CPU clocks a test sets.
    #[cfg(test)]
    pub fn with_cpu_clocks(self, clocks: ScriptedClocks) -> Procfs {
        Procfs {
            clock: CpuClock::Scripted(clocks),
            ..self
        }
    }

    fn path(&self, pid: u32, file: &str) -> PathBuf {
        self.root.join(pid.to_string()).join(file)
    }

    pub fn stat(&self, pid: u32) -> Option<ProcStat> {
        let text = match &self.open_stats {
            Some(open) => open.read(&self.root, pid)?,
            None => read_proc_file(&self.path(pid, "stat"))?,
        };
        parse_stat(&text, self.ns_per_tick)
    }

    /// VmHWM: the peak resident set size.
    pub fn peak_rss_bytes(&self, pid: u32) -> Option<u64> {
        let text = read_proc_file(&self.path(pid, "status"))?;
        let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Every process below `root`, from each thread's `task/*/children`; never framelab's
    /// guardian, which is framelab's child where framelab reaps orphans (init of a pid
    /// namespace) and is not of the run.
    pub fn below(&self, root: u32) -> Vec<u32> {
        let mut pids = Vec::new();
        let mut stack = self.children(root);
        stack.retain(super::guard::not_guardian);
        while let Some(pid) = stack.pop() {
            pids.push(pid);
            stack.extend(self.children(pid));
        }
        pids
    }

    /// Direct children of `pid` (every thread's), from `task/*/children`; falls back to a scan.
    pub fn children(&self, pid: u32) -> Vec<u32> {
        let tasks = self.root.join(pid.to_string()).join("task");
        let mut children = Vec::new();
        let mut found_file = false;
        if let Ok(entries) = std::fs::read_dir(&tasks) {
            for entry in entries.flatten() {
                if let Some(text) = read_proc_file(&entry.path().join("children")) {
                    found_file = true;
                    children.extend(
                        text.split_whitespace()
                            .filter_map(|p| p.parse::<u32>().ok()),
                    );
                }
            }
        }
        if !found_file {
            children = self
                .pids()
                .into_iter()
                .filter(|&p| self.stat(p).is_some_and(|s| s.ppid == pid))
                .collect();
        }
        children.sort_unstable();
        children.dedup();
        children
    }

    pub fn pids(&self) -> Vec<u32> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// Processes whose name (comm, or the base name of argv[0] or of the executable) is `name`.
    pub fn find_by_name(&self, name: &str) -> Vec<u32> {
        self.pids()
            .into_iter()
            .filter(|&pid| self.names_of(pid).iter().any(|n| n == name))
            .collect()
    }

    /// The names `--watch` matches a process by: comm, and the base names of argv[0] and of
    /// the executable (empty once it is gone).
    pub fn names_of(&self, pid: u32) -> Vec<String> {
        let mut names = Vec::new();
        if let Some(stat) = self.stat(pid) {
            names.push(stat.comm);
        }
        if let Ok(cmdline) = std::fs::read(self.path(pid, "cmdline")) {
            if let Some(arg0) = cmdline.split(|&b| b == 0).next() {
                names.push(base_name(&String::from_utf8_lossy(arg0)));
            }
        }
        if let Ok(exe) = std::fs::read_link(self.path(pid, "exe")) {
            names.push(base_name(&exe.to_string_lossy()));
        }
        names
    }

    pub fn exists(&self, pid: u32) -> bool {
        self.root.join(pid.to_string()).exists()
    }
}

/// A /proc file's text: open, read until the end, close. Not `fs::read_to_string`, which
/// first asks the file's size (always 0 in /proc) and probes with small reads: the
/// accounting reads these files tens of times a second, and those calls were most of them.
fn read_proc_file(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut text = Vec::new();
    let mut chunk = [0u8; 2048];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    String::from_utf8(text).ok()
}

/// The CPU clock of process `pid` in nanoseconds (see `Procfs::cpu_clock_ns`).
pub fn process_cpu_clock_ns(pid: u32) -> Option<i64> {
    // What glibc's clock_getcpuclockid returns (the libc crate lacks it on Linux): the
    // kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
    // Pid 0 would mean the caller; pids above 2^22 (the largest pid_max) do not exist and
    // would overflow the shift.
    if pid == 0 || pid > 1 << 22 {
        return None;
    }
    let clock = ((!(pid as libc::clockid_t)) << 3) | 2;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; an unknown pid is only an error code (EINVAL).
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec)
}

fn base_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Parses `/proc/PID/stat`. The name is in parentheses and may itself hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub fn parse_stat(text: &str, ns_per_tick: i64) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_owned();
    // Fields after the name, numbered from 3 (state) as in proc(5).
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| -> Option<i64> { rest.get(n - 3)?.parse().ok() };
    Some(ProcStat {
        pid,
        ppid: field(4)? as u32,
        pgrp: field(5)? as u32,
        comm,
        state: rest.first()?.chars().next()?,
        cpu: CpuTimes {
            user_ns: field(14)? * ns_per_tick,
            sys_ns: field(15)? * ns_per_tick,
            children_user_ns: field(16)? * ns_per_tick,
            children_sys_ns: field(17)? * ns_per_tick,
        },
        start_ns: field(22)? * ns_per_tick,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_names() {
        let text = "4242 (my (weird) proc) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 5 2 20 0 3 0 12345 1000 10 0";
        let stat = parse_stat(text, 10_000_000).unwrap();
        assert_eq!(stat.pid, 4242);
        assert_eq!(stat.ppid, 17);
        assert_eq!(stat.comm, "my (weird) proc");
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.cpu.user_ns, 2_500_000_000);
        assert_eq!(stat.cpu.sys_ns, 300_000_000);
        assert_eq!(stat.cpu.children_user_ns, 50_000_000);
        assert_eq!(stat.cpu.children_sys_ns, 20_000_000);
        assert_eq!(stat.start_ns, 123_450_000_000);
    }

    #[test]
    fn the_cpu_clock_of_a_process_is_finer_than_its_ticks() {
        let me = std::process::id();
        let clock = process_cpu_clock_ns(me).expect("own CPU clock");
        let procfs = Procfs::system();
        let stat = procfs.stat(me).unwrap();
        let ticks = stat.cpu.user_ns + stat.cpu.sys_ns;
        let again = procfs.cpu_clock_ns(me).unwrap();
        // The clock and the ticks count the same time; ticks are truncated.
        assert!(again >= clock && again + 2 * procfs.ns_per_tick() >= ticks);
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        assert_eq!(process_cpu_clock_ns(gone_pid), None, "a reaped process");
        assert_eq!(process_cpu_clock_ns(0), None, "not the caller's clock");
        assert_eq!(process_cpu_clock_ns(u32::MAX >> 2), None, "beyond any pid");
    }

    #[test]
    fn a_kept_stat_file_follows_its_process_until_it_is_reaped() {
        let procfs = Procfs::system();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let first = procfs.stat(pid).expect("a live child");
        assert_eq!((first.pid, first.comm.as_str()), (pid, "sleep"));
        let kept = || procfs.open_stats.as_ref().unwrap().0.borrow().is_open(pid);
        assert!(kept(), "its descriptor is kept");
        child.kill().unwrap();
        // Killed, not yet reaped: the same descriptor reads the zombie (polled: the kill
        // is delivered asynchronously).
        let mut state = first.state;
        for _ in 0..1000 {
            state = procfs.stat(pid).expect("a zombie is readable").state;
            if state == 'Z' {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(state, 'Z');
        child.wait().unwrap();
        assert_eq!(procfs.stat(pid), None, "reaped: its descriptor fails");
        assert!(!kept(), "and is dropped");
        let copy = procfs.clone();
        assert!(
            copy.open_stats.unwrap().0.borrow().is_empty(),
            "a copy opens its own"
        );
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_stat("", 1).is_none());
        assert!(parse_stat("12 (x) S", 1).is_none());
        assert!(parse_stat("abc (x) S 1 2 3", 1).is_none());
    }

    #[test]
    fn reads_a_fixture_tree() {
        let dir = tempfile::tempdir().unwrap();
        let write = |pid: u32, ppid: u32, name: &str, utime: u32| {
            let p = dir.path().join(pid.to_string());
            std::fs::create_dir_all(p.join("task").join(pid.to_string())).unwrap();
            let stat = format!(
                "{pid} ({name}) S {ppid} 1 1 0 -1 0 0 0 0 0 {utime} 1 0 0 20 0 1 0 100 0 0"
            );
            std::fs::write(p.join("stat"), stat).unwrap();
            std::fs::write(p.join("status"), "Name:\tx\nVmHWM:\t  2048 kB\n").unwrap();
            std::fs::write(p.join("cmdline"), format!("/usr/bin/{name}\0--flag\0")).unwrap();
        };
        write(10, 1, "host", 100);
        write(11, 10, "worker", 50);
        write(12, 10, "daemon", 7);
        std::fs::write(dir.path().join("10/task/10/children"), "11 12 ").unwrap();
        let procfs = Procfs::at(dir.path(), 100);
        assert_eq!(procfs.children(10), vec![11, 12]);
        assert_eq!(procfs.find_by_name("daemon"), vec![12]);
        assert_eq!(procfs.peak_rss_bytes(10), Some(2 * 1024 * 1024));
        assert_eq!(procfs.stat(11).unwrap().cpu.user_ns, 500_000_000);
        assert_eq!(procfs.cpu_clock_ns(11), None, "no CPU clock for a fixture");
        // Without children files the scan finds the same children.
        std::fs::remove_file(dir.path().join("10/task/10/children")).unwrap();
        assert_eq!(procfs.children(10), vec![11, 12]);
    }
}
