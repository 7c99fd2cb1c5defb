//! Decoding the ring buffer's records (the layouts of `perf_event_open(2)`), for the
//! sample type `perf::SAMPLE_TYPE` (plus the user registers and stack with DWARF).

use crate::perf_event::bindings as b;
use crate::perf_event::cursor::{self, Cursor};

/// One record, as far as profiling needs it.
#[derive(Debug, PartialEq)]
pub enum Record {
    Sample(Sample),
    /// An executable mapping appeared in process `pid`.
    Mmap {
        pid: u32,
        time: u64,
        start: u64,
        len: u64,
        pgoff: u64,
        path: String,
        build_id: Vec<u8>,
    },
    /// `pid` ran exec: its old mappings are gone.
    Exec {
        pid: u32,
        time: u64,
    },
    /// Process `pid` was forked from `ppid` (threads are not processes: not reported).
    Fork {
        pid: u32,
        ppid: u32,
        time: u64,
    },
    /// Samples the kernel could not write (the ring was full).
    Lost {
        count: u64,
    },
    /// The kernel lowered the rate: too much time went into sampling.
    Throttle,
}

#[derive(Debug, PartialEq, Default)]
pub struct Sample {
    pub time: u64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    pub ip: u64,
    /// With the kernel's context markers (`PERF_CONTEXT_KERNEL`, `PERF_CONTEXT_USER`).
    pub callchain: Vec<u64>,
    /// The user registers asked for (DWARF), in the kernel's order.
    pub regs: Vec<u64>,
    /// The copy of the user stack (DWARF), cut to what was really copied.
    pub stack: Vec<u8>,
}

/// Decodes one record (header included); `None` for kinds profiling does not use.
pub fn decode(bytes: &[u8], sample_type: u64, regs_count: usize) -> Option<Record> {
    let (kind, misc) = cursor::header(bytes)?;
    let mut c = Cursor::after_header(bytes);
    match kind {
        b::PERF_RECORD_SAMPLE => Some(Record::Sample(sample(&mut c, sample_type, regs_count))),
        b::PERF_RECORD_MMAP2 => {
            let pid = c.u32();
            let _tid = c.u32();
            let (start, len, pgoff) = (c.u64(), c.u64(), c.u64());
            let build_id = if misc & b::PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
                let size = (c.take(1).first().copied().unwrap_or(0) as usize).min(20);
                c.take(3);
                c.take(20)[..size].to_vec()
            } else {
                c.take(24);
                Vec::new()
            };
            let _prot = c.u32();
            let _flags = c.u32();
            let rest = &bytes[c.at.min(bytes.len())..];
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let path = String::from_utf8_lossy(&rest[..end]).into_owned();
            Some(Record::Mmap {
                pid,
                time: c.trailer_time(sample_type),
                start,
                len,
                pgoff,
                path,
                build_id,
            })
        }
        b::PERF_RECORD_COMM if misc & b::PERF_RECORD_MISC_COMM_EXEC != 0 => {
            let pid = c.u32();
            Some(Record::Exec {
                pid,
                time: c.trailer_time(sample_type),
            })
        }
        b::PERF_RECORD_FORK => {
            let (pid, ppid, tid, _ptid) = (c.u32(), c.u32(), c.u32(), c.u32());
            let time = c.u64();
            // A new thread has tid != pid; a new process is its own first thread.
            (tid == pid && pid != ppid).then_some(Record::Fork { pid, ppid, time })
        }
        b::PERF_RECORD_LOST => {
            let _id = c.u64();
            Some(Record::Lost { count: c.u64() })
        }
        b::PERF_RECORD_LOST_SAMPLES => Some(Record::Lost { count: c.u64() }),
        b::PERF_RECORD_THROTTLE => Some(Record::Throttle),
        _ => None,
    }
}

fn sample(c: &mut Cursor, sample_type: u64, regs_count: usize) -> Sample {
    let has = |bit: u32| sample_type & bit as u64 != 0;
    let mut s = Sample::default();
    if has(b::PERF_SAMPLE_IP) {
        s.ip = c.u64();
    }
    if has(b::PERF_SAMPLE_TID) {
        s.pid = c.u32();
        s.tid = c.u32();
    }
    if has(b::PERF_SAMPLE_TIME) {
        s.time = c.u64();
    }
    if has(b::PERF_SAMPLE_CPU) {
        s.cpu = c.u32();
        c.u32();
    }
    if has(b::PERF_SAMPLE_CALLCHAIN) {
        // Bounded by the record's size, whatever nr says.
        let nr = (c.u64() as usize).min(c.bytes.len() / 8);
        s.callchain = (0..nr).map(|_| c.u64()).collect();
    }
    if has(b::PERF_SAMPLE_REGS_USER) {
        let abi = c.u64();
        if abi != 0 {
            s.regs = (0..regs_count).map(|_| c.u64()).collect();
        }
    }
    if has(b::PERF_SAMPLE_STACK_USER) {
        let size = c.u64() as usize;
        if size > 0 {
            let data = c.take(size).to_vec();
            let dyn_size = (c.u64() as usize).min(data.len());
            s.stack = data[..dyn_size].to_vec();
        }
    }
    s
}

/// Call chain entries at or above this are context markers, not addresses.
pub const CONTEXT_MAX: u64 = b::PERF_CONTEXT_MAX;
pub const CONTEXT_KERNEL: u64 = b::PERF_CONTEXT_KERNEL;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::perf::SAMPLE_TYPE;
    const CONTEXT_USER: u64 = b::PERF_CONTEXT_USER;

    fn header(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend(kind.to_ne_bytes());
        r.extend(misc.to_ne_bytes());
        r.extend(((8 + body.len()) as u16).to_ne_bytes());
        r.extend(body);
        r
    }

    #[test]
    fn a_sample_with_a_call_chain_decodes() {
        let mut body = Vec::new();
        body.extend(0x1000u64.to_ne_bytes()); // ip
        body.extend(7u32.to_ne_bytes()); // pid
        body.extend(8u32.to_ne_bytes()); // tid
        body.extend(123u64.to_ne_bytes()); // time
        body.extend(1u32.to_ne_bytes()); // cpu
        body.extend(0u32.to_ne_bytes());
        body.extend(3u64.to_ne_bytes()); // nr
        for v in [CONTEXT_USER, 0x1000, 0x2000] {
            body.extend(v.to_ne_bytes());
        }
        let r = decode(&header(b::PERF_RECORD_SAMPLE, 0, &body), SAMPLE_TYPE, 0).unwrap();
        let Record::Sample(s) = r else { panic!() };
        assert_eq!((s.pid, s.tid, s.time, s.cpu), (7, 8, 123, 1));
        assert_eq!(s.callchain, vec![CONTEXT_USER, 0x1000, 0x2000]);
    }

    #[test]
    fn a_lying_chain_length_is_bounded_by_the_record() {
        let mut body = vec![0u8; 32];
        body.extend(u64::MAX.to_ne_bytes());
        let r = decode(&header(b::PERF_RECORD_SAMPLE, 0, &body), SAMPLE_TYPE, 0).unwrap();
        let Record::Sample(s) = r else { panic!() };
        assert!(s.callchain.len() <= 6);
    }
}
