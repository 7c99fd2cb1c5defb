//! The spill file: one definition of its layout, written by the drain and read by a fold.
//!
//! A header (`MAGIC`, the run's id in its file, the launch's CLOCK_MONOTONIC ns), then
//! chunks, each a 32-byte header (kind, pid, thread, clock, a 64-bit `at`, the clock's
//! segment count, the payload's length; little-endian) and its payload:
//! - `RECORDS`: a ring's records verbatim (32 bytes each, the machine's order: a spill is
//!   read where it was written), `at` the drain's latest span end; at most
//!   `MAX_CHUNK_RECORDS` a chunk, a drain's records of a ring in one chunk per contiguous
//!   part of its array;
//! - `ALIGNED_RECORDS` (since `FLSPILL2`): the same, their bytes written past the page
//!   cache into the spill's data file (`data_path`, `spill::direct`): a 24-byte payload
//!   saying where (the data's offset in the data file, u64; where the records start in the
//!   data, their bytes, the data's bytes, 0; u32 each), the data being the whole pages of the
//!   ring file that hold the records; written as `VOID_RECORDS` (the same, read past) until
//!   the data's write is over;
//! - `NAMES`: bytes of process `pid`'s names file from offset `at`, as read;
//! - `CLOCK`: tick clock segments from index `at` (`TickClock::encode_segments`);
//! - `THREAD`: the run's thread `thread` is `pid`'s task `at`, its name the payload.
//!
//! The recorder holds an exclusive `flock` on the file while the run records: a reader
//! that cannot take it leaves the spill alone.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, IoSlice, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use framelab_probe::wire::Record;

use super::direct::{Aligned, DirectFile, DirectWriter, Outcome, RingPages, ALIGN};
use std::sync::Arc;

pub const MAGIC: [u8; 8] = *b"FLSPILL2";
/// Spills without `ALIGNED_RECORDS` chunks, as framelabs before them wrote.
const MAGIC_1: [u8; 8] = *b"FLSPILL1";
const FILE_HEADER_BYTES: usize = 32;
const CHUNK_HEADER_BYTES: usize = 32;
const RECORD_BYTES: usize = std::mem::size_of::<Record>();
/// No chunk's payload is larger (a names file is refused past 64 MiB): a longer one is
/// not a chunk this framelab wrote.
const MAX_PAYLOAD_BYTES: usize = 64 << 20;
/// A ring's records are cut into chunks of at most this many (2 MiB): what a fold holds at
/// once.
pub const MAX_CHUNK_RECORDS: u64 = 1 << 16;

const RECORDS: u32 = 1;
const NAMES: u32 = 2;
const CLOCK: u32 = 3;
const THREAD: u32 = 4;
const ALIGNED_RECORDS: u32 = 5;
/// An `ALIGNED_RECORDS` chunk whose write was not confirmed (still going, or given up): read
/// past, its records not the run's.
const VOID_RECORDS: u32 = 6;
const ALIGNED_PAYLOAD_BYTES: usize = 24;

/// Where the spill of the run file `run` is.
pub fn spill_path(run: &Path) -> PathBuf {
    let mut name = run.as_os_str().to_owned();
    name.push("-spill");
    PathBuf::from(name)
}

/// Where the data of a spill's `ALIGNED_RECORDS` chunks are.
pub fn data_path(spill: &Path) -> PathBuf {
    let mut name = spill.as_os_str().to_owned();
    name.push("-data");
    PathBuf::from(name)
}

/// Removes a spill and its data file.
pub fn remove(spill: &Path) {
    let _ = std::fs::remove_file(spill);
    let _ = std::fs::remove_file(data_path(spill));
}

/// The data file of a spill being read, where there is one.
pub fn open_data(spill: &Path) -> Option<File> {
    File::open(data_path(spill)).ok()
}

/// What a spill's header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpillHeader {
    pub run_id: i64,
    pub origin_mono_ns: i64,
}

