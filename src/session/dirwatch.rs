//! Whether anything was created in the session directory since the last look (inotify), so
//! the collector lists the directory when a thread made its ring rather than on a fixed
//! beat: a listing is half a dozen system calls, and most ticks find nothing new.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub struct DirWatch {
    fd: OwnedFd,
    buffer: Vec<u8>,
}

impl DirWatch {
    /// Watches `dir` for new entries (created or moved in) and for its own removal. `None`
    /// where inotify cannot be had (no instances left, a filesystem without it): the caller
    /// then lists the directory on its old beat.
    pub fn open(dir: &Path) -> Option<DirWatch> {
        let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: plain system call; the descriptor is owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor this function alone holds.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mask = libc::IN_CREATE
            | libc::IN_MOVED_TO
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask) } < 0 {
            return None;
        }
        Some(DirWatch {
            fd,
            buffer: vec![0; 4096],
        })
    }

    /// Whether anything happened to the directory since the last call (an overflow of the
    /// kernel's queue counts too: something did). Never blocks.
    pub fn changed(&mut self) -> bool {
        let mut changed = false;
        loop {
            // SAFETY: reads into a buffer of the length given.
            let got = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    self.buffer.as_mut_ptr().cast(),
                    self.buffer.len(),
                )
            };
            if got <= 0 {
                // EAGAIN: the queue is empty. Any other error: say "changed" so the caller
                // looks for itself rather than trusting a broken watch.
                let empty =
                    got < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN);
                return changed || !empty;
            }
            changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_seen_once_and_quiet_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::open(dir.path()).expect("inotify");
        assert!(!watch.changed(), "nothing happened yet");
        std::fs::write(dir.path().join("r-1-1"), b"x").unwrap();
        assert!(watch.changed(), "a file was created");
        assert!(!watch.changed(), "each event is reported once");
        // Writing to an existing file is not a new entry.
        std::fs::write(dir.path().join("r-1-1"), b"y").unwrap();
        assert!(!watch.changed(), "a write is not a new entry");
        std::fs::write(dir.path().join("tmp"), b"z").unwrap();
        std::fs::rename(dir.path().join("tmp"), dir.path().join("r-1-2")).unwrap();
        assert!(watch.changed(), "a file created then moved in");
    }

    #[test]
    fn the_directory_removed_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session");
        std::fs::create_dir(&path).unwrap();
        let mut watch = DirWatch::open(&path).expect("inotify");
        std::fs::remove_dir(&path).unwrap();
        assert!(watch.changed(), "its removal is a change");
    }

    #[test]
    fn a_missing_directory_cannot_be_watched() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DirWatch::open(&dir.path().join("absent")).is_none());
    }
}
