//! Reading and emptying one cgroup directory: its CPU, its members (sub-cgroups a process
//! of the run made included), killing them all, removing it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// CPU a cgroup has counted since it was made, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCpu {
    pub usage_ns: i64,
    pub user_ns: i64,
    pub sys_ns: i64,
}

impl GroupCpu {
    /// What was counted between `earlier` and this reading.
    pub fn since(&self, earlier: &GroupCpu) -> GroupCpu {
        GroupCpu {
            usage_ns: (self.usage_ns - earlier.usage_ns).max(0),
            user_ns: (self.user_ns - earlier.user_ns).max(0),
            sys_ns: (self.sys_ns - earlier.sys_ns).max(0),
        }
    }
}

/// cgroup v2 `cpu.stat`: `usage_usec`, `user_usec`, `system_usec` (there even without the
/// cpu controller).
pub fn parse_v2_cpu_stat(text: &str) -> Option<GroupCpu> {
    let field = |name: &str| -> Option<i64> {
        text.lines().find_map(|l| {
            let (key, value) = l.split_once(' ')?;
            (key == name).then(|| value.trim().parse().ok()).flatten()
        })
    };
    Some(GroupCpu {
        usage_ns: field("usage_usec")? * 1000,
        user_ns: field("user_usec")? * 1000,
        sys_ns: field("system_usec")? * 1000,
    })
}

/// cgroup v1 `cpuacct.usage` (ns) and `cpuacct.stat` (`user`/`system` in clock ticks, only
/// for the split: the total is the exact figure).
pub fn parse_v1_cpuacct(usage: &str, stat: &str, ns_per_tick: i64) -> Option<GroupCpu> {
    let usage_ns: i64 = usage.trim().parse().ok()?;
    let field = |name: &str| -> Option<i64> {
        stat.lines().find_map(|l| {
            let (key, value) = l.split_once(' ')?;
            (key == name).then(|| value.trim().parse().ok()).flatten()
        })
    };
    let (user, sys) = (field("user")? * ns_per_tick, field("system")? * ns_per_tick);
    // The total split in the ticks' proportion.
    let sys_ns = if user + sys > 0 {
        (usage_ns as i128 * sys as i128 / (user + sys) as i128) as i64
    } else {
        0
    };
    Some(GroupCpu {
        usage_ns,
        user_ns: usage_ns - sys_ns,
        sys_ns,
    })
}

/// Reads a v2 group's CPU.
pub fn read_v2_cpu(dir: &Path) -> Option<GroupCpu> {
    parse_v2_cpu_stat(&std::fs::read_to_string(dir.join("cpu.stat")).ok()?)
}

/// Reads a v1 cpuacct group's CPU.
pub fn read_v1_cpu(dir: &Path, ns_per_tick: i64) -> Option<GroupCpu> {
    let usage = std::fs::read_to_string(dir.join("cpuacct.usage")).ok()?;
    let stat = std::fs::read_to_string(dir.join("cpuacct.stat")).ok()?;
    parse_v1_cpuacct(&usage, &stat, ns_per_tick)
}

/// `dir` and every cgroup below it, parents first.
pub fn subtree(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_owned()];
    let mut i = 0;
    while i < all.len() {
        if let Ok(entries) = std::fs::read_dir(&all[i]) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    all.push(entry.path());
                }
            }
        }
        i += 1;
    }
    all
}

/// Every process in `dir` and the cgroups below it.
pub fn members(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = subtree(dir)
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// Freezes a v2 group and the groups below it (`cgroup.freeze`, Linux 5.2), waiting up to
/// 200 ms for `frozen 1`: its members listed then are all it will have until the kill.
pub fn freeze_v2(dir: &Path) -> bool {
    if write_file(&dir.join("cgroup.freeze"), "1").is_err() {
        return false;
    }
    let deadline = Instant::now() + Duration::from_millis(200);
    loop {
        let events = std::fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
        if events.lines().any(|l| l.trim() == "frozen 1") {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// SIGKILLs every process of a v2 group and the groups below it: `cgroup.kill` (Linux 5.14),
/// else each member until none is left (a fork between two listings is caught by the next).
/// A frozen group is thawed after: a kill it did not take must not leave it stopped.
pub fn kill_v2(dir: &Path) {
    if write_file(&dir.join("cgroup.kill"), "1").is_err() {
        kill_members_until_empty(dir);
    }
    let _ = write_file(&dir.join("cgroup.freeze"), "0");
}

/// Freezes a v1 freezer group (up to 1 s for FROZEN): none of its members can fork until
/// `kill_v1`.
pub fn freeze_v1(freezer: &Path) -> bool {
    let state = freezer.join("freezer.state");
    write_file(&state, "FROZEN").is_ok() && {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let now = std::fs::read_to_string(&state).unwrap_or_default();
            if now.trim() == "FROZEN" || Instant::now() >= deadline {
                break now.trim() == "FROZEN";
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// SIGKILLs every process of a v1 freezer group `freeze_v1` froze (`frozen`), then thaws it
/// so the kills are delivered; not frozen, each member until none is left.
pub fn kill_v1(freezer: &Path, frozen: bool) {
    let state = freezer.join("freezer.state");
    for pid in members(freezer) {
        // SAFETY: plain kill.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let _ = write_file(&state, "THAWED");
    if !frozen {
        kill_members_until_empty(freezer);
    }
}

fn kill_members_until_empty(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let pids = members(dir);
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // SAFETY: plain kill.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes `dir` and the cgroups below it (deepest first), once their processes are gone
/// (it waits up to `wait` for that). The error names what is left.
pub fn remove(dir: &Path, wait: Duration) -> Result<(), String> {
    let deadline = Instant::now() + wait;
    while !members(dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut last = Ok(());
    for d in subtree(dir).iter().rev() {
        // A group whose last process just exited may be busy a moment longer.
        let mut tries = 0;
        last = loop {
            match std::fs::remove_dir(d) {
                Ok(()) => break Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break Ok(()),
                Err(e) => break Err(format!("cannot remove {}: {e}", d.display())),
            }
        };
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_v2_cpu_stat() {
        let text = "usage_usec 2431000\nuser_usec 2400000\nsystem_usec 31000\nnr_periods 0\n\
                    core_sched.force_idle_usec 0\n";
        assert_eq!(
            parse_v2_cpu_stat(text),
            Some(GroupCpu {
                usage_ns: 2_431_000_000,
                user_ns: 2_400_000_000,
                sys_ns: 31_000_000
            })
        );
        assert_eq!(parse_v2_cpu_stat("nr_periods 0\n"), None);
    }

    #[test]
    fn v1_total_is_exact_and_split_like_the_ticks() {
        let cpu = parse_v1_cpuacct("1000000007\n", "user 75\nsystem 25\n", 10_000_000).unwrap();
        assert_eq!(cpu.usage_ns, 1_000_000_007);
        assert_eq!(cpu.user_ns + cpu.sys_ns, cpu.usage_ns);
        assert_eq!(cpu.sys_ns, 250_000_001);
        let idle = parse_v1_cpuacct("0", "user 0\nsystem 0\n", 10_000_000).unwrap();
        assert_eq!(idle, GroupCpu::default());
    }

    #[test]
    fn a_window_never_goes_backwards() {
        let a = GroupCpu {
            usage_ns: 10,
            user_ns: 6,
            sys_ns: 4,
        };
        let b = GroupCpu {
            usage_ns: 25,
            user_ns: 16,
            sys_ns: 9,
        };
        assert_eq!(b.since(&a).usage_ns, 15);
        assert_eq!(a.since(&b), GroupCpu::default());
    }
}
