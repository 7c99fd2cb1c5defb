//! The names a process interned, read incrementally from its names file (`n-<pid>`). The
//! file is the program's to write, so it is read as bytes, not trusted to be UTF-8 or to
//! stay small. What a refresh read is handed back too: a spill keeps those bytes, so a fold
//! without the collector (or the session directory) reads the same names.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use framelab_probe::wire;

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

impl ProcessNames {
    /// Reads lines appended since the last call; the bytes read, and where in the file
    /// they began (nothing when nothing was new).
    pub fn refresh(&mut self, dir: &Path, pid: u32) -> Option<(u64, Vec<u8>)> {
        if self.oversized {
            return None;
        }
        let mut file = File::open(dir.join(format!("n-{pid}"))).ok()?;
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut bytes = Vec::new();
        let room = MAX_NAMES_FILE_BYTES.saturating_sub(self.offset);
        file.by_ref().take(room).read_to_end(&mut bytes).ok()?;
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
        let (at, first) = live.refresh(dir.path(), 7).unwrap();
        assert_eq!(at, 0);
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"3 s enc").unwrap();
        let (at2, second) = live.refresh(dir.path(), 7).unwrap();
        file.write_all(b"ode\n").unwrap();
        let (at3, third) = live.refresh(dir.path(), 7).unwrap();
        assert!(live.refresh(dir.path(), 7).is_none(), "nothing new");
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
}
