//! Which tasks belong to a run, for events opened on every task of a CPU (scheduler
//! switches, uprobes): the descendants of framelab (not framelab itself) and the watched
//! processes. The kernel says who made each task as it makes it, and what it is named
//! (`task_records`, in the same rings as the events), so a process that lived between two
//! drains and is gone from /proc is still known, by name; tasks older than the run are
//! looked up once in /proc.

use std::collections::HashMap;

use super::task_records::{Fork, TaskRecord};

/// Which tasks belong to the run: each task looked up once (its `status`: thread group and
/// parent), each process once (its parent chain, memoized), so a busy machine's many new
/// tasks cost one small read each.
pub struct Membership {
    framelab: u32,
    watched: Vec<u32>,
    tasks: HashMap<u32, bool>,
    processes: HashMap<u32, bool>,
    /// The run's tasks made while it went, by thread id: their names as the kernel gave
    /// them (a forked task has its maker's until it execs or renames itself).
    names: HashMap<u32, String>,
    /// Tasks that exited (process, thread), forgotten a drain later (`drained`): their
    /// last events may come after their exit record, and the maps hold only live tasks
    /// however many the machine makes over a long run.
    exited: Vec<(u32, u32)>,
    exited_before: Vec<(u32, u32)>,
}

impl Membership {
    pub fn new(framelab: u32, watched: Vec<u32>) -> Membership {
        Membership {
            framelab,
            watched,
            tasks: HashMap::new(),
            processes: HashMap::new(),
            names: HashMap::new(),
            exited: Vec::new(),
            exited_before: Vec::new(),
        }
    }

    /// Records whether `tid` belongs, without a look in /proc (for tests).
    pub fn set(&mut self, tid: u32, member: bool) {
        self.tasks.insert(tid, member);
    }

    pub fn contains(&mut self, tid: u32) -> bool {
        if tid == 0 {
            return false;
        }
        if let Some(&known) = self.tasks.get(&tid) {
            return known;
        }
        let member = match status_numbers(tid) {
            Some((tgid, ppid)) => self.process(tgid, Some(ppid), 0),
            None => false,
        };
        self.tasks.insert(tid, member);
        member
    }

    /// Whether process `pid` (a sample's thread group) belongs to the run.
    pub fn contains_process(&mut self, pid: u32) -> bool {
        self.process(pid, None, 0)
    }

    /// What the kernel said of a task: made (a process belongs when the one that forked
    /// it does, a thread when its process does; what was known of its id before is
    /// another task's, the id freed and taken again) or named.
    pub fn learn(&mut self, record: &TaskRecord) {
        match record {
            TaskRecord::Fork(fork) => self.forked(fork),
            TaskRecord::Comm { tid, name, .. } => {
                if self.tasks.get(tid) == Some(&true) {
                    self.names.insert(*tid, name.clone());
                }
            }
            TaskRecord::Exit(task) => self.exited.push((task.pid, task.tid)),
        }
    }

    /// A drain's events are all taken: the tasks that exited before it are forgotten (a
    /// fork since then made their ids another task's, which is kept).
    pub fn drained(&mut self) {
        for (pid, tid) in std::mem::take(&mut self.exited_before) {
            self.tasks.remove(&tid);
            self.names.remove(&tid);
            if pid == tid {
                self.processes.remove(&pid);
            }
        }
        self.exited_before = std::mem::take(&mut self.exited);
    }

    fn forked(&mut self, fork: &Fork) {
        let member = if fork.pid == fork.ppid {
            self.process(fork.pid, None, 0)
        } else {
            let member = fork.ppid == self.framelab || self.process(fork.ppid, None, 0);
            if fork.pid != self.framelab {
                self.processes.insert(fork.pid, member);
            }
            member
        };
        self.tasks.insert(fork.tid, member);
        self.names.remove(&fork.tid);
        for exited in [&mut self.exited, &mut self.exited_before] {
            exited.retain(|&(_, tid)| tid != fork.tid);
        }
        if member {
            let maker =
                (self.names.get(&fork.ptid).cloned()).or_else(|| task_name(fork.ppid, fork.ptid));
            self.names.extend(maker.map(|name| (fork.tid, name)));
        }
    }

    /// The name of a task of the run made while it went, as the kernel last gave it.
    pub fn name(&self, tid: u32) -> Option<&str> {
        self.names.get(&tid).map(String::as_str)
    }

    /// A process below framelab (not framelab itself) or a watched one, or below one.
    fn process(&mut self, pid: u32, parent: Option<u32>, depth: u32) -> bool {
        if pid == self.framelab || pid <= 1 {
            return false;
        }
        if let Some(&known) = self.processes.get(&pid) {
            return known;
        }
        let member = self.watched.contains(&pid)
            || match parent.or_else(|| status_numbers(pid).map(|(_, ppid)| ppid)) {
                Some(p) if p == self.framelab => true,
                Some(p) if depth < 64 => self.process(p, None, depth + 1),
                _ => false,
            };
        self.processes.insert(pid, member);
        member
    }
}

/// A live task's name, from `/proc/PID/task/TID/comm`.
fn task_name(pid: u32, tid: u32) -> Option<String> {
    let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    Some(name.trim_end().to_owned())
}

