//! CPU and memory of the command's process tree and of watched processes, over the measured
//! window only.
//!
//! The tree total is exact: at each end of the window it sums, over live processes, their own
//! and their reaped children's CPU, plus the rusage of processes framelab itself reaped (the
//! command, and orphans, since framelab is their subreaper). Per-process rows are each
//! process's own CPU as last sampled; what ran in processes that came and went between samples
//! is shown as one `(exited children)` row so the rows add up to the total.

use std::collections::BTreeMap;

use super::procfs::{CpuTimes, Procfs};
use crate::model::{ProcessRole, ProcessStats};

#[derive(Clone, Debug)]
struct Tracked {
    role: ProcessRole,
    ppid: u32,
    name: String,
    first_seen_ns: i64,
    last_seen_ns: i64,
    exited: bool,
    /// CPU at the window start (zero for processes born inside it).
    baseline: Option<CpuTimes>,
    /// Latest reading; frozen at the window end.
    last: CpuTimes,
    peak_rss_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct UserSys {
    user_ns: i64,
    sys_ns: i64,
}

impl UserSys {
    fn with_children(cpu: &CpuTimes) -> UserSys {
        UserSys {
            user_ns: cpu.user_ns + cpu.children_user_ns,
            sys_ns: cpu.sys_ns + cpu.children_sys_ns,
        }
    }
}

pub struct Accounting {
    procfs: Procfs,
    /// CLOCK_MONOTONIC at launch: process start times are converted with it.
    origin_mono_ns: i64,
    /// framelab's own pid: the tree is everything below it (the command and adopted orphans).
    collector_pid: u32,
    watched_pids: Vec<u32>,
    watched_names: Vec<String>,
    matched_names: std::collections::BTreeSet<String>,
    procs: BTreeMap<u32, Tracked>,
    window: Option<(i64, Option<i64>)>,
    tree_at_start: UserSys,
    tree_at_end: Option<UserSys>,
    /// rusage of tree processes framelab reaped inside the window.
    reaped_in_window: UserSys,
}

impl Accounting {
    pub fn new(
        procfs: Procfs,
        origin_mono_ns: i64,
        collector_pid: u32,
        watched_pids: Vec<u32>,
        watched_names: Vec<String>,
    ) -> Accounting {
        Accounting {
            origin_mono_ns,
            procfs,
            collector_pid,
            watched_pids,
            watched_names,
            matched_names: Default::default(),
            procs: BTreeMap::new(),
            window: None,
            tree_at_start: UserSys::default(),
            tree_at_end: None,
            reaped_in_window: UserSys::default(),
        }
    }

    fn in_window(&self) -> bool {
        matches!(self.window, Some((_, None)))
    }

    /// Reads every process of the tree and every watched one. Call every ~100 ms.
    pub fn sample(&mut self, now_ns: i64, command_pid: u32) {
        if self.tree_at_end.is_some() {
            return;
        }
        let mut seen = Vec::new();
        let mut stack = self.procfs.children(self.collector_pid);
        while let Some(pid) = stack.pop() {
            let role = if pid == command_pid {
                ProcessRole::Command
            } else {
                ProcessRole::Child
            };
            seen.push((pid, role));
            stack.extend(self.procfs.children(pid));
        }
        for &pid in &self.watched_pids {
            seen.push((pid, ProcessRole::Watched));
        }
        for name in &self.watched_names {
            for pid in self.procfs.find_by_name(name) {
                self.matched_names.insert(name.clone());
                if pid != self.collector_pid && !seen.iter().any(|&(p, _)| p == pid) {
                    seen.push((pid, ProcessRole::Watched));
                }
            }
        }
        for (pid, role) in seen {
            self.observe(pid, role, now_ns);
        }
        for tracked in self.procs.values_mut() {
            if !tracked.exited && tracked.last_seen_ns < now_ns {
                tracked.exited = true;
            }
        }
    }

    /// A process that opened a ring: part of the tree unless it is a watched one.
    pub fn observe_instrumented(&mut self, pid: u32, now_ns: i64) {
        if self.procs.contains_key(&pid) || self.tree_at_end.is_some() {
            return;
        }
        let role = if self.watched_pids.contains(&pid) {
            ProcessRole::Watched
        } else {
            ProcessRole::Child
        };
        self.observe(pid, role, now_ns);
    }

    fn observe(&mut self, pid: u32, role: ProcessRole, now_ns: i64) {
        let Some(stat) = self.procfs.stat(pid) else {
            return;
        };
        let rss = self.procfs.peak_rss_bytes(pid).unwrap_or(0);
        let in_window = self.in_window();
        // Alive since its start (boot-based, same as CLOCK_MONOTONIC without suspend), or since
        // launch for processes older than the run.
        let started_ns = (stat.start_ns - self.origin_mono_ns).clamp(0, now_ns);
        let tracked = self.procs.entry(pid).or_insert_with(|| Tracked {
            role,
            ppid: stat.ppid,
            name: stat.comm.clone(),
            first_seen_ns: started_ns,
            last_seen_ns: now_ns,
            exited: false,
            // Born inside the window: everything it used counts.
            baseline: in_window.then(CpuTimes::default),
            last: stat.cpu,
            peak_rss_bytes: 0,
        });
        tracked.name = stat.comm;
        tracked.last = stat.cpu;
        tracked.last_seen_ns = now_ns;
        tracked.exited = false;
        tracked.peak_rss_bytes = tracked.peak_rss_bytes.max(rss);
    }

