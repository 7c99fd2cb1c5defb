//! Which processes the per-process sources look at: everything below framelab (the command
//! and its descendants, orphans included since framelab is their subreaper) plus the
//! watched ones. Walking the tree costs a directory read per process, so it is done a few
//! times a second, not at every tick. Processes of a watched name are learnt at their exec
//! from the kernel's process events where framelab has them; else /proc is scanned for
//! them every 2 s.

use std::time::{Duration, Instant};

use crate::session::procevents::{ProcEvent, ProcEvents};
use crate::session::procfs::Procfs;

const REFRESH_EVERY: Duration = Duration::from_millis(200);
/// Finding processes by name scans all of /proc: rarer still.
const NAMES_EVERY: Duration = Duration::from_secs(2);

pub struct ProcessTree {
    procfs: Procfs,
    /// framelab itself; `None` for a fixed list (tests, `framelab sources`).
    root: Option<u32>,
    watched_pids: Vec<u32>,
    watched_names: Vec<String>,
    by_name: Vec<u32>,
    pids: Vec<u32>,
    refreshed: Option<Instant>,
    names_refreshed: Option<Instant>,
    /// Exec events, for `watched_names` (see `with_events`).
    events: Option<ProcEvents>,
    events_lost: u64,
}

impl ProcessTree {
    /// The descendants of `root` (framelab's pid) plus watched processes.
    pub fn below(
        procfs: Procfs,
        root: u32,
        watched_pids: Vec<u32>,
        watched_names: Vec<String>,
    ) -> ProcessTree {
        ProcessTree {
            procfs,
            root: Some(root),
            watched_pids,
            watched_names,
            by_name: Vec::new(),
            pids: Vec::new(),
            refreshed: None,
            names_refreshed: None,
            events: None,
            events_lost: 0,
        }
    }

    /// Exactly these processes.
    pub fn fixed(procfs: Procfs, pids: Vec<u32>) -> ProcessTree {
        ProcessTree {
            procfs,
            root: None,
            watched_pids: pids,
            watched_names: Vec::new(),
            by_name: Vec::new(),
            pids: Vec::new(),
            refreshed: None,
            names_refreshed: None,
            events: None,
            events_lost: 0,
        }
    }

    /// Learns of processes of the watched names at their exec, from the kernel's events:
    /// /proc is scanned for them once, and again only if events were lost.
    pub fn with_events(mut self, events: ProcEvents) -> ProcessTree {
        self.events = Some(events);
        self
    }

    /// The processes as last found, refreshing first when due.
    pub fn pids(&mut self, now: Instant) -> &[u32] {
        if self
            .refreshed
            .is_none_or(|t| now.duration_since(t) >= REFRESH_EVERY)
        {
            self.refresh(now);
        }
        &self.pids
    }

    /// The processes as they are now, whatever the last refresh.
    pub fn refresh_now(&mut self, now: Instant) -> &[u32] {
        self.refresh(now);
        &self.pids
    }

    fn refresh(&mut self, now: Instant) {
        let mut pids = Vec::new();
        if let Some(root) = self.root {
            let mut stack = self.procfs.children(root);
            while let Some(pid) = stack.pop() {
                pids.push(pid);
                stack.extend(self.procfs.children(pid));
            }
        }
        pids.extend(
            self.watched_pids
                .iter()
                .copied()
                .filter(|&p| self.procfs.exists(p)),
        );
        if !self.watched_names.is_empty() {
            self.refresh_names(now);
        }
        pids.extend(self.by_name.iter().copied());
        pids.sort_unstable();
        pids.dedup();
        self.pids = pids;
        self.refreshed = Some(now);
    }

    fn refresh_names(&mut self, now: Instant) {
        let mut scan = self
            .names_refreshed
            .is_none_or(|t| now.duration_since(t) >= NAMES_EVERY);
        let mut execs = Vec::new();
        if let Some(events) = self.events.as_mut() {
            let mut got = Vec::new();
            events.drain(&mut got);
            execs.extend(got.into_iter().filter_map(|e| match e {
                ProcEvent::Exec { pid } => Some(pid),
                ProcEvent::Exit { .. } => None,
            }));
            scan = self.names_refreshed.is_none() || events.lost != self.events_lost;
            self.events_lost = events.lost;
        }
        if scan {
            self.by_name = self
                .watched_names
                .iter()
                .flat_map(|name| self.procfs.find_by_name(name))
                .filter(|&p| Some(p) != self.root)
                .collect();
            self.names_refreshed = Some(now);
        } else {
            let procfs = &self.procfs;
            self.by_name.retain(|&p| procfs.exists(p));
        }
        for pid in execs {
            let names = self.procfs.names_of(pid);
            let watched = self.watched_names.iter().any(|n| names.contains(n));
            if watched && Some(pid) != self.root && !self.by_name.contains(&pid) {
                self.by_name.push(pid);
            }
        }
    }
}