/// A task's thread group and its process's parent, from `/proc/TID/status`.
fn status_numbers(tid: u32) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let number = |key: &str| -> Option<u32> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().parse().ok()
    };
    Some((number("Tgid:")?, number("PPid:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids above the kernel's largest pid (2^22): /proc knows none of them.
    const FRAMELAB: u32 = 5_000_000;

    fn fork(pid: u32, ppid: u32, tid: u32, ptid: u32) -> TaskRecord {
        TaskRecord::Fork(Fork {
            pid,
            ppid,
            tid,
            ptid,
            time: 0,
        })
    }

    fn comm(tid: u32, name: &str) -> TaskRecord {
        TaskRecord::Comm {
            pid: tid,
            tid,
            name: name.into(),
            time: 0,
        }
    }

    #[test]
    fn tasks_gone_from_proc_belong_by_who_forked_them() {
        let mut run = Membership::new(FRAMELAB, vec![5_000_100]);
        run.learn(&fork(5_000_001, FRAMELAB, 5_000_001, FRAMELAB));
        run.learn(&fork(5_000_002, 5_000_001, 5_000_002, 5_000_001));
        run.learn(&fork(5_000_002, 5_000_002, 5_000_003, 5_000_002));
        run.learn(&fork(5_000_010, 5_000_100, 5_000_010, 5_000_100));
        run.learn(&fork(5_000_020, 5_000_099, 5_000_020, 5_000_099));
        run.learn(&fork(FRAMELAB, FRAMELAB, 5_000_030, FRAMELAB));
        for member in [5_000_001, 5_000_002, 5_000_010] {
            assert!(run.contains_process(member), "{member}");
        }
        assert!(run.contains(5_000_003), "a thread of a process of the run");
        assert!(
            !run.contains_process(5_000_020),
            "made by a process not of the run"
        );
        assert!(!run.contains(5_000_030), "framelab's own thread");
        assert!(!run.contains_process(FRAMELAB));
    }

    #[test]
    fn an_id_taken_again_belongs_as_its_new_task_does() {
        let mut run = Membership::new(FRAMELAB, Vec::new());
        run.learn(&fork(5_000_001, FRAMELAB, 5_000_001, FRAMELAB));
        assert!(run.contains_process(5_000_001));
        run.learn(&fork(5_000_001, 5_000_099, 5_000_001, 5_000_099));
        assert!(!run.contains_process(5_000_001));
        assert!(!run.contains(5_000_001));
    }

    /// An exited task is known through the drain after its exit record (its last events
    /// may follow the record), then forgotten: the maps hold live tasks only.
    #[test]
    fn exited_tasks_are_forgotten_a_drain_later() {
        let mut run = Membership::new(FRAMELAB, Vec::new());
        run.learn(&fork(5_000_001, FRAMELAB, 5_000_001, FRAMELAB));
        run.learn(&comm(5_000_001, "prog"));
        let exit = |pid, tid| {
            TaskRecord::Exit(Fork {
                pid,
                ppid: FRAMELAB,
                tid,
                ptid: 0,
                time: 0,
            })
        };
        run.learn(&exit(5_000_001, 5_000_001));
        run.drained();
        assert!(run.contains_process(5_000_001));
        assert_eq!(run.name(5_000_001), Some("prog"));
        run.drained();
        assert_eq!(run.name(5_000_001), None);
        assert!(run.tasks.is_empty() && run.names.is_empty());
        assert!(!run.processes.contains_key(&5_000_001));
        // An id exited and taken again before the forgetting: the new task stays.
        run.learn(&fork(5_000_002, FRAMELAB, 5_000_002, FRAMELAB));
        run.learn(&exit(5_000_002, 5_000_002));
        run.learn(&fork(5_000_002, FRAMELAB, 5_000_002, FRAMELAB));
        run.drained();
        run.drained();
        assert!(run.contains(5_000_002));
    }

    /// A forked task is named as its maker until it execs or renames itself; only the
    /// run's tasks are named.
    #[test]
    fn the_runs_tasks_are_named_as_the_kernel_names_them() {
        let mut run = Membership::new(FRAMELAB, Vec::new());
        run.learn(&fork(5_000_001, FRAMELAB, 5_000_001, FRAMELAB));
        run.learn(&comm(5_000_001, "sh"));
        run.learn(&fork(5_000_002, 5_000_001, 5_000_002, 5_000_001));
        assert_eq!(run.name(5_000_002), Some("sh"));
        run.learn(&comm(5_000_002, "encoder"));
        run.learn(&fork(5_000_002, 5_000_002, 5_000_003, 5_000_002));
        assert_eq!(run.name(5_000_002), Some("encoder"));
        assert_eq!(run.name(5_000_003), Some("encoder"));
        run.learn(&fork(5_000_020, 5_000_099, 5_000_020, 5_000_099));
        run.learn(&comm(5_000_020, "other"));
        assert_eq!(run.name(5_000_020), None);
        // Its id taken again by a task of another process: the old name goes.
        run.learn(&fork(5_000_003, 5_000_099, 5_000_003, 5_000_099));
        assert_eq!(run.name(5_000_003), None);
    }
}
