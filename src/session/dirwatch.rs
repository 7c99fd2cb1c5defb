//! Whether anything was created in the session directory since the last look (inotify), so
//! the collector lists the directory when a thread made its ring rather than on a fixed
//! beat: a listing is half a dozen system calls, and most ticks find nothing new.
//!
//! A thread of its own blocks on the watch and, given the session's wakeup word, wakes the
//! collector when something is created: a ring whose producer cannot wake it (an older
//! SDK) must not wait unread through the collector's longest sleep.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::wake::Ringer;

pub struct DirWatch {
    /// Set by the watching thread when something happened; taken by `changed`.
    news: Arc<AtomicBool>,
    /// Whether the thread wakes the collector when it sets `news`.
    rings: bool,
    /// Written to end the thread.
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl DirWatch {
    /// Watches `dir` for new entries (created or moved in) and for its own removal, waking
    /// the collector through `ringer` on each. `None` where inotify cannot be had (no
    /// instances left, a filesystem without it) or no thread can be started: the caller
    /// then lists the directory on its old beat.
    pub fn open(dir: &Path, ringer: Option<Ringer>) -> Option<DirWatch> {
        let path = CString::new(dir.as_os_str().as_bytes()).ok()?;
        let inotify = owned(
            // SAFETY: plain system call; the descriptor is owned by `owned`.
            unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) },
        )?;
        let mask = libc::IN_CREATE
            | libc::IN_MOVED_TO
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        if unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), path.as_ptr(), mask) } < 0 {
            return None;
        }
        // SAFETY: plain system call; the descriptor is owned by `owned`.
        let stop = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
        let stopped = stop.try_clone().ok()?;
        let news = Arc::new(AtomicBool::new(false));
        let rings = ringer.is_some();
        let thread = std::thread::Builder::new()
            .name("framelab-dirwatch".into())
            .spawn({
                let news = Arc::clone(&news);
                move || watch(inotify, stopped, &news, ringer)
            })
            .ok()?;
        Some(DirWatch {
            news,
            rings,
            stop,
            thread: Some(thread),
        })
    }

    /// Whether anything happened to the directory since the last call (an overflow of the
    /// kernel's queue counts too: something did; a watch that failed says so every time).
    /// Never blocks.
    pub fn changed(&mut self) -> bool {
        self.news.swap(false, Ordering::SeqCst) || !self.watching()
    }

    fn watching(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Whether something happened that `changed` has not reported yet.
    pub fn pending(&self) -> bool {
        self.news.load(Ordering::SeqCst)
    }

    /// Whether a new entry wakes the collector from its wait on the wakeup word.
    pub fn wakes_collector(&self) -> bool {
        self.rings && self.watching()
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an eventfd takes an 8-byte count.
        unsafe { libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn owned(fd: libc::c_int) -> Option<OwnedFd> {
    // SAFETY: a fresh descriptor nobody else holds.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The watching thread: sleeps until the directory changes or `stop` is written. Each
/// change sets `news` before it rings, so a collector that checks `news` after saying it
/// sleeps never misses one (`WakeWord::wait`).
fn watch(inotify: OwnedFd, stop: OwnedFd, news: &AtomicBool, ringer: Option<Ringer>) {
    let mut buffer = vec![0u8; 4096];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: inotify.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if fds[1].revents != 0 {
            return;
        }
        // A broken watch says "changed" for good: the caller then looks for itself.
        let broken = ready < 0 || !drain(&inotify, &mut buffer);
        news.store(true, Ordering::SeqCst);
        if let Some(ringer) = &ringer {
            ringer.ring();
        }
        if broken {
            return;
        }
    }
}

/// Reads every queued event; `false` when the watch failed.
fn drain(inotify: &OwnedFd, buffer: &mut [u8]) -> bool {
    loop {
        // SAFETY: reads into a buffer of the length given.
        let got = unsafe {
            libc::read(
                inotify.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        if got <= 0 {
            return got < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::session::wake::{self, Waited, WakeWord};
    use std::time::{Duration, Instant};

    /// Waits for the watching thread to report; a bound far past any real delay, so that
    /// only a change that never comes fails.
    fn sees_change(watch: &mut DirWatch) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if watch.changed() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_new_file_is_seen_once_and_quiet_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        let mut watch = DirWatch::open(dir.path(), None).expect("inotify");
        assert!(!watch.changed(), "nothing happened yet");
        std::fs::write(dir.path().join("r-1-1"), b"x").unwrap();
        assert!(sees_change(&mut watch), "a file was created");
        assert!(!watch.changed(), "each event is reported once");
        // Writing to an existing file is not a new entry: a marker file made after it
        // must be the only news.
        std::fs::write(dir.path().join("r-1-1"), b"y").unwrap();
        std::fs::write(dir.path().join("marker"), b"m").unwrap();
        assert!(sees_change(&mut watch));
        assert!(!watch.changed(), "a write is not a new entry");
        std::fs::write(dir.path().join("tmp"), b"z").unwrap();
        assert!(sees_change(&mut watch));
        std::fs::rename(dir.path().join("tmp"), dir.path().join("r-1-2")).unwrap();
        assert!(sees_change(&mut watch), "a file created then moved in");
    }

    #[test]
    fn a_new_file_wakes_a_collector_asleep_on_the_word() {
        let dir = tempfile::tempdir().unwrap();
        wake::make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        let watch = DirWatch::open(dir.path(), word.ringer()).expect("inotify");
        assert!(watch.wakes_collector());
        let path = dir.path().to_owned();
        let maker = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(path.join("r-1-1"), b"x").unwrap();
        });
        // Far longer than any test may take: only the new file can end it in time.
        let waited = word.wait(Duration::from_secs(120), || watch.pending());
        assert_eq!(waited, Waited::Woken);
        assert!(watch.pending(), "the news is still there for the scan");
        maker.join().unwrap();
    }

    #[test]
    fn a_file_made_before_the_wait_ends_it_at_once() {
        let dir = tempfile::tempdir().unwrap();
        wake::make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        let mut watch = DirWatch::open(dir.path(), word.ringer()).expect("inotify");
        std::fs::write(dir.path().join("r-1-1"), b"x").unwrap();
        // The thread rang a word that said "awake": the wait must take the news anyway.
        while !watch.pending() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let waited = word.wait(Duration::from_secs(120), || watch.pending());
        assert_eq!(waited, Waited::Woken);
        assert!(watch.changed());
    }

    #[test]
    fn the_directory_removed_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session");
        std::fs::create_dir(&path).unwrap();
        let mut watch = DirWatch::open(&path, None).expect("inotify");
        std::fs::remove_dir(&path).unwrap();
        assert!(sees_change(&mut watch), "its removal is a change");
    }

    #[test]
    fn a_missing_directory_cannot_be_watched() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DirWatch::open(&dir.path().join("absent"), None).is_none());
    }
}
