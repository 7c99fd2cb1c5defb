//! CPU and memory of the command's process tree and of watched processes, over the measured
//! window only.
//!
//! Every process of the tree (the command, its descendants, and orphans framelab adopted as
//! their subreaper) and every watched process is read at each sweep (`--sample-every`, at
//! most every 10 ms): its process CPU clock (user + sys of all its threads, in ns) and its
//! /proc stat (utime and stime, and its reaped children's cutime and cstime, in clock
//! ticks). A row is the process's own CPU over the window: the clock at the end (or at its
//! last reading) minus at the start (or 0 when it was born inside the window).
//!
//! A process that ends between two sweeps keeps the CPU it used up to its exit:
//! - reaped by framelab (the command, orphans): it is read as a zombie before it is reaped,
//!   when its times are final;
//! - reaped by a process of the run (a script's `kill $pid; wait $pid`): when its reaper
//!   reaps it, the reaper's cutime + cstime grows by exactly its final total (its own and its
//!   reaped children's). The reaper is read again as soon as the child is found gone, so
//!   that reading holds the reaping. Over the window, what a reaper's reaped-children time
//!   grew by beyond the last readings of the children it reaped is what they used after
//!   those readings (plus what children it never saw used): when exactly one process could
//!   have used it, it goes to that process's row; otherwise it goes to the
//!   `(exited children)` row, whose note says whose reaped children it holds and why they
//!   cannot be told apart.
//!
//! A watched process (`--watch-pid`, `--watch`) counts with the children it reaps: what its
//! reaped-children time grew by over the window is added to its row. `--watch NAME` matches
//! new processes at their exec (the kernel's process events, `procevents`) and counts one
//! that ended before a sweep read it from its exit record; without either, one line says
//! what is missing and framelab rescans /proc every 2 s.

use std::collections::{BTreeMap, BTreeSet};

use super::procevents::{ProcEvent, ProcEvents};
use super::procfs::{CpuTimes, Procfs};
use super::taskstats::{Exit, ExitSource, ThreadEnd, ThreadExits};
use super::tree_cache::TreeCache;
use super::watch::WatchList;
use crate::model::{CpuSource, ProcessRole, ProcessStats};

/// Name lookups (`--watch NAME`) scan all of /proc: not at every sweep.
const NAMES_EVERY_NS: i64 = 2_000_000_000;
/// How often a process's peak RSS is read (see `observe`).
const RSS_EVERY_NS: i64 = 500_000_000;
/// Rows of processes of one watched role known only by their exit records; past this, the
/// rest add up in one row.
const MAX_EXIT_ROWS: usize = 20;
/// Exit records of processes not (yet) known to be the run's are kept this long.
const UNSEEN_KEEP_NS: i64 = 10_000_000_000;

/// One reading of a process.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    /// /proc stat: own and reaped children's user and sys time, in clock ticks.
    cpu: CpuTimes,
    /// The process CPU clock (ns), where it could be read.
    clock_ns: Option<i64>,
}

impl Reading {
    /// What a process born inside the window had at its birth.
    fn zero(with_clock: bool) -> Reading {
        Reading {
            cpu: CpuTimes::default(),
            clock_ns: with_clock.then_some(0),
        }
    }

    /// Own CPU, as exactly as it was read.
    fn own_ns(&self) -> i64 {
        self.clock_ns.unwrap_or(self.cpu.user_ns + self.cpu.sys_ns)
    }

    /// Own plus reaped children's: what the reaper's cutime + cstime grows by.
    fn total_ns(&self) -> i64 {
        self.own_ns() + self.cpu.children_user_ns + self.cpu.children_sys_ns
    }
}

/// When and how a process was found gone.
#[derive(Clone, Copy, Debug)]
struct Gone {
    at_ns: i64,
    /// framelab reaped it (the command, an orphan): its final times were read as a zombie.
    by_framelab: bool,
}

#[derive(Clone, Debug)]
struct Tracked {
    role: ProcessRole,
    /// The role a watched process counts under (see `session::watch`); else empty.
    watch_role: String,
    ppid: u32,
    name: String,
    /// Its start time as /proc gives it: a pid reused by another process starts elsewhen.
    start_ticks_ns: i64,
    first_seen_ns: i64,
    last_seen_ns: i64,
    /// The last reading was of a zombie: its times are final.
    zombie: bool,
    /// When it was first read as a zombie: it ended by then.
    zombie_since_ns: Option<i64>,
    gone: Option<Gone>,
    /// CPU at the window start (zero for processes born inside it).
    baseline: Option<Reading>,
    /// Latest reading; frozen at the window end.
    last: Reading,
    /// The reading its reaped-children time was last settled at (see `settle_reaper`).
    settled: Reading,
    /// Already counted in a reaper's settlement.
    accounted: bool,
    /// As a reaper: CPU its settlements counted before its reaped-children time held it.
    /// Exit records are drained after the reaper's reading, so some are of children it had
    /// not reaped yet; the next growth holds them and is not theirs to count again.
    counted_ahead_ns: i64,
    /// The highest VmHWM read (since its last exec at each reading).
    peak_rss_bytes: u64,
    /// When its peak RSS was last read.
    rss_read_ns: i64,
    /// Its peak RSS in its exit record: exact up to the exit (0: none).
    exit_rss_bytes: u64,
    /// ru_maxrss of its reaping by framelab: the larger of its own peak and that of every
    /// child it reaped (the kernel folds those in), so its own only if it reaped none.
    reaped_max_rss_bytes: Option<u64>,
}

impl Tracked {
    /// Its last reading holds all it will ever use.
    fn closed(&self) -> bool {
        self.zombie || self.gone.is_none()
    }
}

/// CPU a reaper's reaped-children time holds that no row can take, per reaper and kind.
#[derive(Clone, Debug, Default)]
struct Unattributed {
    user_ns: i64,
    sys_ns: i64,
    /// The reaper's name.
    reaper: String,
    /// Processes that ended in one interval whose shares cannot be told apart (empty: the
    /// CPU is of processes never seen).
    processes: BTreeSet<u32>,
    /// Processes never seen, counted from their exit records (0 without them).
    unseen: u64,
    /// Of the CPU, what no exit record accounts for (all of it without them).
    uncounted_ns: i64,
}

/// Whose the unattributed CPU is: the reaper's pid, and whether seen processes share it.
type UnattributedKey = (u32, bool);

