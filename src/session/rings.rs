//! Finding, validating and draining the per-thread rings of a session directory.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::{Acquire, Release};

use framelab_probe::wire::{self, Record, RingHeader};

/// One thread's ring, mapped read-write (the collector owns `tail`).
pub struct Ring {
    pub path: PathBuf,
    pub pid: u32,
    pub tid: u32,
    pub thread_name: String,
    pub clock: u32,
    map: *mut u8,
    bytes: usize,
    capacity: u64,
    /// Index into the run's thread table, once registered.
    pub thread_index: Option<u32>,
}

impl Ring {
    /// Maps `path` if it is a complete, valid ring; `Ok(None)` if it is still being created.
    pub fn open(path: &Path) -> Result<Option<Ring>, String> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(_) => return Ok(None),
        };
        let len = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
        if len < wire::HEADER_BYTES {
            return Ok(None);
        }
        // SAFETY: mapping a file of `len` bytes; checked for failure.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(format!("cannot map ring {}", path.display()));
        }
        let map = map.cast::<u8>();
        let unmap = || unsafe { libc::munmap(map.cast(), len) };
        // SAFETY: at least HEADER_BYTES are mapped.
        let header = unsafe { &*map.cast::<RingHeader>() };
        if header.magic.load(Acquire) != wire::RING_MAGIC {
            unmap();
            return Ok(None);
        }
        let capacity = header.capacity;
        if header.version != wire::WIRE_VERSION
            || !capacity.is_power_of_two()
            || capacity > wire::MAX_RING_RECORDS
            || wire::ring_file_bytes(capacity) != len
        {
            unmap();
            return Err(format!(
                "ring {} is not one this framelab understands (version {}, capacity {capacity}); is the program built with another framelab-probe?",
                path.display(),
                header.version
            ));
        }
        let name_len = header
            .thread_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(header.thread_name.len());
        Ok(Some(Ring {
            path: path.to_owned(),
            pid: header.pid,
            tid: header.tid,
            thread_name: String::from_utf8_lossy(&header.thread_name[..name_len]).into_owned(),
            clock: header.clock,
            map,
            bytes: len,
            capacity,
            thread_index: None,
        }))
    }

    fn header(&self) -> &RingHeader {
        // SAFETY: mapped for the lifetime of self.
        unsafe { &*self.map.cast::<RingHeader>() }
    }

    /// Copies every published record into `out`. Returns how many records were skipped because
    /// the header was inconsistent (a program scribbling over its own ring).
    pub fn drain(&mut self, out: &mut Vec<Record>) -> u64 {
        let header = self.header();
        let head = header.head.load(Acquire);
        let tail = header.tail.load(Acquire);
        let available = head.wrapping_sub(tail);
        let (start, skipped) = if available > self.capacity {
            (head.wrapping_sub(self.capacity), available - self.capacity)
        } else {
            (tail, 0)
        };
        let slots = unsafe { self.map.add(wire::HEADER_BYTES).cast::<Record>() };
        let mut index = start;
        while index != head {
            // SAFETY: the slot index is masked into the mapped array.
            out.push(unsafe {
                std::ptr::read_volatile(slots.add((index & (self.capacity - 1)) as usize))
            });
            index = index.wrapping_add(1);
        }
        header.tail.store(head, Release);
        skipped
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    pub fn dropped(&self) -> u64 {
        self.header().dropped.load(Acquire)
    }

    pub fn closed(&self) -> bool {
        self.header().closed.load(Acquire) != 0
    }

    pub fn is_empty(&self) -> bool {
        let header = self.header();
        header.head.load(Acquire) == header.tail.load(Acquire)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.map.cast(), self.bytes) };
    }
}

/// The names a process interned, read incrementally from its names file.
#[derive(Default)]
pub struct ProcessNames {
    offset: u64,
    pending: String,
    /// local id → (kind, name)
    pub names: HashMap<u16, (char, String)>,
    pub refused: u64,
}

impl ProcessNames {
    /// Reads lines appended since the last call.
    pub fn refresh(&mut self, dir: &Path, pid: u32) {
        let Ok(mut file) = std::fs::File::open(dir.join(format!("n-{pid}"))) else {
            return;
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut text = String::new();
        let Ok(read) = file.read_to_string(&mut text) else {
            return;
        };
        self.offset += read as u64;
        self.pending.push_str(&text);
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            match wire::parse_name_line(line.trim_end_matches('\n')) {
                Some((0, _, _)) => self.refused += 1,
                Some((id, kind, name)) => {
                    self.names.insert(id, (kind, name.to_owned()));
                }
                None => {}
            }
        }
    }
}
