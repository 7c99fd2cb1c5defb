//! Which processes the per-process sources look at: everything below framelab (the command
//! and its descendants, orphans included since framelab is their subreaper) plus the
//! watched ones. Walking the tree costs a directory read per process, so it is done a few
//! times a second, not at every tick, and where the run has a cgroup of its own, only when
//! its `cgroup.procs` says the tree changed (`TreeCache`). Processes of a watched name are
//! learnt at their exec from the kernel's process events where framelab has them; else
//! /proc is scanned for them every 2 s.

use std::time::{Duration, Instant};

use crate::session::procevents::{ProcEvent, ProcEvents};
use crate::session::procfs::Procfs;
use crate::session::tree_cache::TreeCache;

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
    /// The run's cgroup, which says when the tree below `root` must be walked again (see
    /// `through_group`), and the clock its ages are told on.
    group: Option<(TreeCache<u32>, Instant)>,
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
            group: None,
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
            group: None,
        }
    }

    /// Learns of processes of the watched names at their exec, from the kernel's events:
    /// /proc is scanned for them once, and again only if events were lost.
    pub fn with_events(mut self, events: ProcEvents) -> ProcessTree {
        self.events = Some(events);
        self
    }

    /// Walks the tree below `root` only when the run's cgroup in `dir` lists other
    /// processes than the last walk found, or that walk is a second old.
    pub fn through_group(mut self, dir: std::path::PathBuf) -> ProcessTree {
        self.group = Some((TreeCache::new(dir), Instant::now()));
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

    /// Whether the processes were ever looked for.
    #[cfg(test)]
    pub fn looked(&self) -> bool {
        self.refreshed.is_some()
    }

    /// The processes as they are now, whatever the last refresh.
    pub fn refresh_now(&mut self, now: Instant) -> &[u32] {
        self.refresh(now);
        &self.pids
    }

    fn refresh(&mut self, now: Instant) {
        let mut pids = match self.root {
            Some(root) => self.walk_or_keep(root, now),
            None => Vec::new(),
        };
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

    /// The processes below `root`: the last walk's while the run's cgroup says it stands.
    fn walk_or_keep(&mut self, root: u32, now: Instant) -> Vec<u32> {
        let Some((cache, since)) = self.group.as_mut() else {
            return self.procfs.below(root);
        };
        let now_ns = now.saturating_duration_since(*since).as_nanos() as i64;
        if let Some(walk) = cache.still(now_ns) {
            return walk;
        }
        let walk = self.procfs.below(root);
        cache.walked(&walk, now_ns);
        walk
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc where `parent` has `children` (in `task/PARENT/children`).
    fn give_children(proc_root: &std::path::Path, parent: u32, children: &[u32]) {
        let task = proc_root.join(format!("{parent}/task/{parent}"));
        std::fs::create_dir_all(&task).unwrap();
        let listed: Vec<String> = children.iter().map(u32::to_string).collect();
        std::fs::write(task.join("children"), listed.join(" ")).unwrap();
    }

    #[test]
    fn the_tree_is_walked_again_when_the_run_group_lists_other_processes() {
        let proc_root = tempfile::tempdir().unwrap();
        let group = tempfile::tempdir().unwrap();
        let procs = group.path().join("cgroup.procs");
        give_children(proc_root.path(), 1, &[20]);
        give_children(proc_root.path(), 20, &[]);
        std::fs::write(&procs, "20\n").unwrap();
        let procfs = || Procfs::at(proc_root.path(), 100);
        let mut tree = ProcessTree::below(procfs(), 1, Vec::new(), Vec::new())
            .through_group(group.path().to_owned());
        let mut walked_each_time = ProcessTree::below(procfs(), 1, Vec::new(), Vec::new());
        let t0 = Instant::now();
        assert_eq!(tree.pids(t0), [20]);
        // A child the group does not list yet (as in a fake /proc: a real one lists a
        // child at its birth): the last walk stands, where a tree without a group walks.
        give_children(proc_root.path(), 20, &[21]);
        give_children(proc_root.path(), 21, &[]);
        let later = t0 + REFRESH_EVERY;
        assert_eq!(
            tree.pids(later),
            [20],
            "the group lists what the last walk found"
        );
        assert_eq!(walked_each_time.pids(later), [20, 21]);
        // The group lists it: walked again.
        std::fs::write(&procs, "20\n21\n").unwrap();
        assert_eq!(tree.pids(later + REFRESH_EVERY), [20, 21]);
        // And a second after the last walk, whatever the group says.
        give_children(proc_root.path(), 21, &[22]);
        give_children(proc_root.path(), 22, &[]);
        assert_eq!(tree.pids(later + 2 * REFRESH_EVERY), [20, 21]);
        let a_second_on = later + REFRESH_EVERY + Duration::from_secs(1);
        assert_eq!(tree.pids(a_second_on), [20, 21, 22]);
    }
}
