//! Skipping the walk of the process tree while the run's cgroup says nothing changed.
//!
//! Each reading of the processes lists the tree below framelab by walking every thread's
//! `task/*/children` (about 20 system calls for a one-process command: most of a reading's
//! cost). Where the run has a cgroup of its own, its `cgroup.procs` lists the run's
//! processes in one read. While it lists exactly the processes the last walk found, nothing
//! of the tree was born or ended since (a child is born in its parent's cgroup, and a
//! process that exits leaves the list at once, before it is reaped), so that walk's list
//! stands. The tree is walked again when the list differs, when the last walk found a
//! process the group does not list (a zombie, one that left the group, one in a group below
//! it, a leftover of an earlier run), and at least every `WALK_EVERY_NS` whatever it says.

use std::path::PathBuf;

use crate::model::ProcessRole;

/// The longest a walk's list is used without walking again.
const WALK_EVERY_NS: i64 = 1_000_000_000;

/// A walk's list of the tree, in its order, with its pids sorted.
type Walk = (Vec<(u32, ProcessRole)>, Vec<u32>);

pub struct TreeCache {
    /// The group's own `cgroup.procs` (not its sub-groups').
    procs_file: PathBuf,
    /// The last walk's list, in its order, and its pids sorted; `None` when it cannot be
    /// trusted (it held a process the group did not list).
    walked: Option<Walk>,
    walked_at_ns: i64,
    /// What the group listed at the last look, sorted.
    listed: Option<Vec<u32>>,
}

impl TreeCache {
    /// For the group in `dir` (cgroup v2, or v1's cpuacct group).
    pub fn new(dir: PathBuf) -> TreeCache {
        TreeCache {
            procs_file: dir.join("cgroup.procs"),
            walked: None,
            walked_at_ns: i64::MIN,
            listed: None,
        }
    }

    /// The last walk's list when the group lists exactly its processes and it is recent;
    /// `None`: walk the tree (then say what it found with `walked`).
    pub fn still(&mut self, now_ns: i64) -> Option<Vec<(u32, ProcessRole)>> {
        self.listed = read_pids(&self.procs_file);
        let (tree, pids) = self.walked.as_ref()?;
        let recent = now_ns.saturating_sub(self.walked_at_ns) < WALK_EVERY_NS;
        (recent && self.listed.as_ref() == Some(pids)).then(|| tree.clone())
    }

    /// What a walk of the tree found just after `still` looked at the group.
    pub fn walked(&mut self, tree: &[(u32, ProcessRole)], now_ns: i64) {
        let mut pids: Vec<u32> = tree.iter().map(|&(pid, _)| pid).collect();
        pids.sort_unstable();
        self.walked = (self.listed.as_ref() == Some(&pids)).then(|| (tree.to_vec(), pids));
        self.walked_at_ns = now_ns;
    }
}

/// The pids in a `cgroup.procs`, sorted; `None` when it cannot be read.
fn read_pids(file: &std::path::Path) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    pids.sort_unstable();
    Some(pids)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_walk_stands_while_the_group_lists_exactly_its_processes() {
        let dir = tempfile::tempdir().unwrap();
        let procs = dir.path().join("cgroup.procs");
        let tree = vec![(20, ProcessRole::Command), (21, ProcessRole::Child)];
        let mut cache = TreeCache::new(dir.path().to_owned());
        std::fs::write(&procs, "21\n20\n").unwrap();
        assert_eq!(cache.still(0), None, "never walked");
        cache.walked(&tree, 0);
        assert_eq!(cache.still(50 * MS), Some(tree.clone()), "same processes");
        // A child was born: walk.
        std::fs::write(&procs, "20\n21\n22\n").unwrap();
        assert_eq!(cache.still(100 * MS), None);
        let grown = vec![
            (20, ProcessRole::Command),
            (21, ProcessRole::Child),
            (22, ProcessRole::Child),
        ];
        cache.walked(&grown, 100 * MS);
        assert_eq!(cache.still(150 * MS), Some(grown.clone()));
        // Walked again a second after the last walk, whatever the group says.
        assert_eq!(cache.still(1_100 * MS), None);
    }

    #[test]
    fn a_walk_that_found_what_the_group_does_not_list_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let procs = dir.path().join("cgroup.procs");
        // 21 exited and is not reaped yet (or left the group): the walk still lists it.
        std::fs::write(&procs, "20\n").unwrap();
        let mut cache = TreeCache::new(dir.path().to_owned());
        assert_eq!(cache.still(0), None);
        cache.walked(&[(20, ProcessRole::Command), (21, ProcessRole::Child)], 0);
        assert_eq!(cache.still(50 * MS), None, "walked at every reading");
        // No group file (the group is gone): walk.
        std::fs::remove_file(&procs).unwrap();
        cache.walked(&[(20, ProcessRole::Command)], 50 * MS);
        assert_eq!(cache.still(100 * MS), None);
    }
}