pub struct Accounting {
    procfs: Procfs,
    /// CLOCK_MONOTONIC at the command's exec (the run's clock): process start times are
    /// converted with it.
    origin_mono_ns: i64,
    /// CLOCK_MONOTONIC before the command was forked: a process that started before it is
    /// not the run's. The command itself started (forked) up to tens of ms before its exec.
    launched_mono_ns: i64,
    /// framelab's own pid: the tree is everything below it (the command and adopted orphans).
    collector_pid: u32,
    /// How often `sample` is called: what "between readings" means in the notes.
    interval_ns: i64,
    watch: WatchList,
    matched_names: BTreeSet<String>,
    /// Processes found by a watched name, with their role.
    by_name: BTreeMap<u32, String>,
    names_due_ns: i64,
    /// The kernel's process events, where framelab may have them (else why not): new
    /// processes are matched to watched names at their exec, not by rescanning /proc.
    events: Option<Result<ProcEvents, String>>,
    /// /proc was scanned for watched names since events were last lost.
    names_scanned: bool,
    events_lost: u64,
    /// Start time of each `--watch-pid` process at first sight: a later process given the
    /// same pid is not the one watched.
    watched_starts: BTreeMap<u32, i64>,
    /// `--watch-pid` pids taken by another process after the watched one ended.
    reused: BTreeSet<u32>,
    /// Processes of a watched name that lived between two readings, from their exit
    /// records, with their role.
    watched_exits: Vec<(Exit, String)>,
    procs: BTreeMap<u32, Tracked>,
    /// Processes whose pid was taken by a new one during the run.
    retired: Vec<(u32, Tracked)>,
    window: Option<(i64, Option<i64>)>,
    /// Tree processes framelab reaped inside the window without reading them first.
    unread_reaped: CpuTimes,
    unread_reaped_count: u64,
    /// pid → (user, sys) it used after its last reading, from its reaper's growth.
    extra: BTreeMap<u32, (i64, i64)>,
    unattributed: BTreeMap<UnattributedKey, Unattributed>,
    /// The kernel's exit records, where framelab may have them (else why not).
    taskstats: ExitSource,
    /// Exit records of the run's processes, by pid.
    exits: BTreeMap<u32, Exit>,
    /// Exit records of processes not known when they came (when received, ns).
    unseen: Vec<(Exit, i64)>,
    /// Where the run's threads' ends go, for the threads source (`pass_thread_exits`).
    thread_exits: Option<ThreadExits>,
    /// `--service` leaders (pid, name): they and their descendants count under that name.
    services: Vec<(u32, String)>,
    service_of: BTreeMap<u32, String>,
    /// Processes below framelab that started before the launch and are no service: leftovers
    /// of an earlier run of this framelab (`bench` runs one after another in one process),
    /// adopted as orphans or still to be reaped. Never this run's.
    foreign: BTreeSet<u32>,
    /// The run's cgroup, telling when the tree need not be walked again.
    tree_cache: Option<TreeCache<(u32, ProcessRole)>>,
    /// framelab is reaping a child (between its final reading and its reaping): a sweep
    /// from another thread waits for the next interval (`sweep`).
    reaping: bool,
}

/// How much earlier than the launch a process's start time may read and still be the run's:
/// /proc gives start times in whole clock ticks (10 ms), rounded down, so a process started
/// at or after the launch reads less than one tick before it.
const START_TICK_SLACK_NS: i64 = 10_000_000;

impl Accounting {
    pub fn new(
        procfs: Procfs,
        origin_mono_ns: i64,
        collector_pid: u32,
        interval_ns: i64,
        watch: WatchList,
        taskstats: ExitSource,
    ) -> Accounting {
        Accounting {
            procfs,
            origin_mono_ns,
            launched_mono_ns: origin_mono_ns,
            collector_pid,
            interval_ns,
            watch,
            matched_names: BTreeSet::new(),
            by_name: BTreeMap::new(),
            names_due_ns: i64::MIN,
            events: None,
            names_scanned: false,
            events_lost: 0,
            watched_starts: BTreeMap::new(),
            reused: BTreeSet::new(),
            watched_exits: Vec::new(),
            procs: BTreeMap::new(),
            retired: Vec::new(),
            window: None,
            unread_reaped: CpuTimes::default(),
            unread_reaped_count: 0,
            extra: BTreeMap::new(),
            unattributed: BTreeMap::new(),
            taskstats,
            exits: BTreeMap::new(),
            unseen: Vec::new(),
            thread_exits: None,
            services: Vec::new(),
            service_of: BTreeMap::new(),
            foreign: BTreeSet::new(),
            tree_cache: None,
            reaping: false,
        }
    }

    /// When the command was launched (before its fork), if before the run's clock starts.
    pub fn set_launch(&mut self, launched_mono_ns: i64) {
        self.launched_mono_ns = launched_mono_ns.min(self.origin_mono_ns);
    }

    /// A fresh accounting with the same settings, taking over the exit-record listener: for
    /// a window that opens again later.
    pub fn restarted(&mut self) -> Accounting {
        let taskstats = std::mem::replace(&mut self.taskstats, Err("handed over".into()));
        let mut fresh = Accounting::new(
            self.procfs.clone(),
            self.origin_mono_ns,
            self.collector_pid,
            self.interval_ns,
            self.watch.clone(),
            taskstats,
        );
        fresh.launched_mono_ns = self.launched_mono_ns;
        fresh.events = self.events.take();
        fresh.watched_starts = self.watched_starts.clone();
        fresh.services = self.services.clone();
        fresh.foreign = self.foreign.clone();
        fresh.tree_cache = self.tree_cache.take();
        fresh.thread_exits = self.thread_exits.take();
        fresh
    }

    /// Whether the kernel's exit records come (else the accounting does without them).
    pub fn has_exit_records(&self) -> bool {
        self.taskstats.is_ok()
    }

    /// Posts every exit record of a thread of the run's processes to `exits`: its final
    /// counters, which the threads source's last reading falls short of.
    pub fn pass_thread_exits(&mut self, exits: ThreadExits) {
        self.thread_exits = Some(exits);
    }

    /// For `--watch NAME`: listens to the kernel's process events. `Some` is the line to
    /// print when framelab must do with less: what is missing, what it costs, how to get it.
    pub fn listen_for_names(&mut self) -> Option<String> {
        if self.watch.names.is_empty() {
            return None;
        }
        let events = ProcEvents::open();
        let how = |why: &str| {
            if why.contains(super::taskstats::OFF_ENV) {
                format!("unset {} to have them", super::taskstats::OFF_ENV)
            } else {
                "run framelab as root, or give it CAP_NET_ADMIN (sudo setcap cap_net_admin+ep \"$(command -v framelab)\")".to_owned()
            }
        };
        let line = match (&events, &self.taskstats) {
            (Err(why), _) => Some(format!(
                "--watch NAME looks for new processes every 2 s, so one that lives less may be missed: the kernel's process events are not available ({why}); {}",
                how(why)
            )),
            (Ok(_), Err(why)) => Some(format!(
                "--watch NAME: a process that ends between two readings ({}) is not counted: the kernel's exit records are not available ({why}); {}",
                interval_text(self.interval_ns),
                how(why)
            )),
            (Ok(_), Ok(_)) => None,
        };
        self.events = Some(events);
        line
    }

    /// The services started for the run (leader pid, name), before the command.
    pub fn set_services(&mut self, services: Vec<(u32, String)>) {
        self.services = services;
    }

    fn in_window(&self) -> bool {
        matches!(self.window, Some((_, None)))
    }

    fn ended(&self) -> bool {
        matches!(self.window, Some((_, Some(_))))
    }

    /// Reads the run's cgroup `dir` at each reading and walks the process tree only when
    /// it says the tree may have changed (`tree_cache`).
    pub fn list_through_group(&mut self, dir: std::path::PathBuf) {
        self.tree_cache = Some(TreeCache::new(dir));
    }

    /// The tree below framelab (parents before their children) and the watched processes.
    fn list(&mut self, now_ns: i64, command_pid: u32) -> Vec<(u32, ProcessRole)> {
        let mut listed = match self.tree_cache.as_mut().and_then(|c| c.still(now_ns)) {
            Some(tree) => tree,
            None => {
                let tree = self.walk_tree(command_pid);
                if let Some(cache) = self.tree_cache.as_mut() {
                    cache.walked(&tree, now_ns);
                }
                tree
            }
        };
        if !self.watch.names.is_empty() {
            self.find_watched_names(now_ns);
        }
        for &pid in self.watch.pids.iter().chain(self.by_name.keys()) {
            if !listed.iter().any(|&(p, _)| p == pid) {
                listed.push((pid, ProcessRole::Watched));
            }
        }
        listed
    }

