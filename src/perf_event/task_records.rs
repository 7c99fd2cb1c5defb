//! What the kernel says of tasks as it makes, renames and ends them, in the rings of the
//! events opened on every task of a CPU: `PERF_RECORD_FORK`, `PERF_RECORD_COMM` and
//! `PERF_RECORD_EXIT`, from a software event that never counts, opened only for them
//! (`open`). A process that lived
//! between two drains and is gone from /proc is then still known: who made it, its name.

use std::io;
use std::os::fd::OwnedFd;

use super::bindings as b;
use super::cursor::{self, Cursor};

/// Task `tid` of process `pid` was made by thread `ptid` of process `ppid` (`pid == ppid`:
/// a new thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fork {
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub ptid: u32,
    /// CLOCK_MONOTONIC, as the events in the ring are timed.
    pub time: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskRecord {
    Fork(Fork),
    /// Task `tid` of process `pid` exited (the fields as a fork's: `ppid` its parent).
    Exit(Fork),
    /// Task `tid` took `name` (at an exec, or renaming itself).
    Comm {
        pid: u32,
        tid: u32,
        name: String,
        time: u64,
    },
}

/// The sample type of `open`'s event: each record ends with its time.
const SAMPLE_TYPE: u64 = b::PERF_SAMPLE_TIME as u64;

impl TaskRecord {
    /// The fork or name a record tells of; `None` for any other record.
    pub fn read(record: &[u8]) -> Option<TaskRecord> {
        let (kind, _) = cursor::header(record)?;
        let mut c = Cursor::after_header(record);
        match kind {
            b::PERF_RECORD_FORK | b::PERF_RECORD_EXIT => {
                let (pid, ppid, tid, ptid) = (c.u32(), c.u32(), c.u32(), c.u32());
                let task = Fork {
                    pid,
                    ppid,
                    tid,
                    ptid,
                    time: c.u64(),
                };
                Some(match kind {
                    b::PERF_RECORD_FORK => TaskRecord::Fork(task),
                    _ => TaskRecord::Exit(task),
                })
            }
            b::PERF_RECORD_COMM => {
                let (pid, tid) = (c.u32(), c.u32());
                // NUL-terminated, padded to 8 bytes, then the time (`SAMPLE_TYPE`).
                let rest = record.get(c.at..record.len().saturating_sub(8))?;
                let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                Some(TaskRecord::Comm {
                    pid,
                    tid,
                    name: String::from_utf8_lossy(&rest[..len]).into_owned(),
                    time: c.trailer_time(SAMPLE_TYPE),
                })
            }
            _ => None,
        }
    }

    pub fn time(&self) -> u64 {
        match self {
            TaskRecord::Fork(task) | TaskRecord::Exit(task) => task.time,
            TaskRecord::Comm { time, .. } => *time,
        }
    }
}

/// The fork and name records of every task on `cpu`, written into `ring`'s buffer, timed
/// on CLOCK_MONOTONIC like the events there. Needs what opening events on every task
/// needs.
pub fn open(cpu: i32, ring: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.type_ = b::PERF_TYPE_SOFTWARE;
    attr.config = b::PERF_COUNT_SW_DUMMY as u64;
    attr.set_task(1);
    attr.set_comm(1);
    attr.sample_type = SAMPLE_TYPE;
    attr.set_sample_id_all(1);
    attr.set_disabled(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    let fd = super::open(&mut attr, -1, cpu)?;
    super::redirect(&fd, ring)?;
    Ok(fd)
}

/// [`open`], or `None` where the kernel refuses it (said at debug level): the run's tasks
/// are then looked up in /proc alone.
pub fn open_or_none(cpu: i32, ring: &OwnedFd) -> Option<OwnedFd> {
    open(cpu, ring)
        .inspect_err(|e| log::debug!("no fork records on CPU {cpu}: {e}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u32, body: &[u8]) -> Vec<u8> {
        let mut r = vec![0u8; 8];
        r[..4].copy_from_slice(&kind.to_ne_bytes());
        r.extend(body);
        let size = r.len() as u16;
        r[6..8].copy_from_slice(&size.to_ne_bytes());
        r
    }

    #[test]
    fn fork_and_name_records_read_back() {
        let mut body = Vec::new();
        for field in [7u32, 3, 8, 4] {
            body.extend(field.to_ne_bytes());
        }
        body.extend(123_456u64.to_ne_bytes());
        body.extend(123_456u64.to_ne_bytes()); // the trailer's time
        let fork = TaskRecord::read(&record(b::PERF_RECORD_FORK, &body)).unwrap();
        let expected = Fork {
            pid: 7,
            ppid: 3,
            tid: 8,
            ptid: 4,
            time: 123_456,
        };
        assert_eq!(fork, TaskRecord::Fork(expected));
        let exit = TaskRecord::read(&record(b::PERF_RECORD_EXIT, &body)).unwrap();
        assert_eq!(exit, TaskRecord::Exit(expected));

        let mut body = Vec::new();
        for field in [7u32, 8] {
            body.extend(field.to_ne_bytes());
        }
        body.extend(b"encoder\0"); // 8 bytes: padded to 8 already
        body.extend(999u64.to_ne_bytes());
        let comm = TaskRecord::read(&record(b::PERF_RECORD_COMM, &body)).unwrap();
        assert_eq!(
            comm,
            TaskRecord::Comm {
                pid: 7,
                tid: 8,
                name: "encoder".into(),
                time: 999
            }
        );
        assert_eq!(TaskRecord::read(&record(b::PERF_RECORD_MMAP, &body)), None);
    }
}
