//! The names a process interned, read incrementally from its names file (`n-<pid>`). The
//! file is the program's to write, so it is read as bytes, not trusted to be UTF-8 or to
//! stay small. What a refresh read is handed back too: a spill keeps those bytes, so a fold
//! without the collector (or the session directory) reads the same names.
//!
//! The files are kept open (`NamesFiles`) and read from where the last read ended: the SDK
//! only ever appends to a names file, and a drain that opened, read and closed it for every
//! process that recorded paid the open's path walk 20 times a second.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use framelab_probe::wire;

use crate::sample::files::PerProcess;

#[derive(Default)]
pub struct ProcessNames {
    /// Bytes of the file taken in so far.
    offset: u64,
    pending: Vec<u8>,
    /// local id → (kind, name)
    pub names: HashMap<u16, (char, String)>,
    pub refused: u64,
    /// The file grew past `MAX_NAMES_FILE_BYTES`: the rest was not read.
    pub oversized: bool,
}

/// More than 4095 names of 16 KiB each: no honest names file is this large.
const MAX_NAMES_FILE_BYTES: u64 = 64 << 20;

/// The session directory's names files, kept open per process.
pub struct NamesFiles {
    dir: PathBuf,
    open: PerProcess<File>,
}

impl NamesFiles {
    pub fn new(dir: PathBuf) -> NamesFiles {
        NamesFiles {
            dir,
            open: PerProcess::default(),
        }
    }

    /// `pid`'s names file, opened the first time; `None` while there is none.
    fn file(&mut self, pid: u32) -> Option<&File> {
        let dir = &self.dir;
        let file = self
            .open
            .get_or_open(pid, || File::open(dir.join(format!("n-{pid}"))).ok())?;
        Some(file)
    }

    /// `pid`'s rings are all retired: its file is closed (opened again if read again).
    pub fn close(&mut self, pid: u32) {
        self.open.close(pid);
    }

    /// Files open now.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }
}

