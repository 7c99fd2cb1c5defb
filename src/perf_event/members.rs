//! Which tasks belong to a run, for events opened on every task of a CPU (scheduler
//! switches, uprobes): the descendants of framelab (not framelab itself) and the watched
//! processes, each looked up once in /proc.

use std::collections::HashMap;

/// Which tasks belong to the run: each task looked up once (its `status`: thread group and
/// parent), each process once (its parent chain, memoized), so a busy machine's many new
/// tasks cost one small read each.
pub struct Membership {
    framelab: u32,
    watched: Vec<u32>,
    tasks: HashMap<u32, bool>,
    processes: HashMap<u32, bool>,
}

impl Membership {
    pub fn new(framelab: u32, watched: Vec<u32>) -> Membership {
        Membership {
            framelab,
            watched,
            tasks: HashMap::new(),
            processes: HashMap::new(),
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

/// A task's thread group and its process's parent, from `/proc/TID/status`.
fn status_numbers(tid: u32) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let number = |key: &str| -> Option<u32> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().parse().ok()
    };
    Some((number("Tgid:")?, number("PPid:")?))
}
