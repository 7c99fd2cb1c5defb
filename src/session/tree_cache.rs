//! Skipping the walk of the process tree while the run's cgroup says nothing changed.
//!
//! The accounting's readings of the processes and the telemetry's list of processes to
//! sample each list the tree below framelab by walking every thread's `task/*/children`
//! (about 20 system calls for a one-process command: most of a reading's cost). Where the run has a cgroup of its own, its `cgroup.procs` lists the run's
//! processes in one read. While it lists exactly the processes the last walk found, nothing
//! of the tree was born or ended since (a child is born in its parent's cgroup, and a
//! process that exits leaves the list at once, before it is reaped), so that walk's list
//! stands. The tree is walked again when the list differs, when the last walk found a
//! process the group does not list (a zombie, one that left the group, one in a group below
//! it, a leftover of an earlier run), and at least every `WALK_EVERY_NS` whatever it says.

use std::path::PathBuf;

use crate::sample::files::Reread;

/// The longest a walk's list is used without walking again.
const WALK_EVERY_NS: i64 = 1_000_000_000;

/// What a walk of the tree lists: a process, and maybe what the walk learnt of it.
pub trait Walked: Clone {
    fn pid(&self) -> u32;
}

impl Walked for u32 {
    fn pid(&self) -> u32 {
        *self
    }
}

impl<R: Clone> Walked for (u32, R) {
    fn pid(&self) -> u32 {
        self.0
    }
}

/// A walk's list of the tree, in its order, with its pids sorted.
type Walk<T> = (Vec<T>, Vec<u32>);

pub struct TreeCache<T> {
    /// The group's own `cgroup.procs` (not its sub-groups'), kept open: read at every
    /// reading, and reading it again from offset 0 costs about half of opening it again.
    procs_file: Reread,
    /// cgroup v1's `cgroup.procs` answers a second read of an open file from the list it
    /// made at the first, for as long as it is read within a second: opened for each
    /// reading there (a 0.5 s run's daemonized children went unseen).
    reopen: bool,
    /// The last walk's list, in its order, and its pids sorted; `None` when it cannot be
    /// trusted (it held a process the group did not list).
    walked: Option<Walk<T>>,
    walked_at_ns: i64,
    /// What the group listed at the last look, sorted.
    listed: Option<Vec<u32>>,
}

impl<T: Walked> TreeCache<T> {
    /// For the group in `dir` (cgroup v2, or v1's cpuacct group).
    pub fn new(dir: PathBuf) -> TreeCache<T> {
        TreeCache {
            reopen: !dir.join("cgroup.controllers").exists(),
            procs_file: Reread::new(dir.join("cgroup.procs")),
            walked: None,
            walked_at_ns: i64::MIN,
            listed: None,
        }
    }

    /// The last walk's list when the group lists exactly its processes and it is recent;
    /// `None`: walk the tree (then say what it found with `walked`).
    pub fn still(&mut self, now_ns: i64) -> Option<Vec<T>> {
        self.listed = if self.reopen {
            std::fs::read_to_string(self.procs_file.path())
                .ok()
                .as_deref()
                .map(pids_in)
        } else {
            self.procs_file.read().ok().map(pids_in)
        };
        let (tree, pids) = self.walked.as_ref()?;
        let recent = now_ns.saturating_sub(self.walked_at_ns) < WALK_EVERY_NS;
        (recent && self.listed.as_ref() == Some(pids)).then(|| tree.clone())
    }

    /// What a walk of the tree found just after `still` looked at the group.
    pub fn walked(&mut self, tree: &[T], now_ns: i64) {
        let mut pids: Vec<u32> = tree.iter().map(Walked::pid).collect();
        pids.sort_unstable();
        self.walked = (self.listed.as_ref() == Some(&pids)).then(|| (tree.to_vec(), pids));
        self.walked_at_ns = now_ns;
    }
}

/// The pids in a `cgroup.procs`'s text, sorted.
fn pids_in(text: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProcessRole;

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
        // No group file: walk.
        let mut without = TreeCache::new(dir.path().join("not-a-group"));
        assert_eq!(without.still(0), None);
        without.walked(&[(20, ProcessRole::Command)], 0);
        assert_eq!(without.still(50 * MS), None);
    }

    /// The kept `cgroup.procs` of a real group: it lists the processes that join and leave,
    /// and once the group is removed it cannot be read (the kernel's ENODEV), so the tree is
    /// walked. Needs a cgroup v2 hierarchy framelab may write (root in CI).
    #[test]
    fn a_kept_group_file_follows_its_group_until_it_is_removed() {
        let Some(root) = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
            .into_iter()
            .map(std::path::Path::new)
            .find(|r| r.join("cgroup.procs").exists() && r.join("cgroup.subtree_control").exists())
        else {
            eprintln!("skipped: no cgroup v2 hierarchy on this machine");
            return;
        };
        let group = root.join(format!("framelab-tree-cache-test-{}", std::process::id()));
        if std::fs::create_dir(&group).is_err() {
            eprintln!(
                "skipped: cannot make a cgroup under {} (not root?)",
                root.display()
            );
            return;
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut cache = TreeCache::new(group.clone());
        assert_eq!(cache.still(0), None, "never walked");
        cache.walked(&[], 0);
        assert_eq!(cache.still(10 * MS), Some(Vec::new()), "an empty group");
        std::fs::write(group.join("cgroup.procs"), pid.to_string()).unwrap();
        assert_eq!(cache.still(20 * MS), None, "a process joined: walk");
        let tree = [(pid, ProcessRole::Command)];
        cache.walked(&tree, 20 * MS);
        assert_eq!(cache.still(30 * MS), Some(tree.to_vec()));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(cache.still(40 * MS), None, "it left: walk");
        cache.walked(&[], 40 * MS);
        std::fs::remove_dir(&group).unwrap();
        assert_eq!(cache.still(50 * MS), None, "the group is gone: walk");
    }
}