/// A part's chunk written void, its data on the way (`SpillWriter::begin_direct`).
pub struct Reserved {
    kind_at: u64,
    records: u64,
    pub outcome: Arc<Outcome>,
}

/// Copies `len` bytes of `input` from byte `offset` to where `out` is; how many it copied
/// (0: `input` ended first). `sendfile`, or a test's stand-in.
pub type CopyFn = fn(out: &File, input: &File, offset: u64, len: usize) -> io::Result<usize>;

/// One copy in the kernel, from the ring's page cache to the spill's: no record passes
/// through framelab (`copy_file_range` refuses tmpfs to another filesystem, EXDEV).
fn sendfile(out: &File, input: &File, offset: u64, len: usize) -> io::Result<usize> {
    let mut offset = offset as libc::off_t;
    // SAFETY: two descriptors we own and an offset the call moves; `input`'s own
    // position is left as it is.
    let copied = unsafe { libc::sendfile(out.as_raw_fd(), input.as_raw_fd(), &mut offset, len) };
    if copied < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(copied as usize)
}

/// Why records could not be copied into the spill (which is cut back to its whole chunks).
#[derive(Debug)]
pub enum CopyFailed {
    /// The source ended first: the program cut its ring.
    SourceEnded,
    /// The kernel does not copy between these files (`sendfile`'s EINVAL, ENOSYS,
    /// EOPNOTSUPP): read and write them instead.
    Refused(io::Error),
    /// The spill could not take them (a full disk, EIO).
    Spill(io::Error),
}

/// The drain's side: chunks gathered per drain, written in one `writev`; or a ring's
/// records copied from its file (`records_from`) after the gathered chunks are written.
pub struct SpillWriter {
    file: File,
    path: PathBuf,
    /// Names, clock and thread chunks: written before the drain's records.
    head: Vec<u8>,
    records: Vec<u8>,
    /// Bytes of the file written whole.
    len: u64,
    /// Records written so far...
    pub records_written: u64,
    /// ...of them past the page cache.
    pub records_direct: u64,
    copy: CopyFn,
    /// The spill's direct writes, where its filesystem takes them...
    direct: Option<DirectWriter>,
    /// ...and how long their data file is to be: the next write's place.
    data_len: u64,
}

#[allow(clippy::too_many_arguments)]
fn chunk_header(
    out: &mut Vec<u8>,
    kind: u32,
    pid: u32,
    thread: u32,
    clock: u32,
    at: i64,
    segments: u32,
    len: usize,
) {
    for v in [kind, pid, thread, clock] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&segments.to_le_bytes());
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

/// Whose records a chunk holds and what they are converted with: the ring's process, its
/// thread (index into the run's threads) and clock kind, the drain's latest span end and
/// the clock's segments then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingDrain {
    pub pid: u32,
    pub thread: u32,
    pub clock: u32,
    pub latest_end_ns: i64,
    pub segments: usize,
}

impl RingDrain {
    /// The header of a chunk of `len` bytes of these records.
    fn chunk_header(&self, out: &mut Vec<u8>, len: usize) {
        chunk_header(
            out,
            RECORDS,
            self.pid,
            self.thread,
            self.clock,
            self.latest_end_ns,
            self.segments as u32,
            len,
        );
    }
}