    /// The tree below framelab, parents before their children, from each thread's
    /// `task/*/children`.
    fn walk_tree(&mut self, command_pid: u32) -> Vec<(u32, ProcessRole)> {
        let mut listed = Vec::new();
        let mut stack: Vec<(u32, Option<String>)> = self
            .procfs
            .children(self.collector_pid)
            .into_iter()
            .filter(super::guard::not_guardian)
            .rev()
            .map(|pid| (pid, None))
            .collect();
        while let Some((pid, inherited)) = stack.pop() {
            // A service's daemon reparented to framelab (`pg_ctl start`) is still the
            // service's, and so are the children it forks later (a server's backends).
            let service = inherited
                .or_else(|| {
                    let root = self.services.iter().find(|(p, _)| *p == pid);
                    root.map(|(_, name)| name.clone())
                })
                .or_else(|| self.live_service_process(pid));
            let role = if pid == command_pid {
                ProcessRole::Command
            } else if let Some(name) = &service {
                self.service_of.insert(pid, name.clone());
                ProcessRole::Service
            } else {
                ProcessRole::Child
            };
            listed.push((pid, role));
            let children = self.procfs.children(pid);
            stack.extend(children.into_iter().rev().map(|c| (c, service.clone())));
        }
        listed
    }

    /// A service's processes that left its process group and are still running (a daemon
    /// `pg_ctl start` left behind), with the service's name: the topmost only (a process
    /// whose parent is not one of them), as stopping the service must stop them and their
    /// own children are theirs to stop. Read now, from /proc.
    pub fn service_daemons(&self) -> Vec<(u32, String)> {
        let mut daemons = Vec::new();
        for (&pid, name) in &self.service_of {
            let Some(leader) = self.services.iter().find(|(_, n)| n == name).map(|s| s.0) else {
                continue;
            };
            if self.live_service_process(pid).is_none() {
                continue;
            }
            let Some(stat) = self.procfs.stat(pid) else {
                continue;
            };
            let parent_is_its = self.live_service_process(stat.ppid).as_deref() == Some(name);
            if stat.state != 'Z' && stat.pgrp != leader && !parent_is_its {
                daemons.push((pid, name.clone()));
            }
        }
        daemons
    }

    /// The service `pid` was found to be a process of, while it is still that process.
    fn live_service_process(&self, pid: u32) -> Option<String> {
        let live = self.procs.get(&pid).is_some_and(|t| t.gone.is_none());
        live.then(|| self.service_of.get(&pid).cloned()).flatten()
    }

    /// Processes of the watched names: every process that exec'd since the last call, from
    /// the kernel's events; the whole of /proc at first, after events were lost, and every
    /// 2 s without events.
    fn find_watched_names(&mut self, now_ns: i64) {
        let mut execs = Vec::new();
        let mut scan = now_ns >= self.names_due_ns;
        if let Some(Ok(events)) = self.events.as_mut() {
            let mut got = Vec::new();
            events.drain(&mut got);
            execs.extend(got.into_iter().filter_map(|e| match e {
                ProcEvent::Exec { pid } => Some(pid),
                ProcEvent::Exit { .. } => None,
            }));
            scan = !self.names_scanned || events.lost != self.events_lost;
            self.events_lost = events.lost;
        }
        // Ended ones are settled; those never read are gone for good.
        let procs = &self.procs;
        let procfs = &self.procfs;
        self.by_name.retain(|pid, _| match procs.get(pid) {
            Some(t) => t.gone.is_none(),
            None => procfs.exists(*pid),
        });
        if scan {
            if !matches!(self.events, Some(Ok(_))) {
                // Without events a rescan finds everything there is: the list is rebuilt.
                let procs = &self.procs;
                self.by_name.retain(|pid, _| procs.contains_key(pid));
            }
            let names = self.watch.names.clone();
            for name in &names {
                for pid in self.procfs.find_by_name(name) {
                    self.match_name(pid, name);
                }
            }
            self.names_scanned = true;
            self.names_due_ns = now_ns + NAMES_EVERY_NS;
        }
        for pid in execs {
            let names = self.procfs.names_of(pid);
            if let Some(name) = self.watch.names.iter().find(|n| names.contains(n)).cloned() {
                self.match_name(pid, &name);
            }
        }
    }

    fn match_name(&mut self, pid: u32, name: &str) {
        self.matched_names.insert(name.to_owned());
        if pid != self.collector_pid {
            let role = self.watch.role_of_name(name);
            self.by_name.entry(pid).or_insert(role);
        }
    }

    /// The role of an ended process never read, when its exit record names it as one of
    /// a watched name (a process's name in its record is its comm, cut at 15 bytes); not
    /// one the command's tree started, which counts with the tree.
    fn watched_exit_role(&self, exit: &Exit) -> Option<String> {
        if let Some(role) = self.by_name.get(&exit.pid) {
            return Some(role.clone());
        }
        let parent_in_tree = exit.ppid == self.collector_pid
            || self
                .procs
                .get(&exit.ppid)
                .is_some_and(|p| p.role != ProcessRole::Watched);
        if parent_in_tree {
            return None;
        }
        let name = self.watch.names.iter().find(|n| comm_of(n) == exit.comm)?;
        Some(self.watch.role_of_name(name))
    }

