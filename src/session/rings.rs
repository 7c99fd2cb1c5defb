//! Finding, validating and draining the per-thread rings of a session directory.
//!
//! A ring is the measured program's memory, so it is untrusted input: the program may
//! truncate the file (a mapping of it would then fault, and SIGBUS would kill framelab) or
//! write anything over its header. The collector therefore never maps a ring: it reads the
//! header and the records with `pread` (a short read, never a signal) and writes only its
//! own `tail` back with `pwrite`. Every header it reads is checked against what it read
//! before; a ring that fails is set aside as corrupt, with what was read up to then kept.
//! Reading this way costs about the same as reading a mapping (BENCHMARKS.md).

use std::cell::OnceCell;
use std::fs::{File, OpenOptions};
use std::mem::offset_of;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering::Acquire};
use std::sync::Arc;

use framelab_probe::wire::{self, Record, RingHeader};

use crate::spill::direct::RingPages;

/// Records read and handed over at a time: 32 KiB, within the first-level cache while they
/// are converted.
pub const CHUNK_RECORDS: u64 = 1024;

/// The records from `index` up to `head` that lie together in the array from `index` on,
/// at most `most`: (slot, count); `None` at `head`.
fn piece(index: u64, head: u64, capacity: u64, most: u64) -> Option<(u64, u64)> {
    let slot = index & (capacity - 1);
    let count = head.wrapping_sub(index).min(capacity - slot).min(most);
    (count > 0).then_some((slot, count))
}

/// One thread's ring, read through its file descriptor.
pub struct Ring {
    pub path: PathBuf,
    pub pid: u32,
    pub tid: u32,
    pub thread_name: String,
    pub clock: u32,
    file: File,
    capacity: u64,
    /// Where the collector has read up to: its own count, never taken back from the file.
    tail: u64,
    /// The drop count of the last header that passed the checks.
    dropped: u64,
    /// The last header said the thread exited.
    closed: bool,
    /// Its producer wakes a sleeping collector when the ring passes a quarter full
    /// (`wire::FEATURE_WAKES`); rings of older SDKs must be drained on a tick.
    pub wakes: bool,
    /// Index into the run's thread table, once registered.
    pub thread_index: Option<u32>,
    /// Found ending (closed, or its process gone) at an earlier drain: retired once a drain
    /// started after that finds nothing new.
    pub ending: bool,
    /// The file mapped for direct writes from its pages, once asked (`None`: it cannot be).
    pages: OnceCell<Option<Arc<RingPages>>>,
}

/// The header fields the collector reads, from one `pread` of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    magic: u64,
    version: u32,
    clock: u32,
    pid: u32,
    tid: u32,
    capacity: u64,
    head: u64,
    dropped: u64,
    closed: u32,
    features: u32,
    tail: u64,
}

impl Header {
    fn parse(bytes: &[u8; wire::HEADER_BYTES]) -> Header {
        let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
        Header {
            magic: u64_at(offset_of!(RingHeader, magic)),
            version: u32_at(offset_of!(RingHeader, version)),
            clock: u32_at(offset_of!(RingHeader, clock)),
            pid: u32_at(offset_of!(RingHeader, pid)),
            tid: u32_at(offset_of!(RingHeader, tid)),
            capacity: u64_at(offset_of!(RingHeader, capacity)),
            head: u64_at(offset_of!(RingHeader, head)),
            dropped: u64_at(offset_of!(RingHeader, dropped)),
            closed: u32_at(offset_of!(RingHeader, closed)),
            features: u32_at(offset_of!(RingHeader, features)),
            tail: u64_at(offset_of!(RingHeader, tail)),
        }
    }
}

/// Reads the header; `None` when the file holds less than a header.
fn read_header(file: &File) -> Option<([u8; wire::HEADER_BYTES], Header)> {
    let mut bytes = [0u8; wire::HEADER_BYTES];
    file.read_exact_at(&mut bytes, 0).ok()?;
    // What the producer wrote before publishing `head` is read after it.
    fence(Acquire);
    let header = Header::parse(&bytes);
    Some((bytes, header))
}

/// What one drain takes from a ring: its records `[tail, head)`, and the header's drop
/// count and closed flag, taken only once those records are the collector's.
#[derive(Clone, Copy, Debug)]
pub struct Planned {
    head: u64,
    dropped: u64,
    closed: bool,
}

/// Why a ring file cannot be read at all.
#[derive(Debug)]
pub enum OpenError {
    /// Made by a framelab-probe of another wire version.
    Foreign(String),
    /// Its header is impossible: the program wrote over it.
    Corrupt(String),
}

