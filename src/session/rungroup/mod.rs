//! The run group: one container for every process framelab starts for a run (the command,
//! its services and all their descendants, daemonized or not), so that its CPU is counted
//! whole and nothing of it outlives the run.
//!
//! Which container, best first:
//! - a fresh cgroup v2 group, made in framelab's own cgroup (root, or a delegated subtree)
//!   or in `FRAMELAB_CGROUP_ROOT`: CPU from `cpu.stat`, stopped with `cgroup.kill`;
//! - a fresh cgroup v1 group in the `cpuacct` and `freezer` hierarchies: CPU from
//!   `cpuacct.usage`, stopped by freezing it, SIGKILL to each member and thawing;
//! - none (`tree`): the processes are framelab's descendants (it is their subreaper), and
//!   at the end each one still alive is killed.
//!
//! Each child joins the group in `pre_exec`, between fork and exec, by writing `0` to the
//! group's `cgroup.procs` through a descriptor opened before the fork: the kernel moves the
//! writing process. It has run no instruction of the command yet and can have no child,
//! and everything it starts later is born in the group, so there is no window in which a
//! process of the run is outside it (writing the pid from the parent after fork would race
//! with the child's exec; `clone3(CLONE_INTO_CGROUP)` would need a fork of our own instead of
//! `std::process::Command`).
//!
//! `FRAMELAB_RUN_GROUP` (`auto`, `cgroup2`, `cgroup1`, `tree`) picks one; one that cannot be
//! had falls back to the tree with a line saying why.

mod cgroup;
mod mounts;
mod window;

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{bail, Result};

pub use cgroup::GroupCpu;
pub use window::not_seen_row;

use super::guard::{self, CgroupKind};
use super::procfs::Procfs;
use crate::model::RunGroupFacts;

/// Picks the mechanism (`auto`, `cgroup2`, `cgroup1`, `tree`).
pub const MECHANISM_ENV: &str = "FRAMELAB_RUN_GROUP";
/// A cgroup2 directory to make the v2 group in, instead of framelab's own cgroup.
pub const ROOT_ENV: &str = "FRAMELAB_CGROUP_ROOT";

const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    Cgroup2,
    Cgroup1,
    Tree,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Cgroup2 => "cgroup2",
            Mechanism::Cgroup1 => "cgroup1",
            Mechanism::Tree => "tree",
        }
    }
}

/// What the child does between fork and exec: join the group. Plain descriptors, so it
/// is `Copy` into the `pre_exec` closure.
#[derive(Clone, Copy, Debug, Default)]
pub struct Placement {
    fds: [RawFd; 2],
    count: usize,
}

