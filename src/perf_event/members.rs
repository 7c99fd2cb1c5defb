//! Which tasks belong to a run, for events opened on every task of a CPU (scheduler
//! switches, uprobes): the descendants of framelab (not framelab itself) and the watched
//! processes. The kernel says who made each task as it makes it (`Forks`, in the same
//! rings as the events), so a process that lived between two drains and is gone from /proc
//! is still known; tasks older than the run are looked up once in /proc.

use std::collections::HashMap;
use std::io;
use std::os::fd::OwnedFd;

use super::bindings as b;
use super::cursor::{self, Cursor};

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

    /// A task the kernel made: a process belongs when the one that forked it does, a
    /// thread when its process does. What was known of its id before is another task's
    /// (the id was freed and taken again).
    pub fn forked(&mut self, fork: Fork) {
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

/// A `PERF_RECORD_FORK`: task `tid` of process `pid` was made by a thread of process `ppid`
/// (`pid == ppid`: a new thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fork {
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC, as the events of `Forks::open` are timed.
    pub time: u64,
}

impl Fork {
    /// The fork a record tells of; `None` for any other record.
    pub fn read(record: &[u8]) -> Option<Fork> {
        let (kind, _) = cursor::header(record)?;
        if kind != b::PERF_RECORD_FORK {
            return None;
        }
        let mut c = Cursor::after_header(record);
        let (pid, ppid, tid, _ptid) = (c.u32(), c.u32(), c.u32(), c.u32());
        Some(Fork {
            pid,
            ppid,
            tid,
            time: c.u64(),
        })
    }
}

/// The kernel's fork records of every task made on one CPU, written into `ring`'s buffer
/// (timed on CLOCK_MONOTONIC like the events there): a software event that never counts,
/// opened only for its `task` records. Needs what opening events on every task needs.
pub fn open_forks(cpu: i32, ring: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.type_ = b::PERF_TYPE_SOFTWARE;
    attr.config = b::PERF_COUNT_SW_DUMMY as u64;
    attr.set_task(1);
    attr.set_disabled(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    let fd = super::open(&mut attr, -1, cpu)?;
    super::redirect(&fd, ring)?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids above the kernel's largest pid (2^22): /proc knows none of them.
    const FRAMELAB: u32 = 5_000_000;

    fn fork(pid: u32, ppid: u32, tid: u32) -> Fork {
        Fork {
            pid,
            ppid,
            tid,
            time: 0,
        }
    }

    #[test]
    fn tasks_gone_from_proc_belong_by_who_forked_them() {
        let mut run = Membership::new(FRAMELAB, vec![5_000_100]);
        run.forked(fork(5_000_001, FRAMELAB, 5_000_001));
        run.forked(fork(5_000_002, 5_000_001, 5_000_002));
        run.forked(fork(5_000_002, 5_000_002, 5_000_003));
        run.forked(fork(5_000_010, 5_000_100, 5_000_010));
        run.forked(fork(5_000_020, 5_000_099, 5_000_020));
        run.forked(fork(FRAMELAB, FRAMELAB, 5_000_030));
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
        run.forked(fork(5_000_001, FRAMELAB, 5_000_001));
        assert!(run.contains_process(5_000_001));
        run.forked(fork(5_000_001, 5_000_099, 5_000_001));
        assert!(!run.contains_process(5_000_001));
        assert!(!run.contains(5_000_001));
    }

    #[test]
    fn a_fork_record_reads_back() {
        let mut record = vec![0u8; 8];
        record[..4].copy_from_slice(&b::PERF_RECORD_FORK.to_ne_bytes());
        for field in [7u32, 3, 8, 4] {
            record.extend(field.to_ne_bytes());
        }
        record.extend(123_456u64.to_ne_bytes());
        let size = record.len() as u16;
        record[6..8].copy_from_slice(&size.to_ne_bytes());
        let read = Fork::read(&record).unwrap();
        assert_eq!(
            (read.pid, read.ppid, read.tid, read.time),
            (7, 3, 8, 123_456)
        );
        record[..4].copy_from_slice(&b::PERF_RECORD_EXIT.to_ne_bytes());
        assert_eq!(Fork::read(&record), None);
    }
}
