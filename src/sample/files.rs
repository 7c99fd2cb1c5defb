//! Small text files of /proc and /sys read again and again: kept open and re-read from
//! offset 0 (the kernel regenerates them on each read), which costs about half of an
//! open/read/close.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One file read repeatedly. Reopened on the next read after a failure.
#[derive(Debug)]
pub struct Reread {
    path: PathBuf,
    file: Option<File>,
    buffer: Vec<u8>,
}

impl Reread {
    pub fn new(path: impl Into<PathBuf>) -> Reread {
        Reread {
            path: path.into(),
            file: None,
            buffer: vec![0; 4096],
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file as text (lossy), or a one-line reason.
    pub fn read(&mut self) -> Result<&str, String> {
        if self.file.is_none() {
            let file = File::open(&self.path).map_err(|e| self.problem(&e))?;
            self.file = Some(file);
        }
        let Some(file) = &self.file else {
            return Err(format!("{}: not open", self.path.display()));
        };
        let mut filled = 0;
        loop {
            match file.read_at(&mut self.buffer[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    if filled < self.buffer.len() {
                        // A short read is the end: /proc and /sys files come whole in one
                        // read, and asking again at an offset makes the kernel regenerate
                        // the text just to find that offset.
                        break;
                    }
                    self.buffer.resize(self.buffer.len() * 2, 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let problem = self.problem(&e);
                    self.file = None;
                    return Err(problem);
                }
            }
        }
        std::str::from_utf8(&self.buffer[..filled])
            .map_err(|_| format!("{} holds bytes that are not text", self.path.display()))
    }

    /// The file's first whitespace-separated word as an integer.
    pub fn read_i64(&mut self) -> Result<i64, String> {
        let parsed = {
            let text = self.read()?;
            let word = text.split_whitespace().next().unwrap_or("");
            word.parse::<i64>()
                .map_err(|_| word.chars().take(40).collect::<String>())
        };
        parsed.map_err(|word| format!("{} holds '{word}', not an integer", self.path.display()))
    }

    fn problem(&self, e: &std::io::Error) -> String {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "missing".to_string(),
            std::io::ErrorKind::PermissionDenied => "not readable (permission denied)".into(),
            _ => e.to_string(),
        };
        format!("{}: {why}", self.path.display())
    }
}

/// At most this many files kept open per `PerProcess`: descriptors are the process's to
/// spend (a soft limit of 1024 is common).
pub const MAX_KEPT_OPEN: usize = 256;

/// A file (or what reads one) kept open per process, at most `MAX_KEPT_OPEN`; when full,
/// the set starts afresh rather than keep them (they are mostly of processes that ended
/// and are not read again).
#[derive(Debug)]
pub struct PerProcess<T>(HashMap<u32, T>);

impl<T> Default for PerProcess<T> {
    fn default() -> PerProcess<T> {
        PerProcess(HashMap::new())
    }
}

impl<T> PerProcess<T> {
    /// `pid`'s, made with `open` the first time; `None` when it cannot be.
    pub fn get_or_open(&mut self, pid: u32, open: impl FnOnce() -> Option<T>) -> Option<&mut T> {
        if !self.0.contains_key(&pid) {
            let opened = open()?;
            if self.0.len() >= MAX_KEPT_OPEN {
                self.0.clear();
            }
            self.0.insert(pid, opened);
        }
        self.0.get_mut(&pid)
    }

    /// `pid`'s is closed (opened again when asked for again).
    pub fn close(&mut self, pid: u32) {
        self.0.remove(&pid);
    }

    pub fn is_open(&self, pid: u32) -> bool {
        self.0.contains_key(&pid)
    }

    /// How many are open now.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A file read once, trimmed; `None` when missing or unreadable.
pub fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Entries of `dir` whose name is `prefix` followed by digits, as (number, path), sorted.
pub fn numbered_entries(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let number = name.to_str()?.strip_prefix(prefix)?.parse().ok()?;
            Some((number, e.path()))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereads_a_file_that_changes_and_reports_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("value");
        std::fs::write(&path, "1200000\n").unwrap();
        let mut file = Reread::new(&path);
        assert_eq!(file.read_i64(), Ok(1_200_000));
        std::fs::write(&path, "800000\n").unwrap();
        assert_eq!(file.read_i64(), Ok(800_000));
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(file.read_i64().unwrap_err().contains("not an integer"));
        let mut missing = Reread::new(dir.path().join("nope"));
        assert!(missing.read().unwrap_err().ends_with("nope: missing"));
    }

    #[test]
    fn reads_files_longer_than_the_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status");
        let text = "x".repeat(10_000) + "\nend";
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Reread::new(&path).read().unwrap(), text);
    }

    #[test]
    fn per_process_files_are_bounded_and_start_afresh_when_full() {
        let mut kept: PerProcess<u32> = PerProcess::default();
        assert!(kept.get_or_open(1, || None).is_none(), "cannot be opened");
        assert!(kept.is_empty());
        for pid in 0..MAX_KEPT_OPEN as u32 {
            assert_eq!(
                kept.get_or_open(pid, || Some(pid * 10)),
                Some(&mut (pid * 10))
            );
        }
        assert_eq!(kept.len(), MAX_KEPT_OPEN);
        // Kept: not opened again.
        assert_eq!(kept.get_or_open(3, || unreachable!()), Some(&mut 30));
        // One more: the set starts afresh with it.
        let more = MAX_KEPT_OPEN as u32;
        assert_eq!(kept.get_or_open(more, || Some(7)), Some(&mut 7));
        assert_eq!(kept.len(), 1);
        assert!(kept.is_open(more) && !kept.is_open(3));
        kept.close(more);
        assert!(kept.is_empty());
    }

    #[test]
    fn numbered_entries_are_sorted_by_number() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["cpu10", "cpu2", "cpufreq", "cpuidle", "cpu0"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let numbers: Vec<u32> = numbered_entries(dir.path(), "cpu")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(numbers, vec![0, 2, 10]);
    }
}