impl Ring {
    /// Opens `path` if it is a complete, valid ring; `Ok(None)` if it is still being created.
    pub fn open(path: &Path) -> Result<Option<Ring>, OpenError> {
        Ring::open_with(path, || {})
    }

    /// `open`, with `meanwhile` run between its reads of the file (a test's maker at work).
    fn open_with(path: &Path, meanwhile: impl FnOnce()) -> Result<Option<Ring>, OpenError> {
        let file = match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(_) => return Ok(None),
        };
        // The header before the length: the SDK sizes the file before it publishes `magic`,
        // so the length read after the magic was seen is final. The other way round, a ring
        // seen empty and then published was refused as foreign, and its records never read.
        let Some((bytes, header)) = read_header(&file) else {
            return Ok(None);
        };
        meanwhile();
        if header.magic != wire::RING_MAGIC {
            return Ok(None);
        }
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let capacity = header.capacity;
        if header.version != wire::WIRE_VERSION
            || !capacity.is_power_of_two()
            || capacity > wire::MAX_RING_RECORDS
            || wire::ring_file_bytes(capacity) as u64 != len
        {
            return Err(OpenError::Foreign(format!(
                "ring {} is not one this framelab understands (version {}, capacity {capacity}, {len} bytes); is the program built with another framelab-probe?",
                path.display(),
                header.version
            )));
        }
        if header.head.wrapping_sub(header.tail) > capacity {
            return Err(OpenError::Corrupt(format!(
                "ring {} is corrupt: head {} and tail {} are more than its {capacity} records apart",
                path.display(),
                header.head,
                header.tail
            )));
        }
        let name_at = offset_of!(RingHeader, thread_name);
        let name = &bytes[name_at..name_at + 32];
        let name_len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        Ok(Some(Ring {
            path: path.to_owned(),
            pid: header.pid,
            tid: header.tid,
            thread_name: String::from_utf8_lossy(&name[..name_len]).into_owned(),
            clock: header.clock,
            file,
            capacity,
            tail: header.tail,
            dropped: header.dropped,
            closed: header.closed != 0,
            wakes: header.features & wire::FEATURE_WAKES != 0,
            thread_index: None,
            ending: false,
            pages: OnceCell::new(),
        }))
    }

    /// A header that is not what the producer could have written after the last one read.
    /// `max_dropped` bounds the drop count: no thread drops more than one record per ns.
    fn check(&self, h: &Header, max_dropped: u64) -> Result<(), String> {
        if h.magic != wire::RING_MAGIC
            || h.version != wire::WIRE_VERSION
            || h.capacity != self.capacity
            || h.pid != self.pid
            || h.tid != self.tid
        {
            return Err(
                "its header's identity (magic, version, capacity, pid or tid) was overwritten"
                    .into(),
            );
        }
        let ahead = h.head.wrapping_sub(self.tail);
        if ahead > self.capacity {
            return Err(if h.head < self.tail {
                format!("its head went back from {} to {}", self.tail, h.head)
            } else {
                format!(
                    "its head jumped to {}, more than its {} records past what was read ({})",
                    h.head, self.capacity, self.tail
                )
            });
        }
        if h.dropped < self.dropped || h.dropped > max_dropped {
            return Err(format!(
                "its drop count went from {} to {}",
                self.dropped, h.dropped
            ));
        }
        if h.closed > 1 {
            return Err(format!("its closed flag reads {}", h.closed));
        }
        Ok(())
    }

    /// Hands every record published since the last drain to `each`, up to
    /// `CHUNK_RECORDS` at a time read into `buffer`, and returns how many it handed. A
    /// chunk is converted while the copy out of the ring is still in the cache (one large
    /// read left the records of a drain for the conversion to fetch from memory again).
    /// `each` returning false stops the drain where it is (the tail stays: the caller is
    /// giving up on the run). On a ring the program damaged (truncated, header
    /// overwritten), says what is wrong once what was read before the damage showed was
    /// handed over; the ring must not be read again.
    pub fn drain(
        &mut self,
        buffer: &mut Vec<Record>,
        max_dropped: u64,
        each: impl FnMut(&[Record]) -> bool,
    ) -> Result<u64, String> {
        let plan = self.plan(max_dropped)?;
        let handed = self.read_planned(&plan, CHUNK_RECORDS, buffer, each)?;
        if handed < self.planned(&plan) {
            return Ok(handed);
        }
        self.take(&plan)
    }

    /// What a drain takes now: the header read (again once it says closed: that head is
    /// its last) and checked against the last one. Nothing changes until `take`.
    ///
    /// A truncated file shows as a read that ends early (no size check first: one system
    /// call per idle ring and tick is the whole cost of an idle ring).
    pub fn plan(&self, max_dropped: u64) -> Result<Planned, String> {
        let Some((_, mut header)) = read_header(&self.file) else {
            return Err(self.cut());
        };
        if header.closed == 1 {
            match read_header(&self.file) {
                Some((_, again)) => header = again,
                None => return Err(self.cut()),
            }
        }
        self.check(&header, max_dropped)?;
        Ok(Planned {
            head: header.head,
            dropped: header.dropped,
            closed: header.closed == 1,
        })
    }

    /// Records the plan takes.
    pub fn planned(&self, plan: &Planned) -> u64 {
        plan.head.wrapping_sub(self.tail)
    }

    /// Where the plan's records lie in the file, as (byte offset, bytes): each contiguous
    /// part (up to the end of the array, then from its start) cut into pieces of at most
    /// `most` records, the pieces `read_planned` hands over with the same `most`.
    pub fn parts(&self, plan: &Planned, most: u64) -> impl Iterator<Item = (u64, usize)> {
        let (capacity, head) = (self.capacity, plan.head);
        let size = std::mem::size_of::<Record>() as u64;
        let mut index = self.tail;
        std::iter::from_fn(move || {
            let (slot, count) = piece(index, head, capacity, most)?;
            index = index.wrapping_add(count);
            Some((
                wire::HEADER_BYTES as u64 + slot * size,
                (count * size) as usize,
            ))
        })
    }

    /// The plan's records handed to `each`, a piece of at most `most` at a time read into
    /// `buffer` (pieces as `parts` cuts them); how many were handed before `each` said
    /// stop. Read `CHUNK_RECORDS` at a time: on a file cut short, every record read up to
    /// the cut (whole reads) is handed over, whatever `most`, then the error.
    pub fn read_planned(
        &self,
        plan: &Planned,
        most: u64,
        buffer: &mut Vec<Record>,
        mut each: impl FnMut(&[Record]) -> bool,
    ) -> Result<u64, String> {
        let mut index = self.tail;
        while let Some((slot, count)) = piece(index, plan.head, self.capacity, most) {
            buffer.clear();
            let mut read = 0;
            while read < count {
                let n = (count - read).min(CHUNK_RECORDS);
                if !self.read_records(buffer, slot + read, n as usize) {
                    break;
                }
                read += n;
            }
            index = index.wrapping_add(read);
            let go_on = read == 0 || each(buffer);
            if read < count {
                return Err(self.cut());
            }
            if !go_on {
                break;
            }
        }
        Ok(index.wrapping_sub(self.tail))
    }

    /// The plan's records are the collector's now (handed over, or in the spill): the tail
    /// written back, the header's drop count and closed flag taken. How many it took.
    pub fn take(&mut self, plan: &Planned) -> Result<u64, String> {
        let got = self.planned(plan);
        if got > 0 {
            let tail_at = offset_of!(RingHeader, tail) as u64;
            if self
                .file
                .write_all_at(&plan.head.to_ne_bytes(), tail_at)
                .is_err()
            {
                return Err("its tail could not be written back".into());
            }
        }
        self.tail = plan.head;
        self.dropped = plan.dropped;
        self.closed = plan.closed;
        Ok(got)
    }

    /// The ring's file, for a copy of the plan's `parts` that passes no record through
    /// framelab (`sendfile`).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The ring's file mapped, for direct writes of the plan's `parts` from its pages;
    /// mapped at the first call.
    pub fn pages(&self) -> Option<&Arc<RingPages>> {
        let len = wire::ring_file_bytes(self.capacity);
        let pages = self
            .pages
            .get_or_init(|| match RingPages::map(&self.file, len) {
                Ok(pages) => Some(Arc::new(pages)),
                Err(e) => {
                    log::debug!(
                        "ring {} cannot be mapped ({e}): its records go by sendfile",
                        self.path.display()
                    );
                    None
                }
            });
        pages.as_ref()
    }

    /// What a read that ended early says: how far the file was cut.
    fn cut(&self) -> String {
        let expected = wire::ring_file_bytes(self.capacity);
        match self.file.metadata() {
            Ok(m) => format!("its file was cut to {} of {expected} bytes", m.len()),
            Err(_) => format!("its file was cut short of {expected} bytes"),
        }
    }

    /// `count` records from slot `slot`, read straight into `out`'s spare room; false when
    /// the file ended first.
    fn read_records(&self, out: &mut Vec<Record>, slot: u64, count: usize) -> bool {
        let size = std::mem::size_of::<Record>();
        out.reserve(count);
        let offset = wire::HEADER_BYTES as u64 + slot * size as u64;
        // SAFETY: `reserve` made room for `count` records past `len`; a Record is four
        // integers, valid for any bytes; `len` moves only over what was fully read.
        let spare = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr().add(out.len()).cast::<u8>(),
                count * size,
            )
        };
        if self.file.read_exact_at(spare, offset).is_err() {
            return false;
        }
        unsafe { out.set_len(out.len() + count) };
        true
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Records dropped because the ring was full, as of the last good header.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The thread exited, as of the last good header.
    pub fn closed(&self) -> bool {
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPACITY: u64 = 8;

    /// A ring file as the SDK makes it, with `head` records published.
    fn ring_file(dir: &Path, head: u64) -> PathBuf {
        ring_file_of(dir, CAPACITY, 0, head)
    }

    /// A ring of `capacity` records whose collector has read up to `tail`, with records
    /// `tail..head` published (record i of frame i, in slot i mod capacity).
    fn ring_file_of(dir: &Path, capacity: u64, tail: u64, head: u64) -> PathBuf {
        let mut ring = fixture::RingFile::create(dir, 1, 2, capacity);
        ring.set(offset_of!(RingHeader, tail), tail);
        ring.head = tail;
        let records: Vec<Record> = (tail..head)
            .map(|i| Record::new(1, 1, 0, i, 10, 20))
            .collect();
        ring.publish(&records);
        ring.path
    }

    /// Every record a drain hands over, its chunks joined.
    fn drain_all(ring: &mut Ring) -> Result<Vec<Record>, String> {
        let mut out = Vec::new();
        let got = ring.drain(&mut Vec::new(), 1000, |chunk| {
            out.extend_from_slice(chunk);
            true
        })?;
        assert_eq!(got, out.len() as u64);
        Ok(out)
    }

    fn set(path: &Path, at: usize, value: u64) {
        let file = OpenOptions::new().write(true).open(path).unwrap();
        file.write_all_at(&value.to_ne_bytes(), at as u64).unwrap();
    }

    #[test]
    fn records_are_read_and_the_tail_written_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = ring_file(dir.path(), 5);
        let mut ring = Ring::open(&path).unwrap().unwrap();
        let out = drain_all(&mut ring).unwrap();
        assert_eq!(
            out.iter().map(|r| r.frame).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        let (_, header) = read_header(&File::open(&path).unwrap()).unwrap();
        assert_eq!(header.tail, 5);
        assert!(drain_all(&mut ring).unwrap().is_empty());
    }

    #[test]
    fn a_drain_hands_over_chunks_in_order_across_the_wrap() {
        let dir = tempfile::tempdir().unwrap();
        let path = ring_file_of(dir.path(), 2048, 1500, 3500);
        let mut ring = Ring::open(&path).unwrap().unwrap();
        let (mut frames, mut chunks) = (Vec::new(), Vec::new());
        let got = ring
            .drain(&mut Vec::new(), 1000, |chunk| {
                chunks.push(chunk.len());
                frames.extend(chunk.iter().map(|r| r.frame));
                true
            })
            .unwrap();
        assert_eq!(got, 2000);
        // To the end of the array, then from its start in chunks of at most 1024.
        assert_eq!(chunks, [548, 1024, 428]);
        assert_eq!(frames, (1500..3500).collect::<Vec<_>>());
        let (_, header) = read_header(&File::open(&path).unwrap()).unwrap();
        assert_eq!(header.tail, 3500);
        // Stopped by its caller: the tail stays, so nothing handed over is lost to a reader.
        let path = ring_file_of(dir.path(), 2048, 0, 2000);
        let mut ring = Ring::open(&path).unwrap().unwrap();
        let mut calls = 0;
        let got = ring.drain(&mut Vec::new(), 1000, |_| {
            calls += 1;
            false
        });
        assert_eq!((got, calls), (Ok(1024), 1));
        let (_, header) = read_header(&File::open(&path).unwrap()).unwrap();
        assert_eq!(header.tail, 0);
    }

    /// A scan may look at a ring file between any two of its maker's steps: the SDK creates
    /// it empty, sizes it, writes the header, then publishes `magic`. Looked at empty, then
    /// published before the next read, it was once refused as another framelab's ring and
    /// never read (a parent's span lost in the Python fork test, twice in about 300 runs).
    #[test]
    fn a_ring_made_between_two_reads_of_it_is_waited_for_never_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r-1-2");
        File::create(&path).unwrap();
        let make = || {
            let mut ring = fixture::RingFile::create(dir.path(), 1, 2, CAPACITY);
            ring.publish(&[Record::new(1, 1, 0, 7, 10, 20)]);
        };
        let made_meanwhile = std::cell::Cell::new(false);
        let first_look = Ring::open_with(&path, || {
            make();
            made_meanwhile.set(true);
        });
        assert!(
            matches!(first_look, Ok(None)),
            "refused while it was being made: {:?}",
            first_look.err()
        );
        if !made_meanwhile.get() {
            make();
        }
        let mut ring = Ring::open(&path).unwrap().expect("made");
        assert_eq!(drain_all(&mut ring).unwrap().len(), 1);
    }

    #[test]
    fn impossible_headers_are_refused_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let head_at = offset_of!(RingHeader, head);
        let dropped_at = offset_of!(RingHeader, dropped);
        let cases: [(usize, u64, &str); 4] = [
            (head_at, 3, "head went back"),
            (head_at, 5 + CAPACITY + 1, "head jumped"),
            (dropped_at, u64::MAX, "drop count"),
            (offset_of!(RingHeader, capacity), 4, "identity"),
        ];
        for (at, value, what) in cases {
            let path = ring_file(dir.path(), 5);
            let mut ring = Ring::open(&path).unwrap().unwrap();
            drain_all(&mut ring).unwrap();
            set(&path, at, value);
            let problem = drain_all(&mut ring).unwrap_err();
            assert!(problem.contains(what), "{problem}");
            assert_eq!(ring.dropped(), 0, "the last good drop count stays");
            std::fs::remove_file(&path).unwrap();
        }
        // Cut short: no signal, an error.
        let path = ring_file(dir.path(), 5);
        let mut ring = Ring::open(&path).unwrap().unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(100)
            .unwrap();
        let problem = drain_all(&mut ring).unwrap_err();
        assert!(problem.contains("cut to 100"), "{problem}");
    }
}

