//! Records written from the ring's own pages to the disk, past the page cache (`O_DIRECT`).
//!
//! Copying into the page cache (`sendfile`) costs the drain per byte: on the 16-core GPU host
//! at 32 MB/s (1M spans/s) 1.55–2.14% of a core, against 0.34–0.37% for a direct write of the
//! same bytes from a mapping of the ring (BENCHMARKS.md, "NVML rehearsed before the launch,
//! and the spill past the page cache"). A direct write moves whole aligned blocks: the ring's
//! pages that hold a part's records, written at the end of the spill's data file, with where
//! the records start in them (`Aligned`). Nothing here reads the mapped memory: only the
//! kernel does, for the write, so a program that cuts its ring meanwhile makes the write
//! fail (EFAULT), never framelab.
//!
//! A direct write waits for the disk, where a copy into the page cache does not: a busy disk
//! (another process's `fdatasync` of a gigabyte) held one long enough, on the GPU host, for a
//! default ring at 1M spans/s to overflow. So the writes are made on a thread of their own
//! (`DirectWriter`), which wakes the collector when one is over, and the drain goes on: a
//! write still going when its ring passes half full is given up, and the records are copied
//! instead. And they go to a file of their own: ext4 holds a file's inode lock for the whole
//! of a direct write into new blocks, and the drain's writes to the spill must not wait.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What every direct write is aligned to, in memory, in the file and in length: a page,
/// which covers the block sizes of the disks and filesystems that take direct writes.
pub const ALIGN: u64 = 4096;

pub fn align_down(x: u64) -> u64 {
    x & !(ALIGN - 1)
}

pub fn align_up(x: u64) -> u64 {
    align_down(x + ALIGN - 1)
}

/// The whole pages of a ring file that hold bytes `[offset, offset + bytes)`: from
/// `start`, `len` bytes, the wanted ones `skip` bytes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aligned {
    pub start: u64,
    pub len: u64,
    pub skip: u64,
}

impl Aligned {
    pub fn around(offset: u64, bytes: u64) -> Aligned {
        let start = align_down(offset);
        Aligned {
            start,
            len: align_up(offset + bytes) - start,
            skip: offset - start,
        }
    }
}

/// A ring file mapped read-only, for direct writes from its pages.
pub struct RingPages {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: nothing reads or changes the mapping through the pointer: it is only handed to the
// kernel as a write's source, from whichever thread, and unmapped once, when the last owner
// drops it.
unsafe impl Send for RingPages {}
unsafe impl Sync for RingPages {}

impl RingPages {
    /// Maps `len` bytes of `file` (its whole length: the last page is whole in memory).
    pub fn map(file: &File, len: usize) -> io::Result<RingPages> {
        // SAFETY: a fresh shared read-only mapping of a descriptor we own; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RingPages { base, len })
    }

    /// Writes the ring file's bytes `[pages.start, pages.start + pages.len)` to `out` at
    /// `at`, all of them (the pages must lie within the mapping's last page).
    pub fn write_to(&self, out: &DirectFile, pages: Aligned, at: u64) -> io::Result<()> {
        let end = pages.start + pages.len;
        if end > align_up(self.len as u64) {
            return Err(io::Error::from_raw_os_error(libc::EFAULT));
        }
        let mut done = 0;
        while done < pages.len {
            // SAFETY: within the mapping (checked above: its last page is mapped whole); the
            // kernel reads it, framelab never does.
            let from = unsafe { self.base.cast::<u8>().add((pages.start + done) as usize) };
            let n = (pages.len - done) as usize;
            let off = (at + done) as libc::off_t;
            // SAFETY: a descriptor we own, and `n` bytes of our mapping from `from`.
            let wrote = unsafe { libc::pwrite(out.file.as_raw_fd(), from.cast(), n, off) };
            match wrote {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n if n > 0 => done += n as u64,
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
            // The rest of a short write goes again only from a block boundary.
            if done % ALIGN != 0 && done < pages.len {
                return Err(io::Error::other(
                    "a direct write stopped off a block boundary",
                ));
            }
        }
        Ok(())
    }
}

impl Drop for RingPages {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made, unmapped once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Whether `file` (a directory too) is on tmpfs, whose files are the page cache.
pub fn on_tmpfs(file: &File) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    // SAFETY: a descriptor the caller owns and a zeroed out-struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) == 0 && fs.f_type as i64 == TMPFS_MAGIC }
}

/// The spill's data file (`RUN.framelab-spill-data`), opened for direct writes. Its own
/// file, not the spill's: ext4 holds a file's inode lock for the whole of a direct write into
/// new blocks, and the drain's own writes to the spill would wait behind it.
pub struct DirectFile {
    file: File,
}

impl DirectFile {
    /// Makes the data file at `path`; `None` where the filesystem takes no direct writes
    /// (some FUSE) or gains nothing by them (tmpfs, whose files are the page cache): the
    /// spill is then written through the page cache alone.
    pub fn create(path: &Path) -> Option<DirectFile> {
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_DIRECT)
            .open(path);
        match opened {
            Ok(file) => {
                if on_tmpfs(&file) {
                    drop(file);
                    let _ = std::fs::remove_file(path);
                    return None;
                }
                Some(DirectFile { file })
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::AlreadyExists {
                    // Some filesystems make the file, then refuse O_DIRECT.
                    let _ = std::fs::remove_file(path);
                }
                None
            }
        }
    }