impl Placement {
    /// Moves the calling (forked, not yet exec'd) process into the group. Only `write`:
    /// async-signal-safe.
    pub fn join_in_child(&self) -> std::io::Result<()> {
        for &fd in &self.fds[..self.count] {
            // SAFETY: writing two bytes from a static buffer to a descriptor we hold.
            if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Reads the group's CPU; cheap to clone for the collector.
#[derive(Clone, Debug)]
pub struct Meter {
    mechanism: Mechanism,
    dir: PathBuf,
    ns_per_tick: i64,
}

impl Meter {
    pub fn read(&self) -> Option<GroupCpu> {
        match self.mechanism {
            Mechanism::Cgroup2 => cgroup::read_v2_cpu(&self.dir),
            Mechanism::Cgroup1 => cgroup::read_v1_cpu(&self.dir, self.ns_per_tick),
            Mechanism::Tree => None,
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }
}

pub struct RunGroup {
    mechanism: Mechanism,
    /// v2: the group; v1: the cpuacct group, then the freezer group.
    dirs: Vec<PathBuf>,
    /// Each group's `cgroup.procs`, open for writing, for the children to join by.
    procs: Vec<OwnedFd>,
    /// Why no cgroup, and how to get one (tree only).
    unavailable: String,
    guard_ids: Vec<u32>,
    /// Without a cgroup: process groups of the run's processes registered with the
    /// guardian (beyond the command's and the services', which are registered anyway).
    followed_groups: std::collections::BTreeSet<u32>,
    /// CLOCK_BOOTTIME when it was made: processes below framelab that started earlier are
    /// not the run's.
    made_boot_ns: i64,
    ended: bool,
}

impl RunGroup {
    /// Makes the run's group: the best mechanism available (or the one `FRAMELAB_RUN_GROUP`
    /// asks for), else the tree with the reasons in `unavailable`. Fails only on a bad
    /// `FRAMELAB_RUN_GROUP`.
    pub fn create() -> Result<RunGroup> {
        let wanted = std::env::var(MECHANISM_ENV).unwrap_or_default();
        let (try_v2, try_v1) = match wanted.as_str() {
            "" | "auto" => (true, true),
            "cgroup2" => (true, false),
            "cgroup1" => (false, true),
            "tree" => (false, false),
            other => bail!(
                "{MECHANISM_ENV}={other:?} is not a run-group mechanism: use auto, cgroup2, cgroup1 or tree"
            ),
        };
        static RUNS: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "framelab-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed) + 1
        );
        let made_boot_ns = boot_ns();
        let mut why = Vec::new();
        if try_v2 {
            match make_v2(&name) {
                Ok(group) => return Ok(group.registered(made_boot_ns)),
                Err(e) => why.push(format!("cgroup v2: {e}")),
            }
        }
        if try_v1 {
            match make_v1(&name) {
                Ok(group) => return Ok(group.registered(made_boot_ns)),
                Err(e) => why.push(format!("cgroup v1: {e}")),
            }
        }
        if !try_v2 && !try_v1 {
            why.push(format!("{MECHANISM_ENV}=tree asked for none"));
        }
        Ok(RunGroup {
            mechanism: Mechanism::Tree,
            dirs: Vec::new(),
            procs: Vec::new(),
            unavailable: reasons_with_one_advice(why),
            guard_ids: Vec::new(),
            followed_groups: Default::default(),
            made_boot_ns,
            ended: false,
        })
    }

    /// A group of no process, for the supervisor's tests: ending it touches nothing.
    #[cfg(test)]
    pub fn untracked() -> RunGroup {
        RunGroup {
            mechanism: Mechanism::Tree,
            dirs: Vec::new(),
            procs: Vec::new(),
            unavailable: "a test's".into(),
            guard_ids: Vec::new(),
            followed_groups: Default::default(),
            made_boot_ns: boot_ns(),
            ended: true,
        }
    }

    fn registered(mut self, made_boot_ns: i64) -> RunGroup {
        self.made_boot_ns = made_boot_ns;
        let kinds: &[CgroupKind] = match self.mechanism {
            Mechanism::Cgroup2 => &[CgroupKind::KillV2],
            Mechanism::Cgroup1 => &[CgroupKind::RemoveOnly, CgroupKind::FreezeV1],
            Mechanism::Tree => &[],
        };
        for (dir, &kind) in self.dirs.iter().zip(kinds) {
            self.guard_ids.extend(guard::register_cgroup(dir, kind));
        }
        self
    }

    /// What a child must do before exec to join.
    pub fn placement(&self) -> Placement {
        let mut placement = Placement::default();
        for fd in self.procs.iter().take(2) {
            placement.fds[placement.count] = fd.as_raw_fd();
            placement.count += 1;
        }
        placement
    }

    /// Without a cgroup, registers with the guardian the process group of each process of
    /// the run below framelab, so that a daemon that made its own (`setsid`) is stopped after
    /// a kill -9 of framelab too; forgets groups none of them is in any more (their ids could
    /// be reused). With a cgroup, the guardian has the cgroup: nothing to do.
    pub fn follow_process_groups(&mut self) {
        if self.mechanism != Mechanism::Tree {
            return;
        }
        // SAFETY: plain getters.
        let own = unsafe { libc::getpgid(0) };
        let now: std::collections::BTreeSet<u32> = self
            .run_descendants(&Procfs::system())
            .into_iter()
            .map(|(pid, _)| unsafe { libc::getpgid(pid as i32) })
            .filter(|&g| g > 1 && g != own)
            .map(|g| g as u32)
            .collect();
        for &gone in self.followed_groups.difference(&now) {
            guard::unregister_group(gone);
        }
        for &new in now.difference(&self.followed_groups) {
            guard::register_group(new);
        }
        self.followed_groups = now;
    }

    /// The group whose `cgroup.procs` lists the run's processes; `None` for the tree.
    pub fn listing_dir(&self) -> Option<PathBuf> {
        self.in_a_cgroup().then(|| self.dirs[0].clone())
    }

    /// Whether the run is in a cgroup (which the guardian has), not followed as a tree.
    pub fn in_a_cgroup(&self) -> bool {
        self.mechanism != Mechanism::Tree
    }

    /// The cgroup v2 group, which perf events can be filtered by (`PERF_FLAG_PID_CGROUP`);
    /// `None` for v1 (its groups are in the cpuacct and freezer hierarchies, not perf_event's)
    /// and the tree.
    pub fn perf_cgroup(&self) -> Option<&Path> {
        (self.mechanism == Mechanism::Cgroup2).then(|| self.dirs[0].as_path())
    }

    /// The group's CPU meter; `None` for the tree.
    pub fn meter(&self) -> Option<Meter> {
        (self.mechanism != Mechanism::Tree).then(|| Meter {
            mechanism: self.mechanism,
            dir: self.dirs[0].clone(),
            ns_per_tick: Procfs::system().ns_per_tick(),
        })
    }

    /// The one line said when the run starts without a cgroup: what was not available and
    /// how to get it; `None` with a cgroup.
    pub fn fallback_line(&self) -> Option<String> {
        (self.mechanism == Mechanism::Tree).then(|| {
            format!(
                "run group: no cgroup for this run ({}); its processes are followed as framelab's descendants instead: CPU of processes that lived between two readings may be missed, and after a kill -9 of framelab only the process groups it had seen are stopped",
                self.unavailable
            )
        })
    }

    /// What the run file keeps of it (the CPU figures are the collector's).
    pub fn facts(&self) -> RunGroupFacts {
        RunGroupFacts {
            mechanism: self.mechanism.name().to_owned(),
            path: self
                .dirs
                .first()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default(),
            unavailable: self.unavailable.clone(),
            ..RunGroupFacts::default()
        }
    }

    /// Ends the run's processes: every member of the group is killed, then every process
    /// below framelab that started with the run and is still alive (one that moved out of
    /// the group, or all of them for the tree), each reaped if it is framelab's child, and the
    /// group is removed. Returns a line per process that had left the group or survived.
    pub fn end(&mut self) -> Vec<String> {
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        let mut notes = Vec::new();
        let procfs = Procfs::system();
        // Still running once the command and the services had ended (a daemon, a child
        // left in the background): killed with the group, and said, not silently. Frozen
        // first, so that one forked as the command ended is listed (and named) too: listed
        // before the kill alone, 2 of 3 such daemons were killed unnamed.
        let named = |pids: Vec<u32>| -> Vec<(u32, String)> {
            let name = |pid| procfs.stat(pid).map(|s| s.comm).unwrap_or_default();
            pids.into_iter().map(|pid| (pid, name(pid))).collect()
        };
        let killed = match self.mechanism {
            Mechanism::Cgroup2 => {
                cgroup::freeze_v2(&self.dirs[0]);
                let killed = named(cgroup::members(&self.dirs[0]));
                cgroup::kill_v2(&self.dirs[0]);
                killed
            }
            Mechanism::Cgroup1 => {
                let frozen = cgroup::freeze_v1(&self.dirs[1]);
                let killed = named(cgroup::members(&self.dirs[1]));
                cgroup::kill_v1(&self.dirs[1], frozen);
                killed
            }
            Mechanism::Tree => Vec::new(),
        };
        for (pid, name) in &killed {
            notes.push(format!(
                "process {pid} ({}) was still running when the command had ended: killed with the run's cgroup",
                crate::display::name(name)
            ));
        }
        let killed: Vec<u32> = killed.into_iter().map(|(pid, _)| pid).collect();
        reap_when_gone(&killed, Duration::from_secs(2));
        // Whatever of the run is still below framelab was not in the group.
        let mut leftovers = self.run_descendants(&procfs);
        if self.mechanism == Mechanism::Tree {
            // Processes of the groups just sent SIGKILL may take a moment to die: those that
            // outlast this are the ones no signal reached.
            let deadline = std::time::Instant::now() + Duration::from_millis(500);
            while !leftovers.is_empty() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
                let pids: Vec<u32> = leftovers.iter().map(|(p, _)| *p).collect();
                reap_when_gone(&pids, Duration::ZERO);
                leftovers = self.run_descendants(&procfs);
            }
        }
        // Killed but not dead yet (forked just before the kill): not escaped.
        let still_in = match self.mechanism {
            Mechanism::Cgroup2 => cgroup::members(&self.dirs[0]),
            Mechanism::Cgroup1 => cgroup::members(&self.dirs[1]),
            Mechanism::Tree => Vec::new(),
        };
        for &(pid, ref name) in &leftovers {
            // SAFETY: plain kill of a process of the run.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            if still_in.contains(&pid) {
                continue;
            }
            if self.mechanism == Mechanism::Tree {
                notes.push(format!(
                    "process {pid} ({}) was still running once the command and the services were stopped (it had left their process groups): killed",
                    crate::display::name(name)
                ));
            } else {
                let now_in = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                    .ok()
                    .and_then(|c| match self.mechanism {
                        Mechanism::Cgroup2 => mounts::own_v2_path(&c),
                        _ => mounts::own_v1_path(&c, "freezer"),
                    })
                    .unwrap_or_else(|| "?".into());
                notes.push(format!(
                    "process {pid} ({}) had left the run's cgroup (it was in {now_in}): killed by the process-tree walk",
                    crate::display::name(name)
                ));
            }
        }
        let pids: Vec<u32> = leftovers.iter().map(|(p, _)| *p).collect();
        reap_when_gone(&pids, Duration::from_secs(2));
        self.reap_run_zombies(&procfs, Duration::from_secs(1));
        // Their process groups are empty now: the guardian must not kill the ids later.
        for group in std::mem::take(&mut self.followed_groups) {
            guard::unregister_group(group);
        }
        for (pid, name) in killed
            .iter()
            .map(|&p| (p, None))
            .chain(leftovers.iter().map(|(p, n)| (*p, Some(n.as_str()))))
        {
            if let Some(stat) = procfs.stat(pid).filter(|s| s.state != 'Z') {
                notes.push(format!(
                    "process {pid} ({}) was still alive after SIGKILL (state {}: stuck in the kernel)",
                    crate::display::name(name.unwrap_or(&stat.comm)),
                    stat.state
                ));
            }
        }
        let removal = match self.mechanism {
            Mechanism::Cgroup2 => cgroup::remove(&self.dirs[0], Duration::from_secs(1)),
            Mechanism::Cgroup1 => cgroup::remove(&self.dirs[1], Duration::from_secs(1))
                .and(cgroup::remove(&self.dirs[0], Duration::from_secs(1))),
            Mechanism::Tree => Ok(()),
        };
        match removal {
            Ok(()) => {
                for id in self.guard_ids.drain(..) {
                    guard::unregister_cgroup(id);
                }
            }
            // The guardian tries again when framelab exits.
            Err(e) => notes.push(format!("the run's cgroup is left behind: {e}")),
        }
        notes
    }

    /// Reaps the run's processes that died as framelab's children (orphans it adopted,
    /// some only as their parents died in the kill), until none of the run is left below
    /// framelab or `wait` is over: none may be reaped in a later run's window (`bench`),
    /// where its CPU would be taken for that run's.
    fn reap_run_zombies(&self, procfs: &Procfs, wait: Duration) {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let mut left = false;
            for pid in procfs.children(std::process::id()) {
                let Some(stat) = procfs.stat(pid) else {
                    continue;
                };
                if stat.start_ns + procfs.ns_per_tick() < self.made_boot_ns {
                    continue;
                }
                left = true;
                if stat.state == 'Z' {
                    let mut status = 0;
                    // SAFETY: reaping our own child, a zombie.
                    unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
                }
            }
            if !left || std::time::Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Processes below framelab, started since the group was made, still running: the run's.
    fn run_descendants(&self, procfs: &Procfs) -> Vec<(u32, String)> {
        (procfs.below(std::process::id()).into_iter())
            .filter_map(|pid| procfs.stat(pid))
            // /proc's start time is in whole ticks, rounded down.
            .filter(|stat| stat.start_ns + procfs.ns_per_tick() >= self.made_boot_ns)
            .filter(|stat| stat.state != 'Z')
            .map(|stat| (stat.pid, stat.comm))
            .collect()
    }
}

impl Drop for RunGroup {
    /// A run that failed half way still leaves nothing behind.
    fn drop(&mut self) {
        for note in self.end() {
            log::info!("{note}");
        }
    }
}

/// CLOCK_BOOTTIME now: what /proc's process start times count from.
fn boot_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Waits until each of `pids` is gone, reaping those that are framelab's children.
fn reap_when_gone(pids: &[u32], wait: Duration) {
    let deadline = std::time::Instant::now() + wait;
    let mut left: Vec<u32> = pids.to_vec();
    loop {
        left.retain(|&pid| {
            let mut status = 0;
            // SAFETY: waitpid on one pid; ECHILD when it is not ours.
            let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
            let gone = r == pid as i32 || !Path::new(&format!("/proc/{pid}")).exists();
            // Not ours and a zombie: its parent reaps it.
            let zombie = r < 0 && Procfs::system().stat(pid).is_some_and(|s| s.state == 'Z');
            !(gone || zombie)
        });
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The cgroup v2 directory to make the group in: `FRAMELAB_CGROUP_ROOT`, else framelab's
/// own cgroup where the cgroup2 hierarchy is mounted.
fn v2_parent() -> Result<PathBuf, String> {
    if let Some(root) = std::env::var_os(ROOT_ENV) {
        return Ok(PathBuf::from(root));
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo ({e})"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup ({e})"))?;
    let mount = mounts::cgroup_mounts(&mountinfo)
        .into_iter()
        .find(|m| m.fstype == "cgroup2")
        .ok_or("no cgroup2 filesystem is mounted")?;
    let path = mounts::own_v2_path(&own).ok_or("this process is in no cgroup v2 group")?;
    mounts::dir_of(&mount, &path).ok_or_else(|| {
        format!(
            "framelab's cgroup {path} is not visible under {}",
            mount.point.display()
        )
    })
}

fn make_v2(name: &str) -> Result<RunGroup, String> {
    let parent = v2_parent()?;
    check_fs(&parent, CGROUP2_SUPER_MAGIC, "cgroup2")?;
    let dir = parent.join(name);
    make_dir(&dir)?;
    let group = RunGroup {
        mechanism: Mechanism::Cgroup2,
        procs: vec![open_procs(&dir).inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })?],
        dirs: vec![dir],
        unavailable: String::new(),
        guard_ids: Vec::new(),
        followed_groups: Default::default(),
        made_boot_ns: 0,
        ended: false,
    };
    group.check_placement()?;
    Ok(group)
}

fn make_v1(name: &str) -> Result<RunGroup, String> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo ({e})"))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup ({e})"))?;
    let mounts = mounts::cgroup_mounts(&mountinfo);
    let mut dirs = Vec::new();
    for controller in ["cpuacct", "freezer"] {
        let mount = mounts
            .iter()
            .find(|m| m.options.iter().any(|c| c == controller))
            .ok_or_else(|| format!("no {controller} hierarchy is mounted"))?;
        let path = mounts::own_v1_path(&own, controller)
            .ok_or_else(|| format!("this process is in no {controller} group"))?;
        let parent = mounts::dir_of(mount, &path)
            .ok_or_else(|| format!("framelab's {controller} group {path} is not visible"))?;
        check_fs(&parent, CGROUP_SUPER_MAGIC, "cgroup")?;
        dirs.push(parent.join(name));
    }
    let mut procs = Vec::new();
    let mut made = Vec::new();
    let undo = |made: &[PathBuf]| {
        for d in made {
            let _ = std::fs::remove_dir(d);
        }
    };
    for dir in &dirs {
        let opened = make_dir(dir).and_then(|()| {
            made.push(dir.clone());
            open_procs(dir)
        });
        match opened {
            Ok(fd) => procs.push(fd),
            Err(e) => {
                undo(&made);
                return Err(e);
            }
        }
    }
    let group = RunGroup {
        mechanism: Mechanism::Cgroup1,
        procs,
        dirs,
        unavailable: String::new(),
        guard_ids: Vec::new(),
        followed_groups: Default::default(),
        made_boot_ns: 0,
        ended: false,
    };
    if cgroup::read_v1_cpu(&group.dirs[0], 1).is_none() {
        return Err(format!(
            "{} has no readable cpuacct.usage",
            group.dirs[0].display()
        ));
    }
    group.check_placement()?;
    Ok(group)
}