impl SpillWriter {
    /// Creates the spill at `path` (never over an existing one: another run's, or one a
    /// killed run left, which the next open of the run file folds) and locks it.
    pub fn create(path: &Path, header: SpillHeader) -> io::Result<SpillWriter> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)?;
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        let mut bytes = Vec::with_capacity(FILE_HEADER_BYTES);
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&header.run_id.to_le_bytes());
        bytes.extend_from_slice(&header.origin_mono_ns.to_le_bytes());
        bytes.resize(FILE_HEADER_BYTES, 0);
        if let Err(e) = file.write_all(&bytes) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(SpillWriter {
            file,
            path: path.to_owned(),
            head: Vec::new(),
            records: Vec::with_capacity(1 << 20),
            len: FILE_HEADER_BYTES as u64,
            records_written: 0,
            records_direct: 0,
            copy: sendfile,
            direct: None,
            data_len: 0,
        })
    }

    /// Records may go in past the page cache from now on (`begin_direct`), where the
    /// filesystem takes direct writes: their data file is made, and its writer thread started.
    pub fn start_direct(&mut self) {
        self.direct = DirectFile::create(&data_path(&self.path))
            .and_then(|file| DirectWriter::start(file).ok());
    }

    /// Whether records can go in past the page cache (`records_direct`).
    pub fn takes_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// Writes through the page cache from now on (the filesystem refused a direct write).
    pub fn stop_direct(&mut self) {
        self.direct = None;
    }

    /// Writes "direct" chunks with `direct` (a test's: without `O_DIRECT`, or gated).
    #[cfg(test)]
    pub fn direct_with(&mut self, direct: DirectWriter) {
        self.direct = Some(direct);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A ring's records, as `of` drained them.
    pub fn records(&mut self, of: RingDrain, records: &[Record]) {
        let len = std::mem::size_of_val(records);
        of.chunk_header(&mut self.records, len);
        // SAFETY: a Record is four integers with no padding: its bytes are plain data.
        let bytes = unsafe { std::slice::from_raw_parts(records.as_ptr().cast::<u8>(), len) };
        self.records.extend_from_slice(bytes);
        self.records_written += records.len() as u64;
    }

    /// A ring's records copied straight from `ring`'s `parts` (byte offset, bytes; each at
    /// most `MAX_CHUNK_RECORDS`), a chunk each, as `of` drained them. What was gathered
    /// must be written first (`write`): names and clock chunks go before the records that
    /// need them. A copy that fails or comes short leaves the spill as it was before the
    /// ring's first chunk.
    pub fn records_from(
        &mut self,
        ring: &File,
        parts: impl Iterator<Item = (u64, usize)>,
        of: RingDrain,
    ) -> Result<(), CopyFailed> {
        // Records gathered (a ring read rather than copied) may wait: no chunk needs them.
        debug_assert!(self.head.is_empty());
        let (mut written, mut records) = (0, 0);
        let mut header = Vec::with_capacity(CHUNK_HEADER_BYTES);
        for (offset, bytes) in parts {
            header.clear();
            of.chunk_header(&mut header, bytes);
            let copied = self
                .file
                .write_all(&header)
                .map_err(CopyFailed::Spill)
                .and_then(|()| self.copy_part(ring, offset, bytes));
            if let Err(failed) = copied {
                let _ = self.file.set_len(self.len);
                let _ = self.file.seek(io::SeekFrom::Start(self.len));
                return Err(failed);
            }
            written += CHUNK_HEADER_BYTES + bytes;
            records += bytes / RECORD_BYTES;
        }
        self.len += written as u64;
        self.records_written += records as u64;
        Ok(())
    }

    /// Starts writing a ring's records from its `pages` past the page cache, a part each
    /// (as `records_from` cuts them; `takes_direct` must hold): each part's chunk is written
    /// void now (a fold reads past it), and its data by the direct writer's thread into the
    /// data file; `confirm_direct` once every write succeeded makes the chunks the records'.
    /// Chunks that cannot be written leave the spill as it was, and no write starts.
    pub fn begin_direct(
        &mut self,
        pages: &Arc<RingPages>,
        parts: impl Iterator<Item = (u64, usize)>,
        of: RingDrain,
    ) -> io::Result<Vec<Reserved>> {
        debug_assert!(self.head.is_empty());
        let Some(direct) = &self.direct else {
            return Err(io::ErrorKind::Unsupported.into());
        };
        let (mut chunks, mut places) = (Vec::new(), Vec::new());
        let mut data_len = self.data_len;
        for (offset, bytes) in parts {
            let aligned = Aligned::around(offset, bytes as u64);
            let kind_at = self.len + chunks.len() as u64;
            let kind = chunks.len();
            of.chunk_header(&mut chunks, ALIGNED_PAYLOAD_BYTES);
            chunks[kind..kind + 4].copy_from_slice(&VOID_RECORDS.to_le_bytes());
            chunks.extend_from_slice(&data_len.to_le_bytes());
            for v in [aligned.skip, bytes as u64, aligned.len, 0] {
                chunks.extend_from_slice(&(v as u32).to_le_bytes());
            }
            places.push((kind_at, aligned, data_len, bytes / RECORD_BYTES));
            data_len += aligned.len;
        }
        if let Err(e) = self.file.write_all(&chunks) {
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(io::SeekFrom::Start(self.len));
            return Err(e);
        }
        self.len += chunks.len() as u64;
        self.data_len = data_len;
        Ok(places
            .into_iter()
            .map(|(kind_at, aligned, data_at, records)| Reserved {
                kind_at,
                records: records as u64,
                outcome: direct.submit(pages, aligned, data_at),
            })
            .collect())
    }

    /// Calls `tell` on the direct writer's thread after each write.
    pub fn when_written(&self, tell: Box<dyn Fn() + Send>) {
        if let Some(direct) = &self.direct {
            *direct
                .when_written
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(tell);
        }
    }

    /// The direct writes of `reserved` all succeeded: their chunks become the records'.
    pub fn confirm_direct(&mut self, reserved: &[Reserved]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        for r in reserved {
            self.file
                .write_all_at(&ALIGNED_RECORDS.to_le_bytes(), r.kind_at)?;
            self.records_written += r.records;
            self.records_direct += r.records;
        }
        Ok(())
    }

    fn copy_part(&self, ring: &File, mut offset: u64, mut bytes: usize) -> Result<(), CopyFailed> {
        while bytes > 0 {
            match (self.copy)(&self.file, ring, offset, bytes) {
                Ok(0) => return Err(CopyFailed::SourceEnded),
                Ok(n) => {
                    offset += n as u64;
                    bytes -= n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
                    ) =>
                {
                    return Err(CopyFailed::Refused(e))
                }
                Err(e) => return Err(CopyFailed::Spill(e)),
            }
        }
        Ok(())
    }

    /// Copies with `copy` rather than `sendfile` (a test's failures).
    #[cfg(test)]
    pub fn copy_with(&mut self, copy: CopyFn) {
        self.copy = copy;
    }

    /// Bytes of the file written whole.
    pub fn written_bytes(&self) -> u64 {
        self.len
    }

    /// Bytes of `pid`'s names file from `at`.
    pub fn names(&mut self, pid: u32, at: u64, bytes: &[u8]) {
        chunk_header(&mut self.head, NAMES, pid, 0, 0, at as i64, 0, bytes.len());
        self.head.extend_from_slice(bytes);
    }

    /// Clock segments from index `first` (`TickClock::encode_segments`).
    pub fn clock(&mut self, first: usize, segments: &[u8]) {
        chunk_header(
            &mut self.head,
            CLOCK,
            0,
            0,
            0,
            first as i64,
            0,
            segments.len(),
        );
        self.head.extend_from_slice(segments);
    }

    /// The run's thread `index` is `pid`'s task `tid`, named `name`.
    pub fn thread(&mut self, index: u32, pid: u32, tid: u32, name: &str) {
        chunk_header(
            &mut self.head,
            THREAD,
            pid,
            index,
            0,
            i64::from(tid),
            0,
            name.len(),
        );
        self.head.extend_from_slice(name.as_bytes());
    }

    /// Writes what was gathered since the last call: one `writev` (more only when the
    /// kernel takes part of it). On a failure the file is cut back to its whole chunks and
    /// what was gathered stays (`unwritten`).
    pub fn write(&mut self) -> io::Result<()> {
        let (mut head, mut records) = (&self.head[..], &self.records[..]);
        let total = (head.len() + records.len()) as u64;
        while !head.is_empty() || !records.is_empty() {
            let wrote = match self
                .file
                .write_vectored(&[IoSlice::new(head), IoSlice::new(records)])
            {
                Ok(0) => Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let wrote = match wrote {
                Ok(n) => n,
                Err(e) => {
                    let _ = self.file.set_len(self.len);
                    let _ = self.file.seek(io::SeekFrom::Start(self.len));
                    return Err(e);
                }
            };
            let from_head = wrote.min(head.len());
            head = &head[from_head..];
            records = &records[wrote - from_head..];
        }
        self.len += total;
        self.head.clear();
        self.records.clear();
        Ok(())
    }

    /// What was gathered and not written (after a failed `write`): chunks, in order.
    pub fn unwritten(&self) -> [&[u8]; 2] {
        [&self.head, &self.records]
    }
}

/// One chunk as a fold reads it.
pub enum Chunk<'a> {
    Records(Drained<'a>),
    Names {
        pid: u32,
        at: u64,
        bytes: &'a [u8],
    },
    Clock {
        first: usize,
        segments: &'a [u8],
    },
    Thread {
        index: u32,
        pid: u32,
        tid: u32,
        name: String,
    },
}

/// A ring's records as one drain spilled them, with what converting them needs: the
/// drain's latest span end and the clock segments there were then.
pub struct Drained<'a> {
    pub of: RingDrain,
    pub records: &'a [Record],
}