    /// A descriptor every write to fails on (EBADF): a disk that refuses.
    #[cfg(test)]
    pub fn refusing(path: &Path) -> DirectFile {
        std::fs::write(path, b"").unwrap();
        DirectFile {
            file: File::open(path).unwrap(),
        }
    }

    /// A descriptor without `O_DIRECT` standing in (tests of the layout, on any filesystem).
    #[cfg(test)]
    pub fn buffered(path: &Path) -> DirectFile {
        let file = (OpenOptions::new().write(true).create(true).truncate(false))
            .open(path)
            .unwrap();
        DirectFile { file }
    }
}

/// One direct write's end: how it went and how long it took, once it is over.
#[derive(Default)]
pub struct Outcome {
    ended: Mutex<Option<(io::Result<()>, Duration)>>,
    changed: Condvar,
}

impl Outcome {
    /// How the write went and how long it took; `None` while it goes on. Taken once.
    pub fn take(&self) -> Option<(io::Result<()>, Duration)> {
        self.ended.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Whether the write is over.
    pub fn is_over(&self) -> bool {
        self.ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Waits until the write is over or `until`; whether it is over.
    pub fn wait_until(&self, until: Instant) -> bool {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        while ended.is_none() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            ended = self
                .changed
                .wait_timeout(ended, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    fn end(&self, result: io::Result<()>, took: Duration) {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner()) = Some((result, took));
        self.changed.notify_all();
    }
}

struct Job {
    pages: Arc<RingPages>,
    aligned: Aligned,
    at: u64,
    outcome: Arc<Outcome>,
    /// When it was handed over: what the ring waits counts from then.
    submitted: Instant,
}

/// Called on the writer's thread after each write (the collector woken to take its records).
pub type WhenWritten = Arc<Mutex<Option<Box<dyn Fn() + Send>>>>;

/// The thread that makes the direct writes, in the order given. Dropped, it ends after the
/// write it is in: never waited for, as a hung disk would hold the run's end.
pub struct DirectWriter {
    jobs: mpsc::Sender<Job>,
    pub when_written: WhenWritten,
}

impl DirectWriter {
    pub fn start(file: DirectFile) -> io::Result<DirectWriter> {
        DirectWriter::spawn(file, None)
    }

    /// A writer that makes each write only once `gate` gives a go (a test's slow disk).
    #[cfg(test)]
    pub fn gated(file: DirectFile, gate: mpsc::Receiver<()>) -> DirectWriter {
        DirectWriter::spawn(file, Some(gate)).unwrap()
    }

    fn spawn(file: DirectFile, gate: Option<mpsc::Receiver<()>>) -> io::Result<DirectWriter> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let when_written: WhenWritten = Arc::default();
        let tell = when_written.clone();
        std::thread::Builder::new()
            .name("framelab-direct".into())
            .spawn(move || {
                let mut next = None;
                while let Some(job) = next.take().or_else(|| queue.recv().ok()) {
                    if let Some(gate) = &gate {
                        let _ = gate.recv();
                    }
                    let result = job.pages.write_to(&file, job.aligned, job.at);
                    job.outcome.end(result, job.submitted.elapsed());
                    // The collector takes a ring's records once all its writes are over:
                    // it hears once the writes queued together are, not after each.
                    next = queue.try_recv().ok();
                    if next.is_some() {
                        continue;
                    }
                    if let Some(tell) = tell.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                        tell();
                    }
                }
            })?;
        Ok(DirectWriter { jobs, when_written })
    }

    /// Writes the ring file's `aligned` pages at `at` of the spill, on the thread.
    pub fn submit(&self, pages: &Arc<RingPages>, aligned: Aligned, at: u64) -> Arc<Outcome> {
        let outcome = Arc::new(Outcome::default());
        let job = Job {
            pages: pages.clone(),
            aligned,
            at,
            outcome: outcome.clone(),
            submitted: Instant::now(),
        };
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            let gone = io::Error::other("the direct writer's thread is gone");
            job.outcome.end(Err(gone), Duration::ZERO);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_widened_to_the_pages_that_hold_it() {
        // The ring's records start 256 bytes in: slot 0 is in the first page.
        assert_eq!(
            Aligned::around(256, 32),
            Aligned {
                start: 0,
                len: 4096,
                skip: 256
            }
        );
        // Across a page boundary, ending on one.
        assert_eq!(
            Aligned::around(4000, 4192),
            Aligned {
                start: 0,
                len: 8192,
                skip: 4000
            }
        );
        assert_eq!(
            Aligned::around(8192, 4096),
            Aligned {
                start: 8192,
                len: 4096,
                skip: 0
            }
        );
    }

    /// Two pages of 7s in a ring file in `dir`, mapped.
    fn ring_of_sevens(dir: &Path) -> Arc<RingPages> {
        let ring = dir.join("ring");
        std::fs::write(&ring, vec![7u8; 8192]).unwrap();
        Arc::new(RingPages::map(&File::open(&ring).unwrap(), 8192).unwrap())
    }

    #[test]
    fn the_writer_says_when_each_write_is_over() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let pages = ring_of_sevens(dir.path());
        let writer = DirectWriter::start(DirectFile::buffered(&dir.path().join("data"))).unwrap();
        let told = Arc::new(AtomicUsize::new(0));
        let count = told.clone();
        *writer.when_written.lock().unwrap() = Some(Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }));
        let until = Instant::now() + Duration::from_secs(60);
        for (at, calls) in [(0, 1), (4096, 2)] {
            let outcome = writer.submit(&pages, Aligned::around(at, 4096), at);
            assert!(outcome.wait_until(until));
            assert!(outcome.take().unwrap().0.is_ok());
            // Told after the outcome is set, once nothing else is queued: the next write
            // is submitted only then, or the writer would find it queued and tell once.
            while told.load(Ordering::SeqCst) < calls && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(told.load(Ordering::SeqCst), 2);
        assert_eq!(
            std::fs::read(dir.path().join("data")).unwrap(),
            vec![7u8; 8192]
        );
    }