impl RunGroup {
    /// A throwaway child joins the group as the command will: a kernel or permission that
    /// refuses (moving a process needs write access where it comes from too) is found here,
    /// with the fallback still open, not at the command's launch.
    fn check_placement(&self) -> Result<(), String> {
        let placement = self.placement();
        // SAFETY: the child only writes and exits (async-signal-safe).
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            let code = match placement.join_in_child() {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(1).clamp(1, 255),
            };
            // SAFETY: leaving the forked child without running anything of the parent's.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            1
        };
        if code == 0 {
            return Ok(());
        }
        let e = std::io::Error::from_raw_os_error(code);
        let dir = self.dirs.last().map(|d| d.display().to_string());
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
        Err(format!(
            "cannot move a process into {} ({e}): {}",
            dir.unwrap_or_default(),
            how_to_get(e.raw_os_error())
        ))
    }
}

/// Refuses a directory that is not of the filesystem the group needs: a `mkdir` there
/// would make a plain directory, not a cgroup.
fn check_fs(dir: &Path, magic: i64, fstype: &str) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let mut path = dir.as_os_str().as_bytes().to_vec();
    path.push(0);
    // SAFETY: NUL-terminated path and a valid out-pointer.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(path.as_ptr().cast(), &mut fs) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "{} cannot be used ({e}): {}",
            dir.display(),
            how_to_get(e.raw_os_error())
        ));
    }
    if fs.f_type as i64 != magic {
        return Err(format!("{} is not a {fstype} filesystem", dir.display()));
    }
    Ok(())
}

