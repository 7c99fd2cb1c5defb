//! Which processes the per-process sources look at: everything below framelab (the command
//! and its descendants, orphans included since framelab is their subreaper) plus the
//! watched ones. Walking the tree costs a directory read per process, so it is done a few
//! times a second, not at every tick.

use std::time::{Duration, Instant};

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
        }
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
        if !self.watched_names.is_empty()
            && self
                .names_refreshed
                .is_none_or(|t| now.duration_since(t) >= NAMES_EVERY)
        {
            self.by_name = self
                .watched_names
                .iter()
                .flat_map(|name| self.procfs.find_by_name(name))
                .filter(|&p| Some(p) != self.root)
                .collect();
            self.names_refreshed = Some(now);
        }
        pids.extend(self.by_name.iter().copied());
        pids.sort_unstable();
        pids.dedup();
        self.pids = pids;
        self.refreshed = Some(now);
    }
}