    /// Processes of the run still alive at the last reading (tree and watched).
    pub fn live_pids(&self) -> impl Iterator<Item = (u32, ProcessRole)> + '_ {
        self.procs
            .iter()
            .filter(|(_, t)| t.gone.is_none())
            .map(|(&pid, t)| (pid, t.role))
    }

    /// `sample`, from a thread other than the reaper's: skipped while a child is between
    /// its final reading and its reaping, which must see no sweep between them (the sweep
    /// would find the child gone before `reaped` could say framelab reaped it).
    pub fn sweep(&mut self, now_ns: i64, command_pid: u32) {
        if !self.reaping {
            self.sample(now_ns, command_pid);
        }
    }

    /// framelab starts (`true`) or ends reaping a child: see `sweep`.
    pub fn set_reaping(&mut self, reaping: bool) {
        self.reaping = reaping;
    }

    /// Reads every process of the tree and every watched one, and settles those that ended.
    pub fn sample(&mut self, now_ns: i64, command_pid: u32) {
        if self.ended() {
            return;
        }
        self.drain_exits(now_ns);
        let listed = self.list(now_ns, command_pid);
        let mut seen = BTreeSet::new();
        let mut missing = Vec::new();
        // Children before their parents: a reaping between the two readings is then in the
        // parent's, and the child is found gone before it.
        for &(pid, role) in listed.iter().rev() {
            if self.observe(pid, role, now_ns) {
                seen.insert(pid);
            } else {
                missing.push(pid);
            }
        }
        let unlisted: Vec<u32> = self
            .procs
            .iter()
            .filter(|(pid, t)| t.gone.is_none() && !seen.contains(pid))
            .map(|(&pid, _)| pid)
            .filter(|pid| !missing.contains(pid))
            .collect();
        for pid in unlisted {
            // Not listed is not yet gone: an orphan moves to framelab while the tree is walked.
            let role = self.procs[&pid].role;
            if !self.observe(pid, role, now_ns) {
                missing.push(pid);
            }
        }
        self.settle(missing, now_ns);
    }

    /// Marks `missing` gone and reads each one's reaper again, so that reading holds the
    /// reaping; children of a reaper that disappear meanwhile are settled the same way.
    fn settle(&mut self, missing: Vec<u32>, now_ns: i64) {
        if missing.is_empty() {
            return;
        }
        // Their exit records came before they could be reaped, so before they were missed.
        self.drain_exits(now_ns);
        let mut queue = missing;
        let mut reread = BTreeSet::new();
        while !queue.is_empty() {
            let mut reapers = BTreeSet::new();
            let mut zombies = Vec::new();
            for pid in queue.drain(..) {
                let Some(t) = self.procs.get_mut(&pid) else {
                    continue;
                };
                if t.gone.is_some() {
                    continue;
                }
                t.gone = Some(Gone {
                    at_ns: now_ns,
                    by_framelab: false,
                });
                let (ppid, zombie, role) = (t.ppid, t.zombie, t.role);
                self.adopt_unseen_exit(pid);
                if role != ProcessRole::Watched
                    && self
                        .procs
                        .get(&ppid)
                        .is_some_and(|p| p.gone.is_none() && !p.zombie)
                {
                    reapers.insert(ppid);
                }
                if zombie {
                    zombies.push(pid);
                }
            }
            // Read as zombies: their reaped-children time is final (every child they reaped
            // is gone from /proc, so marked gone above or before).
            for pid in zombies {
                self.settle_reaper(pid);
            }
            for reaper in reapers {
                let role = self.procs[&reaper].role;
                if !self.observe(reaper, role, now_ns) {
                    queue.push(reaper);
                    continue;
                }
                reread.insert(reaper);
                // A child reaped before this reading but read alive before it must be
                // settled too, or the reading would hold a reaping no child explains.
                let vanished: Vec<u32> = self
                    .procs
                    .iter()
                    .filter(|(&c, t)| {
                        t.ppid == reaper && t.gone.is_none() && !self.procfs.exists(c)
                    })
                    .map(|(&c, _)| c)
                    .collect();
                queue.extend(vanished);
            }
        }
        // Each was read after every child marked gone had left /proc, and every other child
        // was still there after that reading: the reading holds exactly those reapings.
        for reaper in reread {
            self.settle_reaper(reaper);
        }
    }

    /// Settles what `reaper`'s reaped-children time grew by since it was last settled. Its
    /// reading holds the final totals of the children found gone and not settled yet (it was
    /// read after they left /proc, or it is a zombie). A child that ended without a final
    /// reading had itself reaped, up to its death, all of its own children found gone and not
    /// settled: they are part of the family too, and so on down. Beyond what the family's
    /// readings show, the growth is what they used after their last readings (and what
    /// children no one saw used), less what earlier settlements counted ahead of it: the row
    /// of the only one that could have used it gets it; otherwise `(exited children)` does.
    fn settle_reaper(&mut self, pid: u32) {
        let Some(reaper) = self.procs.get(&pid) else {
            return;
        };
        if reaper.role == ProcessRole::Watched || !reaper.closed() {
            // A process gone without a final reading is settled with its reaper's family.
            return;
        }
        let (from, to) = (reaper.settled, reaper.last);
        let reaper_name = reaper.name.clone();
        let mut family: Vec<u32> = Vec::new();
        let mut parents = vec![pid];
        while let Some(parent) = parents.pop() {
            for (&child, c) in &self.procs {
                let unsettled = c.ppid == parent
                    && c.role != ProcessRole::Watched
                    && !c.accounted
                    && c.gone.is_some_and(|g| !g.by_framelab);
                if unsettled && !family.contains(&child) {
                    family.push(child);
                    if !c.closed() {
                        parents.push(child);
                    }
                }
            }
        }
        if let Some(r) = self.procs.get_mut(&pid) {
            r.settled = to;
        }
        let growth_user = to.cpu.children_user_ns - from.cpu.children_user_ns;
        let growth_sys = to.cpu.children_sys_ns - from.cpu.children_sys_ns;
        if family.is_empty() && growth_user + growth_sys <= 0 {
            return;
        }
        // What the family's readings account for: a final reading's total; else its own
        // final time where an exit record gives it (else its last reading's) and the children
        // time it had at its last settlement (its unsettled children are in the family).
        let (mut known, mut known_user, mut known_sys) = (0, 0, 0);
        let mut truncated = 0;
        for member in &family {
            let m = &self.procs[member];
            let children = if m.closed() {
                m.last.cpu
            } else {
                m.settled.cpu
            };
            let own = self.own_final_ns(*member).unwrap_or(m.last.own_ns());
            known += own + children.children_user_ns + children.children_sys_ns;
            known_user += m.last.cpu.user_ns + children.children_user_ns;
            known_sys += m.last.cpu.sys_ns + children.children_sys_ns;
            if m.last.clock_ns.is_none() || children.children_user_ns + children.children_sys_ns > 0
            {
                truncated += 1;
            }
        }
        // Children no sweep saw, from their exit records: of the reaper, of the family's
        // processes that ended without a final reading, and theirs.
        let mut parents: BTreeSet<u32> = family
            .iter()
            .copied()
            .filter(|p| !self.procs[p].zombie)
            .collect();
        parents.insert(pid);
        let (mut unseen_ns, mut unseen_user, mut unseen_sys, mut unseen) = (0, 0, 0, 0u64);
        loop {
            // A record of a process the run knows (read while it exited) is its own row's.
            let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.unseen)
                .into_iter()
                .partition(|(e, _)| {
                    parents.contains(&e.ppid)
                        && self.procs.get(&e.pid).is_none_or(|t| t.ppid != e.ppid)
                });
            self.unseen = kept;
            if taken.is_empty() {
                break;
            }
            for (exit, _) in taken {
                unseen_ns += exit.cpu_ns;
                unseen_user += exit.user_us * 1000;
                unseen_sys += exit.sys_us * 1000;
                unseen += 1;
                parents.insert(exit.pid);
            }
        }
        let ahead = self.procs.get(&pid).map_or(0, |r| r.counted_ahead_ns);
        let residual = growth_user + growth_sys - known - unseen_ns - ahead;
        if let Some(r) = self.procs.get_mut(&pid) {
            r.counted_ahead_ns = (-residual).max(0);
        }
        let (user, sys) = split_like(
            residual.max(0),
            growth_user - known_user - unseen_user,
            growth_sys - known_sys - unseen_sys,
        );
        // Those whose CPU after their last reading is unknown.
        let open: Vec<u32> = family
            .iter()
            .copied()
            .filter(|p| self.own_final_ns(*p).is_none())
            .collect();
        for member in &family {
            if let Some(m) = self.procs.get_mut(member) {
                m.accounted = true;
            }
        }
        // Every figure summed was truncated to a tick: a residual within that is rounding.
        let rounding = self.procfs.ns_per_tick() * (2 + 2 * truncated);
        let shown = residual > rounding;
        if open.len() == 1 {
            self.extra.insert(open[0], (user, sys));
        } else if shown && !open.is_empty() {
            let entry = self.unattributed.entry((pid, true)).or_default();
            entry.user_ns += user;
            entry.sys_ns += sys;
            entry.reaper = reaper_name.clone();
            entry.processes.extend(open.iter().copied());
        }
        let never_seen = if open.is_empty() && shown {
            residual
        } else {
            0
        };
        if unseen > 0 || never_seen > 0 {
            let entry = self.unattributed.entry((pid, false)).or_default();
            let (u, s) = split_like(never_seen, user, sys);
            let (uu, us) = split_like(unseen_ns, unseen_user, unseen_sys);
            entry.user_ns += u + uu;
            entry.sys_ns += s + us;
            entry.reaper = reaper_name;
            entry.unseen += unseen;
            entry.uncounted_ns += never_seen;
        }
    }

    /// Reads the exit records waiting: a record of a process the run knows is its final
    /// CPU (checked against the parent framelab read; only whole processes); others are
    /// kept a while, in case they are of the run's children that no sweep saw.
    fn drain_exits(&mut self, now_ns: i64) {
        let Ok(listener) = self.taskstats.as_mut() else {
            return;
        };
        let mut exits = Vec::new();
        listener.drain(&mut exits);
        if let Some(mailbox) = &self.thread_exits {
            let procs = &self.procs;
            mailbox.post(
                exits
                    .iter()
                    .filter(|e| procs.contains_key(&e.pid))
                    .filter_map(|e| {
                        let (tid, counters) = e.thread?;
                        Some(ThreadEnd {
                            pid: e.pid,
                            tid,
                            comm: e.comm.clone(),
                            counters,
                            by_ns: now_ns,
                            lifetime_ns: e.thread_lifetime_ns,
                        })
                    }),
            );
        }
        for exit in exits.into_iter().filter(|e| e.whole) {
            match self.procs.get(&exit.pid) {
                Some(_) => self.apply_exit(exit),
                None => match self.watched_exit_role(&exit) {
                    Some(role) => {
                        if let Some(name) =
                            self.watch.names.iter().find(|n| comm_of(n) == exit.comm)
                        {
                            self.matched_names.insert(name.clone());
                        }
                        // Ended before the window opened: not the window's.
                        if self.in_window() {
                            self.watched_exits.push((exit, role));
                        }
                    }
                    None => self.unseen.push((exit, now_ns)),
                },
            }
        }
        self.unseen.retain(|(_, at)| now_ns - at < UNSEEN_KEEP_NS);
    }

    /// Gives a tracked process its exit record, if the record is its (same parent).
    fn apply_exit(&mut self, exit: Exit) {
        let Some(t) = self.procs.get_mut(&exit.pid) else {
            return;
        };
        if t.ppid != exit.ppid {
            return;
        }
        // Its peak RSS, whoever reaped it (framelab's reaping tells only with its children's).
        t.exit_rss_bytes = t.exit_rss_bytes.max(exit.hiwater_rss_bytes);
        if t.gone.is_some_and(|g| g.by_framelab) {
            return;
        }
        // Read between its fork and its exec, it still had its parent's name: the main
        // thread's name at its exit is the one it ran under (the record is the main
        // thread's where it says how long it lived).
        if exit.lifetime_ns.is_some() {
            t.name.clone_from(&exit.comm);
        }
        self.exits.insert(exit.pid, exit);
    }

    /// A process first read after its exit record was drained (it lived less than a
    /// reading, and its record came in the same sweep, before it was listed): the record
    /// waiting among the unseen with its pid and parent is its own once the process is
    /// known to have exited (a zombie, gone, or read with its memory already released),
    /// and must not be counted a second time as a child no sweep saw.
    fn adopt_unseen_exit(&mut self, pid: u32) {
        let Some(ppid) = self.procs.get(&pid).map(|t| t.ppid) else {
            return;
        };
        if self.exits.contains_key(&pid) {
            return;
        }
        let Some(at) = (self.unseen.iter()).position(|(e, _)| e.pid == pid && e.ppid == ppid)
        else {
            return;
        };
        let (exit, _) = self.unseen.remove(at);
        self.apply_exit(exit);
    }

    /// A process's own CPU when it ended, where known: read as a zombie, or from its exit
    /// record (never below its last reading).
    fn own_final_ns(&self, pid: u32) -> Option<i64> {
        let t = self.procs.get(&pid)?;
        if t.zombie {
            return Some(t.last.own_ns());
        }
        let exit = self.exits.get(&pid)?;
        Some(exit.cpu_ns.max(t.last.own_ns()))
    }

    /// A process that opened a ring or hit a probe: part of the tree unless it is a watched
    /// one. One a watched process forked (a server's worker) is not the command's: its CPU
    /// is the watched row's once that process reaps it.
    pub fn observe_instrumented(&mut self, pid: u32, now_ns: i64) {
        if self.procs.contains_key(&pid) || self.ended() {
            return;
        }
        let role = if self.watch.pids.contains(&pid) {
            ProcessRole::Watched
        } else if self.below_watched(pid) {
            return;
        } else {
            ProcessRole::Child
        };
        self.observe(pid, role, now_ns);
    }

    /// Whether an ancestor of `pid` below framelab is a watched process.
    fn below_watched(&self, mut pid: u32) -> bool {
        for _ in 0..64 {
            let Some(stat) = self.procfs.stat(pid) else {
                return false;
            };
            pid = stat.ppid;
            if pid <= 1 || pid == self.collector_pid {
                return false;
            }
            let watched = self.watch.pids.contains(&pid)
                || (self.procs.get(&pid)).is_some_and(|t| t.role == ProcessRole::Watched);
            if watched {
                return true;
            }
        }
        false
    }

    /// Whether `pid` or one of its ancestors below framelab is a leftover of an earlier run
    /// (see `foreign`): a process it started is not this run's either, even one started just
    /// after the launch. Sweeps read children before their parents, so the parent may not
    /// have been classified yet: it is read here.
    fn foreign_ancestor(&mut self, mut pid: u32) -> bool {
        for _ in 0..64 {
            if self.foreign.contains(&pid) {
                return true;
            }
            if pid <= 1 || pid == self.collector_pid || self.procs.contains_key(&pid) {
                return false;
            }
            let Some(stat) = self.procfs.stat(pid) else {
                return false;
            };
            if stat.start_ns <= self.launched_mono_ns - START_TICK_SLACK_NS {
                self.foreign.insert(pid);
                return true;
            }
            pid = stat.ppid;
        }
        false
    }

    /// Reads one process; false when it cannot be read (gone).
    fn observe(&mut self, pid: u32, role: ProcessRole, now_ns: i64) -> bool {
        let Some(stat) = self.procfs.stat(pid) else {
            return false;
        };
        if role == ProcessRole::Child
            && !self.procs.contains_key(&pid)
            && !self.service_of.contains_key(&pid)
            && !self.services.iter().any(|(p, _)| *p == pid)
            && (stat.start_ns <= self.launched_mono_ns - START_TICK_SLACK_NS
                || self.foreign_ancestor(stat.ppid))
        {
            // Older than the command, or a child of such a leftover, and not started for it:
            // not the run's (read, not kept).
            self.foreign.insert(pid);
            return true;
        }
        if role == ProcessRole::Watched && self.watch.pids.contains(&pid) {
            let first = *self.watched_starts.entry(pid).or_insert(stat.start_ns);
            if first != stat.start_ns {
                // The watched process ended and its pid now names another: not watched.
                self.reused.insert(pid);
                return false;
            }
        }
        let clock_ns = self.procfs.cpu_clock_ns(pid);
        // The peak RSS is a high-water mark: read at first sight, then every RSS_EVERY_NS
        // (the status file costs more than stat); framelab's own reaps give it exactly.
        let rss_due = self.procs.get(&pid).is_none_or(|t| {
            now_ns.saturating_sub(t.rss_read_ns) >= RSS_EVERY_NS
                || t.start_ticks_ns != stat.start_ns
        });
        let rss = if rss_due {
            self.procfs.peak_rss_bytes(pid)
        } else {
            None
        };
        let reading = Reading {
            cpu: stat.cpu,
            clock_ns,
        };
        if self
            .procs
            .get(&pid)
            .is_some_and(|t| t.start_ticks_ns != stat.start_ns)
        {
            // The pid now names another process: the one tracked under it is gone.
            let mut old = self.procs.remove(&pid).expect("checked above");
            if old.gone.is_none() {
                old.gone = Some(Gone {
                    at_ns: now_ns,
                    by_framelab: false,
                });
            }
            self.retired.push((pid, old));
        }
        let in_window = self.in_window();
        // Alive since its start (boot-based, same as CLOCK_MONOTONIC without suspend), or since
        // launch for processes older than the run.
        let started_ns = (stat.start_ns - self.origin_mono_ns).clamp(0, now_ns);
        let watch_role = match role {
            ProcessRole::Watched => self
                .by_name
                .get(&pid)
                .cloned()
                .unwrap_or_else(|| self.watch.role_of_pid(pid, &stat.comm)),
            _ => String::new(),
        };
        // A watched process first read inside the window counts from its birth if it was
        // born inside it, else from now (what it used before is not the window's).
        let born_in_window = match (role, self.window) {
            (ProcessRole::Watched, Some((start, _))) => started_ns >= start - START_TICK_SLACK_NS,
            _ => true,
        };
        let first_sight = !self.procs.contains_key(&pid);
        let tracked = self.procs.entry(pid).or_insert_with(|| Tracked {
            role,
            watch_role,
            ppid: stat.ppid,
            name: stat.comm.clone(),
            start_ticks_ns: stat.start_ns,
            first_seen_ns: started_ns,
            last_seen_ns: now_ns,
            zombie: false,
            zombie_since_ns: None,
            gone: None,
            // Born inside the window: everything it used counts.
            baseline: in_window.then(|| {
                if born_in_window {
                    Reading::zero(clock_ns.is_some())
                } else {
                    reading
                }
            }),
            last: reading,
            // Everything below framelab started after the launch, with nothing reaped yet.
            settled: Reading::zero(false),
            accounted: false,
            counted_ahead_ns: 0,
            peak_rss_bytes: 0,
            rss_read_ns: i64::MIN,
            exit_rss_bytes: 0,
            reaped_max_rss_bytes: None,
        });
        if tracked.gone.is_some() {
            return true;
        }
        tracked.ppid = stat.ppid;
        tracked.name = stat.comm;
        tracked.last = reading;
        tracked.last_seen_ns = now_ns;
        tracked.zombie = matches!(stat.state, 'Z' | 'X');
        if tracked.zombie && tracked.zombie_since_ns.is_none() {
            tracked.zombie_since_ns = Some(now_ns);
        }
        if let Some(rss) = rss {
            tracked.peak_rss_bytes = tracked.peak_rss_bytes.max(rss);
            tracked.rss_read_ns = now_ns;
        }
        // Its memory gone (no VmHWM at first sight) or a zombie: it has exited already.
        if tracked.zombie || (first_sight && rss.is_none()) {
            self.adopt_unseen_exit(pid);
        }
        self.settle_children_never_seen(pid, now_ns);
        true
    }

    /// Settles `pid`'s reaped-children time now if it grew while every child the run knows
    /// of it is still in /proc: then only children no sweep saw were reaped, and their CPU
    /// must not wait for a known child's end to be charged to it.
    fn settle_children_never_seen(&mut self, pid: u32, now_ns: i64) {
        let Some(t) = self.procs.get(&pid) else {
            return;
        };
        let grown = t.last.cpu.children_user_ns + t.last.cpu.children_sys_ns
            > t.settled.cpu.children_user_ns + t.settled.cpu.children_sys_ns;
        if !grown || t.role == ProcessRole::Watched || t.gone.is_some() {
            return;
        }
        // Read after `pid`'s reading: a child still here was not reaped before it.
        let a_known_child_left = self
            .procs
            .iter()
            .any(|(&c, t)| t.ppid == pid && t.gone.is_none() && !self.procfs.exists(c));
        if a_known_child_left {
            return; // `settle` reads the reaper again once that child is marked gone
        }
        // Their exit records came before their reaping, so before this reading.
        self.drain_exits(now_ns);
        self.settle_reaper(pid);
    }

    /// Opens the window: takes the baselines. A window that starts at launch counts everything
    /// the command's tree did (however late this is called); watched processes count from now.
    pub fn start_window(&mut self, now_ns: i64, command_pid: u32, at_launch: bool) {
        self.sample(now_ns, command_pid);
        // At launch, the window is the run's from 0 however late it is noticed: a process
        // that lived before now is alive in it (its wall) as its CPU is counted in it.
        self.window = Some((if at_launch { 0 } else { now_ns }, None));
        for tracked in self.procs.values_mut() {
            // Services started before the command: only what they use from now on counts.
            let before = matches!(tracked.role, ProcessRole::Watched | ProcessRole::Service);
            if at_launch && !before {
                tracked.baseline = Some(Reading::zero(tracked.last.clock_ns.is_some()));
            } else if tracked.gone.is_none() {
                tracked.baseline = Some(tracked.last);
                // What its children used before the window is not the window's.
                tracked.settled = tracked.last;
            }
        }
        if !at_launch {
            self.extra.clear();
            self.unattributed.clear();
        }
    }

    /// Reads a child framelab is about to reap (a zombie): its stat and CPU clock hold its
    /// final times.
    pub fn final_reading(&mut self, pid: u32, now_ns: i64) {
        if self.ended() {
            return;
        }
        let role = self.procs.get(&pid).map_or(ProcessRole::Child, |t| t.role);
        self.observe(pid, role, now_ns);
    }

    /// A tree process framelab reaped, with its rusage (own + its reaped children).
    pub fn reaped(&mut self, pid: u32, rusage: CpuTimes, max_rss_bytes: u64, now_ns: i64) {
        if self.ended() {
            return;
        }
        let in_window = self.in_window();
        match self.procs.get_mut(&pid) {
            Some(tracked) if tracked.gone.is_none() => {
                tracked.reaped_max_rss_bytes = Some(max_rss_bytes);
                tracked.gone = Some(Gone {
                    at_ns: now_ns,
                    by_framelab: true,
                });
                let zombie = tracked.zombie;
                if zombie {
                    // Its final reading holds every child it reaped, with their own reaped
                    // children: those not found gone yet are gone now.
                    let vanished: Vec<u32> = self
                        .procs
                        .iter()
                        .filter(|(&c, t)| t.gone.is_none() && !self.procfs.exists(c))
                        .map(|(&c, _)| c)
                        .collect();
                    self.settle(vanished, now_ns);
                    self.settle_reaper(pid);
                } else if in_window {
                    let tracked = &self.procs[&pid];
                    // Not read as a zombie: what it used since its last reading is unknown
                    // beyond the rusage total.
                    let last = &tracked.last;
                    let since = rusage.user_ns + rusage.sys_ns - last.total_ns();
                    let (user, sys) = split_like(
                        since.max(0),
                        rusage.user_ns - last.cpu.user_ns - last.cpu.children_user_ns,
                        rusage.sys_ns - last.cpu.sys_ns - last.cpu.children_sys_ns,
                    );
                    self.unread_reaped.user_ns += user;
                    self.unread_reaped.sys_ns += sys;
                    self.unread_reaped_count += 1;
                }
            }
            Some(_) => {}
            // A leftover of an earlier run, reaped now: its CPU is that run's.
            None if self.foreign.remove(&pid) => {}
            None if in_window => {
                self.unread_reaped.user_ns += rusage.user_ns;
                self.unread_reaped.sys_ns += rusage.sys_ns;
                self.unread_reaped_count += 1;
            }
            None => {}
        }
    }

    /// Closes the window: the final readings. Call before stopping the command.
    pub fn end_window(&mut self, now_ns: i64, command_pid: u32) {
        if self.window.is_none() {
            self.start_window(now_ns, command_pid, false);
        }
        self.sample(now_ns, command_pid);
        // What reapers' children time grew by since their last settlement: the children they
        // reaped that were never seen, and the rest of those that ended after a last reading.
        let reapers: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, t)| t.baseline.is_some())
            .map(|(&pid, _)| pid)
            .collect();
        for pid in reapers {
            self.settle_reaper(pid);
        }
        if let Some((start, _)) = self.window {
            self.window = Some((start, Some(now_ns)));
        }
    }

    /// Per-process rows over the window, plus an `(exited children)` row for what none holds.
    pub fn results(&self) -> Vec<ProcessStats> {
        let Some((start, Some(end))) = self.window else {
            return Vec::new();
        };
        let tick = self.procfs.ns_per_tick();
        let mut rows = Vec::new();
        // For each watched row: its whole life's CPU if it ended (what its parent's reaped
        // children time grew by when it was reaped), and what its reaped children added.
        let mut watched_ends: Vec<(usize, Option<i64>, i64)> = Vec::new();
        let all = self
            .procs
            .iter()
            .map(|(&pid, t)| (pid, t, true))
            .chain(self.retired.iter().map(|(pid, t)| (*pid, t, false)));
        for (pid, t, current) in all {
            let Some(baseline) = t.baseline else { continue };
            let user_ticks = (t.last.cpu.user_ns - baseline.cpu.user_ns).max(0);
            let sys_ticks = (t.last.cpu.sys_ns - baseline.cpu.sys_ns).max(0);
            let (mut cpu_ns, mut resolution, mut source) =
                match (t.last.clock_ns, baseline.clock_ns) {
                    (Some(last), Some(first)) => ((last - first).max(0), 1, CpuSource::Clock),
                    _ => (user_ticks + sys_ticks, tick, CpuSource::Proc),
                };
            let (mut user_ticks, mut sys_ticks) = (user_ticks, sys_ticks);
            let alive_from = t.first_seen_ns.max(start);
            let mut alive_to = end;
            if let Some(gone) = t.gone {
                alive_to = t.last_seen_ns.min(end);
                if !t.zombie {
                    source = CpuSource::LastReading;
                }
                let exit = current.then(|| self.exits.get(&pid)).flatten();
                if let (false, Some(exit)) = (t.zombie, exit) {
                    // The kernel's record of its exit: its own CPU up to then.
                    let final_ns = exit.cpu_ns.max(t.last.own_ns());
                    let since = final_ns - t.last.own_ns();
                    let (user, sys) = split_like(since, exit.user_us, exit.sys_us);
                    cpu_ns += since;
                    user_ticks += user;
                    sys_ticks += sys;
                    resolution = tick;
                    source = CpuSource::Exit;
                    alive_to = match exit.lifetime_ns {
                        // Its start and how long it lived: its exit to a tick, where a sweep
                        // only brackets it (and may take its time before reading it gone).
                        // Its start as `first_seen_ns` has it, so a process born in the
                        // window has its lifetime for its wall.
                        Some(lifetime) => self.start_since_origin(t) + lifetime,
                        None => (t.last_seen_ns + since).min(gone.at_ns),
                    }
                    .min(end);
                }
                if let Some(&(user, sys)) = current.then(|| self.extra.get(&pid)).flatten() {
                    cpu_ns += user + sys;
                    user_ticks += user;
                    sys_ticks += sys;
                    resolution = tick;
                    source = CpuSource::Reaper;
                    // It ended somewhere between its last reading and the one that found it
                    // gone; running flat out, no earlier than the CPU it used since.
                    alive_to = (t.last_seen_ns + user + sys).min(gone.at_ns).min(end);
                }
            }
            let mut notes = Vec::new();
            if t.role == ProcessRole::Watched {
                // What the children it reaped used: its cutime + cstime grew by their totals.
                let user = (t.last.cpu.children_user_ns - baseline.cpu.children_user_ns).max(0);
                let sys = (t.last.cpu.children_sys_ns - baseline.cpu.children_sys_ns).max(0);
                let reaped_ns = user + sys;
                if reaped_ns > 0 {
                    cpu_ns += reaped_ns;
                    user_ticks += user;
                    sys_ticks += sys;
                    resolution = resolution.max(tick);
                }
                let by_pid = self.watch.pids.contains(&pid);
                // A zombie its parent has not reaped yet ended too.
                let ended_ns = t.gone.map(|g| g.at_ns).or(t.zombie_since_ns);
                if let Some(at) = ended_ns {
                    alive_to = alive_to.min(at);
                }
                if let (Some(ended_ns), true) = (ended_ns, by_pid) {
                    let reused = if self.reused.contains(&pid) {
                        ", and its pid was then taken by another process (not counted)"
                    } else {
                        ""
                    };
                    notes.push(format!(
                        "ended {:.2} s into the window: counted up to then{reused}",
                        (ended_ns.min(end) - start).max(0) as f64 / 1e9
                    ));
                }
                let whole_life = t.gone.map(|_| {
                    let own = self.own_final_ns(pid).unwrap_or(t.last.own_ns());
                    own + t.last.cpu.children_user_ns + t.last.cpu.children_sys_ns
                });
                watched_ends.push((rows.len(), whole_life, reaped_ns));
            }
            let (user_ns, sys_ns) = split_like(cpu_ns, user_ticks, sys_ticks);
            rows.push(ProcessStats {
                pid,
                ppid: t.ppid,
                name: t.name.clone(),
                role: t.role,
                user_ns,
                sys_ns,
                wall_ns: (alive_to - alive_from).max(0),
                peak_rss_bytes: self.peak_rss_bytes(pid, t),
                cpu_resolution_ns: resolution,
                cpu_source: source,
                note: notes.join("; "),
                service: self.service_of.get(&pid).cloned().unwrap_or_default(),
                watch_role: t.watch_role.clone(),
            });
        }
        // Processes of a watched name that lived between two readings: a row each, from
        // their exit records (`cpu_source` exit); past MAX_EXIT_ROWS of a role, the rest add
        // up in one row that says how many.
        let mut per_role: BTreeMap<&str, usize> = BTreeMap::new();
        // Per role: the folded row, and its entry in `watched_ends`.
        let mut folded: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (exit, role) in &self.watched_exits {
            let (user_ns, sys_ns) = split_like(exit.cpu_ns, exit.user_us, exit.sys_us);
            let lived = exit.lifetime_ns.unwrap_or(0).clamp(0, end - start);
            let seen = per_role.entry(role.as_str()).or_default();
            *seen += 1;
            if *seen > MAX_EXIT_ROWS {
                if let Some(&(at, end_at)) = folded.get(role.as_str()) {
                    let row = &mut rows[at];
                    row.user_ns += user_ns;
                    row.sys_ns += sys_ns;
                    row.peak_rss_bytes = row.peak_rss_bytes.max(exit.hiwater_rss_bytes);
                    let whole = &mut watched_ends[end_at].1;
                    *whole = Some(whole.unwrap_or(0) + exit.cpu_ns);
                    continue;
                }
                folded.insert(role.as_str(), (rows.len(), watched_ends.len()));
            }
            watched_ends.push((rows.len(), Some(exit.cpu_ns), 0));
            rows.push(ProcessStats {
                pid: exit.pid,
                ppid: exit.ppid,
                name: exit.comm.clone(),
                role: ProcessRole::Watched,
                user_ns,
                sys_ns,
                wall_ns: lived,
                peak_rss_bytes: exit.hiwater_rss_bytes,
                cpu_resolution_ns: tick,
                cpu_source: CpuSource::Exit,
                note: String::new(),
                service: String::new(),
                watch_role: role.clone(),
            });
        }
        for (role, &(at, _)) in &folded {
            let more = per_role[role] - MAX_EXIT_ROWS;
            let row = &mut rows[at];
            row.wall_ns = end - start;
            row.note = format!(
                "{more} processes of role {role} that lived between two readings, added up (their exit records)"
            );
        }
        // A watched process that reaped another watched one would hold its CPU twice: in its
        // reaped children's time (the whole of the other's life) and in the other's row.
        for &(at, _, reaped_ns) in &watched_ends {
            if reaped_ns <= 0 {
                continue;
            }
            let parent = rows[at].pid;
            let twice: i64 = watched_ends
                .iter()
                .filter(|&&(other, _, _)| other != at && rows[other].ppid == parent)
                .filter_map(|&(_, whole_life, _)| whole_life)
                .sum();
            let taken = twice.min(reaped_ns);
            if taken > 0 {
                let row = &mut rows[at];
                let (user, sys) = split_like(taken, row.user_ns, row.sys_ns);
                row.user_ns -= user;
                row.sys_ns -= sys;
            }
            if reaped_ns - taken <= 0 {
                continue;
            }
            let row = &mut rows[at];
            let own = row.user_ns + row.sys_ns - (reaped_ns - taken);
            let with = format!(
                "{:.2} s of its own and {:.2} s of the children it reaped",
                own as f64 / 1e9,
                (reaped_ns - taken) as f64 / 1e9
            );
            row.note = if row.note.is_empty() {
                with
            } else {
                format!("{with}; {}", row.note)
            };
        }
        let mut whys = Vec::new();
        let (mut user_ns, mut sys_ns) = (0, 0);
        let interval = interval_text(self.interval_ns);
        for (&(reaper, seen), u) in &self.unattributed {
            user_ns += u.user_ns;
            sys_ns += u.sys_ns;
            let by = format!("reaped by {} ({reaper})", u.reaper);
            let secs = format!("{:.2} s", (u.user_ns + u.sys_ns) as f64 / 1e9);
            whys.push(if seen {
                let pids: Vec<String> = u.processes.iter().map(u32::to_string).collect();
                let without = match &self.taskstats {
                    Ok(_) => String::new(),
                    Err(why) => format!(" (the kernel's exit records would: {why})"),
                };
                format!(
                    "{secs} {by}: what {} processes ({}) used after their last readings; each ended in the same {interval} as another, so the shares cannot be told apart{without}",
                    u.processes.len(),
                    pids.join(", "),
                )
            } else if u.unseen > 0 {
                let more = if u.uncounted_ns > 0 {
                    format!(
                        ", {:.2} s of it what no exit record accounts for (a record is written before its process has finished exiting and freed its memory)",
                        u.uncounted_ns as f64 / 1e9
                    )
                } else {
                    String::new()
                };
                format!(
                    "{secs} {by}: {} {} that lived less than one reading ({interval}){more}",
                    u.unseen,
                    if u.unseen == 1 { "process" } else { "processes" }
                )
            } else {
                format!("{secs} {by}: processes that lived less than one reading ({interval}), never seen")
            });
        }
        if self.unread_reaped_count > 0 {
            user_ns += self.unread_reaped.user_ns;
            sys_ns += self.unread_reaped.sys_ns;
            whys.push(format!(
                "{:.2} s reaped by framelab without a final reading ({} {})",
                (self.unread_reaped.user_ns + self.unread_reaped.sys_ns) as f64 / 1e9,
                self.unread_reaped_count,
                if self.unread_reaped_count == 1 {
                    "process"
                } else {
                    "processes"
                }
            ));
        }
        if !whys.is_empty() {
            rows.push(ProcessStats {
                pid: 0,
                ppid: 0,
                name: "(exited children)".into(),
                role: ProcessRole::Child,
                user_ns,
                sys_ns,
                wall_ns: end - start,
                peak_rss_bytes: 0,
                cpu_resolution_ns: tick,
                cpu_source: CpuSource::Unattributed,
                note: whys.join("; "),
                service: String::new(),
                watch_role: String::new(),
            });
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

    /// When a process started, from the launch: /proc's start, truncated to a clock tick.
    /// The command and its descendants started after the launch, where a start truncated to
    /// before it (by up to a tick) is taken as the launch, as `first_seen_ns` is: else a
    /// process that lived a few ms would end that much early, its wall shorter than its CPU.
    fn start_since_origin(&self, t: &Tracked) -> i64 {
        let start = t.start_ticks_ns - self.origin_mono_ns;
        match t.role {
            ProcessRole::Command | ProcessRole::Child => start.max(0),
            ProcessRole::Watched | ProcessRole::Service => start,
        }
    }

    /// A process's peak RSS: the highest of its VmHWM readings and its exit record's, and its
    /// ru_maxrss where framelab reaped it and it reaped no child (ru_maxrss holds the largest
    /// of its reaped children's peaks: a wrapper's, `sh -c`'s, would be its child's).
    fn peak_rss_bytes(&self, pid: u32, t: &Tracked) -> u64 {
        let peak = t.peak_rss_bytes.max(t.exit_rss_bytes);
        match t.reaped_max_rss_bytes {
            Some(maxrss) if !self.had_children(pid, t) => peak.max(maxrss),
            _ => peak,
        }
    }

    /// Whether a process may have reaped a child: its children's CPU time grew, a process
    /// seen was its child, or an exit record names it as a parent.
    fn had_children(&self, pid: u32, t: &Tracked) -> bool {
        t.last.cpu.children_user_ns + t.last.cpu.children_sys_ns > 0
            || self
                .procs
                .iter()
                .map(|(&p, c)| (p, c))
                .chain(self.retired.iter().map(|(p, c)| (*p, c)))
                .any(|(p, c)| p != pid && c.ppid == pid && c.start_ticks_ns >= t.start_ticks_ns)
            || self.unseen.iter().any(|(e, _)| e.ppid == pid)
            || self.exits.values().any(|e| e.ppid == pid)
    }

    /// Names given with `--watch` that matched no process during the run.
    pub fn unmatched_names(&self) -> Vec<String> {
        self.watch
            .names
            .iter()
            .filter(|name| !self.matched_names.contains(*name))
            .cloned()
            .collect()
    }
}

/// Splits `total_ns` into user and sys in the proportion of the clock-tick figures (all
/// user when both are 0): the split is only as fine as a tick, the total may be finer.
fn split_like(total_ns: i64, user_ticks_ns: i64, sys_ticks_ns: i64) -> (i64, i64) {
    let (user, sys) = (user_ticks_ns.max(0), sys_ticks_ns.max(0));
    if user + sys == 0 {
        return (total_ns, 0);
    }
    let sys_ns = (total_ns as i128 * sys as i128 / (user + sys) as i128) as i64;
    (total_ns - sys_ns, sys_ns)
}

/// A process name as the kernel keeps it (comm): at most 15 bytes.
fn comm_of(name: &str) -> &str {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// `50 ms`, `1 s`.
fn interval_text(ns: i64) -> String {
    if ns % 1_000_000_000 == 0 {
        format!("{} s", ns / 1_000_000_000)
    } else {
        format!("{} ms", (ns as f64 / 1e6).round())
    }
}

#[cfg(test)]
#[path = "accounting_tests.rs"]
mod tests;