fn make_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir(dir).map_err(|e| {
        format!(
            "cannot make {} ({e}): {}",
            dir.display(),
            how_to_get(e.raw_os_error())
        )
    })
}

fn open_procs(dir: &Path) -> Result<OwnedFd, String> {
    let path = dir.join("cgroup.procs");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map(OwnedFd::from)
        .map_err(|e| {
            format!(
                "cannot open {} ({e}): {}",
                path.display(),
                how_to_get(e.raw_os_error())
            )
        })
}

/// The mechanisms' reasons in one line, the advice they share said once at the end: both
/// refused for want of permission would otherwise repeat it.
fn reasons_with_one_advice(reasons: Vec<String>) -> String {
    let shared_tail = (reasons.len() > 1)
        .then(|| ADVICE.iter().map(|advice| format!(": {advice}")))
        .into_iter()
        .flatten()
        .find(|tail| reasons.iter().all(|r| r.ends_with(tail.as_str())));
    let Some(tail) = shared_tail else {
        return reasons.join("; ");
    };
    let bare: Vec<&str> = (reasons.iter())
        .map(|r| r.strip_suffix(tail.as_str()).unwrap_or(r))
        .collect();
    format!("{}{tail}", bare.join("; "))
}

const ADVICE: [&str; 4] = [
    "the cgroup filesystem is mounted read-only (a container?); give framelab a writable cgroup2 mount or a delegated subtree, or set FRAMELAB_CGROUP_ROOT to a writable cgroup2 directory",
    "run framelab as root, or in a delegated cgroup (systemd-run --user --scope -p Delegate=yes framelab …)",
    "that directory does not exist; set FRAMELAB_CGROUP_ROOT to a cgroup2 directory",
    "set FRAMELAB_CGROUP_ROOT to a writable cgroup2 directory",
];

/// How to get a cgroup where the kernel said no.
fn how_to_get(errno: Option<i32>) -> &'static str {
    match errno {
        Some(libc::EROFS) => ADVICE[0],
        Some(libc::EACCES) | Some(libc::EPERM) => ADVICE[1],
        Some(libc::ENOENT) => ADVICE[2],
        _ => ADVICE[3],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_both_mechanisms_share_is_said_once() {
        let denied = how_to_get(Some(libc::EACCES));
        let reasons = vec![
            format!("cgroup v2: cannot make /a (Permission denied): {denied}"),
            format!("cgroup v1: cannot make /b (Permission denied): {denied}"),
        ];
        assert_eq!(
            reasons_with_one_advice(reasons),
            format!("cgroup v2: cannot make /a (Permission denied); cgroup v1: cannot make /b (Permission denied): {denied}")
        );
        let differing = vec![
            format!("cgroup v2: cannot make /a (Permission denied): {denied}"),
            "cgroup v1: no cpuacct hierarchy is mounted".to_owned(),
        ];
        assert_eq!(
            reasons_with_one_advice(differing.clone()),
            differing.join("; ")
        );
    }
}