    /// Opens the window: takes the baselines. A window that starts at launch counts everything
    /// the command's tree did (however late this is called); watched processes count from now.
    pub fn start_window(&mut self, now_ns: i64, command_pid: u32, at_launch: bool) {
        self.sample(now_ns, command_pid);
        self.window = Some((now_ns, None));
        let mut tree = UserSys::default();
        for tracked in self.procs.values_mut().filter(|t| !t.exited) {
            if at_launch && tracked.role != ProcessRole::Watched {
                tracked.baseline = Some(CpuTimes::default());
                tracked.first_seen_ns = 0;
                continue;
            }
            tracked.baseline = Some(tracked.last);
            if tracked.role != ProcessRole::Watched {
                let with_children = UserSys::with_children(&tracked.last);
                tree.user_ns += with_children.user_ns;
                tree.sys_ns += with_children.sys_ns;
            }
        }
        self.tree_at_start = tree;
    }

    /// Reads a child that exited but is not reaped yet: its stat holds its final times.
    pub fn final_reading(&mut self, pid: u32, now_ns: i64) {
        if self.tree_at_end.is_none() && self.procs.contains_key(&pid) {
            let role = self.procs[&pid].role;
            self.observe(pid, role, now_ns);
        }
    }

    /// A tree process framelab reaped, with its rusage (own + its reaped children).
    pub fn reaped(&mut self, pid: u32, rusage: CpuTimes, max_rss_bytes: u64, now_ns: i64) {
        if self.in_window() {
            self.reaped_in_window.user_ns += rusage.user_ns;
            self.reaped_in_window.sys_ns += rusage.sys_ns;
        }
        if let Some(tracked) = self.procs.get_mut(&pid) {
            tracked.peak_rss_bytes = tracked.peak_rss_bytes.max(max_rss_bytes);
            tracked.exited = true;
            tracked.last_seen_ns = now_ns;
        }
    }

    /// Closes the window: the final readings. Call before stopping the command.
    pub fn end_window(&mut self, now_ns: i64, command_pid: u32) {
        if self.window.is_none() {
            self.start_window(now_ns, command_pid, false);
        }
        self.sample(now_ns, command_pid);
        let mut tree = self.reaped_in_window;
        for tracked in self
            .procs
            .values()
            .filter(|t| !t.exited && t.role != ProcessRole::Watched)
        {
            let with_children = UserSys::with_children(&tracked.last);
            tree.user_ns += with_children.user_ns;
            tree.sys_ns += with_children.sys_ns;
        }
        self.tree_at_end = Some(tree);
        if let Some((start, _)) = self.window {
            self.window = Some((start, Some(now_ns)));
        }
    }

    /// Per-process rows over the window, plus an `(exited children)` row for the remainder.
    pub fn results(&self) -> Vec<ProcessStats> {
        let Some((start, Some(end))) = self.window else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        let mut rows_tree = UserSys::default();
        for (&pid, t) in &self.procs {
            let Some(baseline) = t.baseline else { continue };
            let alive_from = t.first_seen_ns.max(start);
            let alive_to = if t.exited {
                t.last_seen_ns.min(end)
            } else {
                end
            };
            let row = ProcessStats {
                pid,
                ppid: t.ppid,
                name: t.name.clone(),
                role: t.role,
                user_ns: (t.last.user_ns - baseline.user_ns).max(0),
                sys_ns: (t.last.sys_ns - baseline.sys_ns).max(0),
                wall_ns: (alive_to - alive_from).max(0),
                peak_rss_bytes: t.peak_rss_bytes,
            };
            if t.role != ProcessRole::Watched {
                rows_tree.user_ns += row.user_ns;
                rows_tree.sys_ns += row.sys_ns;
            }
            rows.push(row);
        }
        if let Some(end_total) = self.tree_at_end {
            let user_ns = end_total.user_ns - self.tree_at_start.user_ns - rows_tree.user_ns;
            let sys_ns = end_total.sys_ns - self.tree_at_start.sys_ns - rows_tree.sys_ns;
            // Clock-tick rounding leaves up to a tick per reading either way; only a real remainder gets a row.
            let rounding_ns = 2 * 10_000_000 * (self.procs.len() as i64 + 1);
            if user_ns + sys_ns > rounding_ns {
                rows.push(ProcessStats {
                    pid: 0,
                    ppid: 0,
                    name: "(exited children)".into(),
                    role: ProcessRole::Child,
                    user_ns: user_ns.max(0),
                    sys_ns: sys_ns.max(0),
                    wall_ns: end - start,
                    peak_rss_bytes: 0,
                });
            }
        }
        rows.sort_by_key(|r| {
            (
                r.role != ProcessRole::Command,
                r.role == ProcessRole::Watched,
                std::cmp::Reverse(r.user_ns + r.sys_ns),
            )
        });
        rows
    }

    /// Names given with `--watch` that matched no process during the run.
    pub fn unmatched_names(&self) -> Vec<String> {
        self.watched_names
            .iter()
            .filter(|name| !self.matched_names.contains(*name))
            .cloned()
            .collect()
    }
}