/// How reading a spill ended.
#[derive(Debug, PartialEq, Eq)]
pub enum SpillEnd {
    /// Every chunk whole.
    Whole,
    /// The last chunk was cut (a kill during its write): the records it held, at most.
    Cut { records: u64 },
}

/// Opens a spill for a fold: its header, and the file positioned after it. `Ok(None)` when
/// there is none; an error naming the file when it is not a spill.
pub fn open(path: &Path) -> io::Result<Option<(SpillHeader, File)>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = [0u8; FILE_HEADER_BYTES];
    if file.read_exact(&mut bytes).is_err() || (bytes[..8] != MAGIC && bytes[..8] != MAGIC_1) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "it is not a framelab spill (its header is not one)",
        ));
    }
    let i64_at = |at: usize| i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    Ok(Some((
        SpillHeader {
            run_id: i64_at(8),
            origin_mono_ns: i64_at(16),
        },
        file,
    )))
}

/// Whether the spill's recorder still holds it (the run is still recording).
pub fn held_by_recorder(file: &File) -> bool {
    // SAFETY: flock on a descriptor we own; released when `file` closes.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) != 0 }
}

/// Hands every whole chunk after the header to `each`, in order, the records of
/// `ALIGNED_RECORDS` chunks read from `data` (the spill's data file). A chunk cut short ends
/// the reading (`SpillEnd::Cut`); a chunk that cannot be one (an unknown kind, a length no
/// chunk has, records of no whole size) is an error saying where.
pub fn read_chunks(
    source: impl Read,
    data: Option<&File>,
    mut each: impl FnMut(Chunk<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<SpillEnd> {
    use std::os::unix::fs::FileExt;
    let mut reader = BufReader::with_capacity(1 << 20, source);
    let mut records: Vec<Record> = Vec::new();
    let mut bytes: Vec<u8> = Vec::new();
    let mut offset = FILE_HEADER_BYTES as u64;
    loop {
        let mut header = [0u8; CHUNK_HEADER_BYTES];
        let got = read_full(&mut reader, &mut header)?;
        if got == 0 {
            return Ok(SpillEnd::Whole);
        }
        if got < CHUNK_HEADER_BYTES {
            return Ok(SpillEnd::Cut { records: 0 });
        }
        let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        let (kind, pid, thread, clock) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
        let at = i64::from_le_bytes(header[16..24].try_into().unwrap());
        let (segments, len) = (u32_at(24) as usize, u32_at(28) as usize);
        let bad = |why: &str| anyhow::anyhow!("its chunk at byte {offset} {why}");
        if len > MAX_PAYLOAD_BYTES {
            return Err(bad(&format!(
                "says it holds {len} bytes, more than any chunk"
            )));
        }
        let chunk_bytes = (CHUNK_HEADER_BYTES + len) as u64;
        match kind {
            RECORDS | ALIGNED_RECORDS | VOID_RECORDS => {
                // Where the records are: here, or at an offset of the data file.
                let (from_data, len) = if kind == RECORDS {
                    (None, len)
                } else {
                    if len != ALIGNED_PAYLOAD_BYTES {
                        return Err(bad("is aligned records with no layout of them"));
                    }
                    let mut layout = [0u8; ALIGNED_PAYLOAD_BYTES];
                    if read_full(&mut reader, &mut layout)? < len {
                        return Ok(SpillEnd::Cut { records: 0 });
                    }
                    if kind == VOID_RECORDS {
                        offset += chunk_bytes;
                        continue;
                    }
                    let data_at = u64::from_le_bytes(layout[..8].try_into().unwrap());
                    let at = |i: usize| u32::from_le_bytes(layout[i..i + 4].try_into().unwrap());
                    let (skip, bytes, data) = (at(8) as u64, at(12) as u64, at(16) as u64);
                    if data % ALIGN != 0 || data > MAX_PAYLOAD_BYTES as u64 || skip + bytes > data {
                        return Err(bad("places its records outside its data"));
                    }
                    (Some(data_at + skip), bytes as usize)
                };
                if len % RECORD_BYTES != 0 {
                    return Err(bad("holds records of no whole size"));
                }
                let count = len / RECORD_BYTES;
                records.clear();
                records.reserve(count);
                // SAFETY: `reserve` made room for `count` records; a Record is four
                // integers, valid for any bytes; the length is set only over what was read.
                let spare = unsafe {
                    std::slice::from_raw_parts_mut(records.as_mut_ptr().cast::<u8>(), len)
                };
                let whole = match (from_data, data) {
                    (None, _) => read_full(&mut reader, spare)? == len,
                    // The data file cut short, or gone: the chunk is cut.
                    (Some(at), Some(data)) => data.read_exact_at(spare, at).is_ok(),
                    (Some(_), None) => false,
                };
                if !whole {
                    return Ok(SpillEnd::Cut {
                        records: count as u64,
                    });
                }
                unsafe { records.set_len(count) };
                let of = RingDrain {
                    pid,
                    thread,
                    clock,
                    latest_end_ns: at,
                    segments,
                };
                each(Chunk::Records(Drained {
                    of,
                    records: &records,
                }))?;
            }
            NAMES | CLOCK | THREAD => {
                bytes.resize(len, 0);
                if read_full(&mut reader, &mut bytes)? < len {
                    return Ok(SpillEnd::Cut { records: 0 });
                }
                if at < 0 {
                    return Err(bad("has a negative offset"));
                }
                each(match kind {
                    NAMES => Chunk::Names {
                        pid,
                        at: at as u64,
                        bytes: &bytes,
                    },
                    CLOCK => Chunk::Clock {
                        first: at as usize,
                        segments: &bytes,
                    },
                    _ => Chunk::Thread {
                        index: thread,
                        pid,
                        tid: at as u32,
                        name: String::from_utf8_lossy(&bytes).into_owned(),
                    },
                })?;
            }
            _ => return Err(bad(&format!("is of no kind a spill holds ({kind})"))),
        }
        offset += chunk_bytes;
    }
}

/// Reads until `buf` is full or the file ends; how much was read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