    #[test]
    fn writes_queued_together_are_told_once_they_are_all_over() {
        let dir = tempfile::tempdir().unwrap();
        let pages = ring_of_sevens(dir.path());
        let (go, gate) = mpsc::channel();
        let writer = DirectWriter::gated(DirectFile::buffered(&dir.path().join("data")), gate);
        // At each call: how many of the writes were over.
        let submitted: Arc<Mutex<Vec<Arc<Outcome>>>> = Arc::default();
        let told: Arc<Mutex<Vec<usize>>> = Arc::default();
        let (watched, said) = (submitted.clone(), told.clone());
        *writer.when_written.lock().unwrap() = Some(Box::new(move || {
            let over = watched
                .lock()
                .unwrap()
                .iter()
                .filter(|o| o.is_over())
                .count();
            said.lock().unwrap().push(over);
        }));
        // Both queued before the first is written: the writer finds the second waiting.
        for at in [0, 4096] {
            let outcome = writer.submit(&pages, Aligned::around(at, 4096), at);
            submitted.lock().unwrap().push(outcome);
        }
        go.send(()).unwrap();
        go.send(()).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while told.lock().unwrap().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(told.lock().unwrap()[0], 2, "told only once both were over");
    }

    #[test]
    fn pages_past_the_mapping_are_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let ring = dir.path().join("ring");
        std::fs::write(&ring, vec![7u8; 5000]).unwrap();
        let pages = RingPages::map(&File::open(&ring).unwrap(), 5000).unwrap();
        let out = dir.path().join("out");
        std::fs::write(&out, b"").unwrap();
        let out = DirectFile::buffered(&out);
        // The mapping's last page is whole: 8192 bytes may go.
        pages.write_to(&out, Aligned::around(4096, 904), 0).unwrap();
        let past = pages.write_to(&out, Aligned::around(8192, 32), 0);
        assert_eq!(past.unwrap_err().raw_os_error(), Some(libc::EFAULT));
    }
}