impl ProcessNames {
    /// Reads lines appended since the last call; the bytes read, and where in the file
    /// they began (nothing when nothing was new).
    pub fn refresh(&mut self, files: &mut NamesFiles, pid: u32) -> Option<(u64, Vec<u8>)> {
        if self.oversized {
            return None;
        }
        let file = files.file(pid)?;
        let room = MAX_NAMES_FILE_BYTES.saturating_sub(self.offset);
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        while (bytes.len() as u64) < room {
            let want = chunk.len().min((room - bytes.len() as u64) as usize);
            match file.read_at(&mut chunk[..want], self.offset + bytes.len() as u64) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    files.close(pid);
                    break;
                }
            }
        }
        if bytes.is_empty() {
            return None;
        }
        let at = self.offset;
        self.take_in(&bytes);
        Some((at, bytes))
    }

    /// The bytes taken in so far, read again from the file (what a spill starts with).
    pub fn read_back(&self, dir: &Path, pid: u32) -> Vec<u8> {
        let mut bytes = Vec::new();
        if let Ok(file) = File::open(dir.join(format!("n-{pid}"))) {
            let _ = file.take(self.offset).read_to_end(&mut bytes);
        }
        bytes
    }

    /// Bytes of the file from `at` on, as a spill kept them: what was taken in already is
    /// skipped. False when they begin past what was taken in (a gap).
    pub fn feed_at(&mut self, at: u64, bytes: &[u8]) -> bool {
        if at > self.offset || self.oversized {
            return at <= self.offset;
        }
        let skip = (self.offset - at).min(bytes.len() as u64) as usize;
        let room = MAX_NAMES_FILE_BYTES.saturating_sub(self.offset) as usize;
        let fresh = &bytes[skip..];
        self.take_in(&fresh[..fresh.len().min(room)]);
        true
    }

    fn take_in(&mut self, bytes: &[u8]) {
        self.offset += bytes.len() as u64;
        if self.offset >= MAX_NAMES_FILE_BYTES {
            self.oversized = true;
        }
        self.pending.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = memchr::memchr(b'\n', &self.pending[start..]) {
            let line = String::from_utf8_lossy(&self.pending[start..start + end]);
            match wire::parse_name_line(&line) {
                Some((0, _, _)) => self.refused += 1,
                Some((id, kind, name)) if u32::from(id) <= wire::MAX_NAMES => {
                    self.names.insert(id, (kind, name.to_owned()));
                }
                _ => {}
            }
            start += end + 1;
        }
        self.pending.drain(..start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_fed_from_a_spill_give_the_names_a_refresh_gave_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n-7");
        std::fs::write(&path, "1 s decode\n2 c bytes\n").unwrap();
        let mut live = ProcessNames::default();
        let mut files = NamesFiles::new(dir.path().to_owned());
        let (at, first) = live.refresh(&mut files, 7).unwrap();
        assert_eq!(at, 0);
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"3 s enc").unwrap();
        let (at2, second) = live.refresh(&mut files, 7).unwrap();
        file.write_all(b"ode\n").unwrap();
        let (at3, third) = live.refresh(&mut files, 7).unwrap();
        assert!(live.refresh(&mut files, 7).is_none(), "nothing new");
        assert_eq!(live.read_back(dir.path(), 7), std::fs::read(&path).unwrap());

        let mut folded = ProcessNames::default();
        // The whole file first (a spill's start), then chunks it already holds in part.
        assert!(folded.feed_at(0, &first));
        assert!(folded.feed_at(0, &first));
        assert!(folded.feed_at(at2, &second));
        assert!(folded.feed_at(at3, &third));
        assert!(!folded.feed_at(1000, b"9 s gap\n"), "a gap is refused");
        assert_eq!(folded.names, live.names);
        assert_eq!(folded.names.len(), 3);
        assert_eq!(folded.names[&3], ('s', "encode".to_owned()));
    }

    #[test]
    fn a_kept_open_file_gives_names_added_later_and_the_open_files_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = NamesFiles::new(dir.path().to_owned());
        let mut names = ProcessNames::default();
        assert!(names.refresh(&mut files, 7).is_none(), "no file yet");
        assert_eq!(files.open_count(), 0);
        std::fs::write(dir.path().join("n-7"), "1 s decode\n").unwrap();
        assert_eq!(names.refresh(&mut files, 7).unwrap().0, 0);
        // Appended through another descriptor, as the SDK does: read from where it ended.
        use std::io::Write;
        let mut sdk = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("n-7"))
            .unwrap();
        sdk.write_all(b"2 s encode\n").unwrap();
        let (at, bytes) = names.refresh(&mut files, 7).unwrap();
        assert_eq!((at, &bytes[..]), (11, &b"2 s encode\n"[..]));
        assert_eq!(names.names[&2], ('s', "encode".to_owned()));
        assert_eq!(files.open_count(), 1, "one descriptor, kept");
        // Removed from the directory: the descriptor still reads it.
        std::fs::remove_file(dir.path().join("n-7")).unwrap();
        sdk.write_all(b"3 c bytes\n").unwrap();
        assert!(names.refresh(&mut files, 7).is_some());
        files.close(7);
        assert_eq!(files.open_count(), 0);

        let mut others: Vec<ProcessNames> = Vec::new();
        for pid in 100..100 + crate::sample::files::MAX_KEPT_OPEN as u32 + 10 {
            std::fs::write(dir.path().join(format!("n-{pid}")), "1 s a\n").unwrap();
            let mut names = ProcessNames::default();
            assert!(names.refresh(&mut files, pid).is_some());
            others.push(names);
            assert!(files.open_count() <= crate::sample::files::MAX_KEPT_OPEN);
        }
        assert!(files.open_count() > 0);
        // Closed by the bound, opened again where the last read ended.
        std::fs::write(dir.path().join("n-100"), "1 s a\n2 s b\n").unwrap();
        assert_eq!(others[0].refresh(&mut files, 100).unwrap().0, 6);
    }
}