/// Ring files as the SDK writes them, for tests of what reads them.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    pub struct RingFile {
        pub path: PathBuf,
        file: File,
        capacity: u64,
        /// Records published so far.
        pub head: u64,
    }

    impl RingFile {
        /// `r-PID-TID` in `dir`, empty, of `capacity` records.
        pub fn create(dir: &Path, pid: u32, tid: u32, capacity: u64) -> RingFile {
            let path = dir.join(format!("r-{pid}-{tid}"));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .unwrap();
            file.set_len(wire::ring_file_bytes(capacity) as u64)
                .unwrap();
            let ring = RingFile {
                path,
                file,
                capacity,
                head: 0,
            };
            ring.set(offset_of!(RingHeader, magic), wire::RING_MAGIC);
            ring.put(
                offset_of!(RingHeader, version),
                &wire::WIRE_VERSION.to_ne_bytes(),
            );
            ring.put(offset_of!(RingHeader, pid), &pid.to_ne_bytes());
            ring.put(offset_of!(RingHeader, tid), &tid.to_ne_bytes());
            ring.set(offset_of!(RingHeader, capacity), capacity);
            ring
        }

        pub fn put(&self, at: usize, bytes: &[u8]) {
            self.file.write_all_at(bytes, at as u64).unwrap();
        }

        /// A 64-bit header field.
        pub fn set(&self, at: usize, value: u64) {
            self.put(at, &value.to_ne_bytes());
        }

        /// `records` written after those published, then the head moved past them.
        pub fn publish(&mut self, records: &[Record]) {
            for r in records {
                // SAFETY: a Record is four integers with no padding.
                let bytes: [u8; 32] = unsafe { std::mem::transmute(*r) };
                let slot = (self.head & (self.capacity - 1)) as usize;
                self.put(wire::HEADER_BYTES + slot * 32, &bytes);
                self.head += 1;
            }
            self.set(offset_of!(RingHeader, head), self.head);
        }

        /// The tail the collector wrote back.
        pub fn tail(&self) -> u64 {
            let mut bytes = [0u8; 8];
            self.file
                .read_exact_at(&mut bytes, offset_of!(RingHeader, tail) as u64)
                .unwrap();
            u64::from_ne_bytes(bytes)
        }
    }
}
