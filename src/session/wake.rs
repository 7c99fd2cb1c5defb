//! The session's wakeup word (`wire::WAKE_FILE`): the collector sleeps on it and the SDK
//! wakes it when a ring passes a quarter full (probe/src/wire.rs says the protocol).
//!
//! The file is framelab's, but the program writes it (it must, to wake us), so it is read
//! as untrusted like the rings: framelab never dereferences its mapping. It sets the word
//! with `pwrite` and waits with `FUTEX_WAIT` on the mapped address, where a truncated file
//! is an error (EFAULT), never a signal. After an error the word is given up: the
//! supervisor then drains on its tick, as for rings of older SDKs.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};
use std::time::Duration;

use framelab_probe::wire::{self, COLLECTOR_ASLEEP, COLLECTOR_AWAKE};

/// The collector's side of the wakeup word.
pub struct WakeWord {
    file: File,
    /// The file mapped read-only: only its address is used, by the kernel.
    map: *mut libc::c_void,
    /// A system call failed on it: not used again.
    broken: bool,
    /// The last wait timed out, leaving the word "asleep" while the collector ran: a
    /// producer may have rung it since.
    left_asleep: bool,
    /// Signals ring it (`ring_on_signals`).
    rung_by_signals: bool,
}

// SAFETY: the mapping is never read or written through the pointer.
unsafe impl Send for WakeWord {}

/// How a wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// A producer woke us, or had already set the word before we slept.
    Woken,
    /// The time was up: nobody asked.
    TimedOut,
    /// A signal's handler rang (a child's exit, Ctrl-C), before the sleep or on this
    /// thread during it: the caller looks at what it says, as after a timeout.
    Interrupted,
    /// The word cannot be used: sleep some other way.
    Unusable,
}

/// Makes the wakeup word in a session directory being made (before the rename that
/// publishes it), with the permissions the rings get: `mode`, and the user and group of
/// `owner` where given.
pub fn make(dir: &Path, mode: u32, owner: (Option<u32>, Option<u32>)) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(dir.join(wire::WAKE_FILE))?;
    file.set_len(wire::WAKE_FILE_BYTES as u64)?;
    std::fs::set_permissions(
        dir.join(wire::WAKE_FILE),
        std::os::unix::fs::PermissionsExt::from_mode(mode),
    )?;
    if owner != (None, None) {
        std::os::unix::fs::fchown(&file, owner.0, owner.1)?;
    }
    Ok(())
}

impl WakeWord {
    /// The session's word, or `None` when it is missing or cannot be mapped.
    pub fn open(dir: &Path) -> Option<WakeWord> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join(wire::WAKE_FILE))
            .ok()?;
        let map = map_word(&file)?;
        Some(WakeWord {
            file,
            map,
            broken: false,
            left_asleep: false,
            rung_by_signals: false,
        })
    }

    /// Whether producers can still wake us through it.
    pub fn usable(&self) -> bool {
        !self.broken
    }

    /// A handle another thread wakes us with, as a producer would; `None` when the word
    /// cannot be mapped again.
    pub fn ringer(&self) -> Option<Ringer> {
        let file = self.file.try_clone().ok()?;
        let map = map_word(&file)?;
        Some(Ringer { file, map })
    }

    /// Says we sleep, then sleeps until a producer wakes us or `longest` is over.
    /// `woken_already` is asked after the word says "asleep" and before the sleep: a
    /// `Ringer` that rang just before then rang an awake word, so its news is taken here.
    pub fn wait(&mut self, longest: Duration, woken_already: impl Fn() -> bool) -> Waited {
        if self.broken {
            return Waited::Unusable;
        }
        // A producer rang while the collector ran after a timeout, its ring maybe passing a
        // quarter after that tick's drain looked at it: saying "asleep" now would lose the
        // call, and the ring would wait for its producer's next eighth.
        if std::mem::take(&mut self.left_asleep) && self.word() == Some(COLLECTOR_AWAKE) {
            return Waited::Woken;
        }
        if self
            .file
            .write_all_at(&COLLECTOR_ASLEEP.to_ne_bytes(), 0)
            .is_err()
        {
            self.broken = true;
            return Waited::Unusable;
        }
        let signalled = self.rung_by_signals && SIGNALLED.swap(false, Ordering::AcqRel);
        if woken_already() || signalled {
            // Awake again, so that no producer spends a system call on us.
            let _ = self.file.write_all_at(&COLLECTOR_AWAKE.to_ne_bytes(), 0);
            return match signalled {
                true => Waited::Interrupted,
                false => Waited::Woken,
            };
        }
        let timeout = libc::timespec {
            tv_sec: longest.as_secs() as libc::time_t,
            tv_nsec: longest.subsec_nanos() as libc::c_long,
        };
        // SAFETY: FUTEX_WAIT reads the word at a mapped address through the kernel (a
        // bad page is EFAULT); the timeout is a valid relative timespec.
        let result = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.map,
                libc::FUTEX_WAIT,
                COLLECTOR_ASLEEP,
                &timeout as *const libc::timespec,
                std::ptr::null::<u32>(),
                0,
            )
        };
        let error = std::io::Error::last_os_error().raw_os_error();
        // Awake now, whoever woke us: a signal's news is taken by the tick that follows,
        // not again by the next wait.
        let signalled = self.rung_by_signals && SIGNALLED.swap(false, Ordering::AcqRel);
        if result == 0 {
            return Waited::Woken;
        }
        match error {
            // The word was no longer "asleep": a producer (or a signal's handler) came first.
            Some(libc::EAGAIN) => Waited::Woken,
            Some(libc::ETIMEDOUT) if !signalled => {
                self.left_asleep = true;
                Waited::TimedOut
            }
            Some(libc::ETIMEDOUT | libc::EINTR) => {
                self.left_asleep = true;
                Waited::Interrupted
            }
            _ => {
                self.broken = true;
                Waited::Unusable
            }
        }
    }

    /// The word as the file holds it now (read, never through the mapping).
    fn word(&self) -> Option<u32> {
        let mut bytes = [0u8; 4];
        self.file.read_exact_at(&mut bytes, 0).ok()?;
        Some(u32::from_ne_bytes(bytes))
    }
}

/// The word's file mapped read-only, for its address alone.
fn map_word(file: &File) -> Option<*mut libc::c_void> {
    // SAFETY: mapping our own descriptor read-only; checked for failure.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            wire::WAKE_FILE_BYTES,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    (map != libc::MAP_FAILED).then_some(map)
}

/// Wakes the collector from another of framelab's threads (the ring directory's watch):
/// sets the word awake and wakes its sleeper, as a producer does, without ever touching
/// the mapping itself.
pub struct Ringer {
    file: File,
    map: *mut libc::c_void,
}

// SAFETY: the mapping is never read or written through the pointer.
unsafe impl Send for Ringer {}

impl Ringer {
    pub fn ring(&self) {
        if self
            .file
            .write_all_at(&COLLECTOR_AWAKE.to_ne_bytes(), 0)
            .is_ok()
        {
            // SAFETY: FUTEX_WAKE only uses the address as a key (a bad page is EFAULT).
            unsafe { libc::syscall(libc::SYS_futex, self.map, libc::FUTEX_WAKE, 1) };
        }
    }
}

impl Drop for Ringer {
    fn drop(&mut self) {
        // SAFETY: our mapping, of this size.
        unsafe { libc::munmap(self.map, wire::WAKE_FILE_BYTES) };
    }
}

impl Drop for WakeWord {
    fn drop(&mut self) {
        if self.rung_by_signals {
            stop_ringing_on_signals();
        }
        // SAFETY: our mapping, of this size.
        unsafe { libc::munmap(self.map, wire::WAKE_FILE_BYTES) };
    }
}

/// The word a signal handler rings (`ring_from_signal`): a descriptor number kept for the
/// whole process and pointed at /dev/null between sessions, never closed, so that a handler
/// that loaded it can never write a file that took its number; and the word's address.
static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);
static SIGNAL_WORD: AtomicPtr<libc::c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Set by a handler, taken by the next wait that would sleep: a signal that came while the
/// collector ran (the word then said awake, and the wait sets it asleep) is not lost.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

impl WakeWord {
    /// From now on `ring_from_signal` wakes this word's sleeper: a child's exit or Ctrl-C is
    /// seen at once, however long the collector sleeps between drains.
    pub fn ring_on_signals(&mut self) {
        let held = SIGNAL_FD.load(Ordering::Acquire);
        // SAFETY: duplicates of our open descriptor, close-on-exec like it (the run's
        // commands must not inherit it); the result is checked.
        let fd = unsafe {
            if held >= 0 {
                libc::dup3(self.file.as_raw_fd(), held, libc::O_CLOEXEC)
            } else {
                libc::fcntl(self.file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0)
            }
        };
        if fd < 0 {
            return;
        }
        SIGNAL_FD.store(fd, Ordering::Release);
        SIGNAL_WORD.store(self.map, Ordering::Release);
        self.rung_by_signals = true;
    }
}

/// Signals ring nothing until the next `ring_on_signals`.
fn stop_ringing_on_signals() {
    SIGNAL_WORD.store(std::ptr::null_mut(), Ordering::Release);
    let fd = SIGNAL_FD.load(Ordering::Acquire);
    if let (true, Ok(null)) = (fd >= 0, File::open("/dev/null")) {
        // SAFETY: points the held number at /dev/null; both descriptors are open.
        unsafe { libc::dup3(null.as_raw_fd(), fd, libc::O_CLOEXEC) };
    }
}

/// Wakes the collector from a signal handler: async-signal-safe (atomics, `pwrite` and
/// `futex` only). A word unmapped meanwhile makes FUTEX_WAKE fail with EFAULT, nothing more.
pub fn ring_from_signal() {
    SIGNALLED.store(true, Ordering::Release);
    let (fd, word) = (
        SIGNAL_FD.load(Ordering::Acquire),
        SIGNAL_WORD.load(Ordering::Acquire),
    );
    if fd < 0 || word.is_null() {
        return;
    }
    let awake = COLLECTOR_AWAKE.to_ne_bytes();
    // SAFETY: a 4-byte write from a live buffer; FUTEX_WAKE only uses the address as a key.
    unsafe {
        libc::pwrite(fd, awake.as_ptr().cast(), awake.len(), 0);
        libc::syscall(libc::SYS_futex, word, libc::FUTEX_WAKE, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// What a producer does: the SDK's `wake_collector`, through its own mapping.
    fn wake_as_producer(dir: &Path) {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(dir.join(wire::WAKE_FILE))
            .unwrap();
        // SAFETY: a shared read-write mapping of the word, used as an atomic and unmapped.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                wire::WAKE_FILE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            let word = &*(map as *const AtomicU32);
            // Spin until the collector says it sleeps, then wake it.
            while word.load(Ordering::Acquire) != COLLECTOR_ASLEEP {
                std::hint::spin_loop();
            }
            word.store(COLLECTOR_AWAKE, Ordering::Release);
            libc::syscall(libc::SYS_futex, map, libc::FUTEX_WAKE, 1);
            libc::munmap(map, wire::WAKE_FILE_BYTES);
        }
    }

    #[test]
    fn a_producer_wakes_the_sleeper_and_nobody_means_the_time_runs_out() {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        // The word starts awake: the producer waits for the wait's "asleep".
        let path = dir.path().to_owned();
        let producer = std::thread::spawn(move || wake_as_producer(&path));
        // Far longer than any test may take: only the producer can end it in time.
        assert_eq!(word.wait(Duration::from_secs(120), || false), Waited::Woken);
        producer.join().unwrap();
        assert_eq!(
            word.wait(Duration::from_millis(1), || false),
            Waited::TimedOut
        );
        assert!(word.usable());
    }

    #[test]
    fn a_ring_while_the_collector_ran_after_a_timeout_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        assert_eq!(
            word.wait(Duration::from_millis(1), || false),
            Waited::TimedOut
        );
        // The word still says asleep: a producer rings it while nobody sleeps on it.
        wake_as_producer(dir.path());
        // Taken without sleeping: a sleep would last the whole 2 s, nobody else rings.
        assert_eq!(word.wait(Duration::from_secs(2), || false), Waited::Woken);
        assert_eq!(
            word.wait(Duration::from_millis(1), || false),
            Waited::TimedOut
        );
    }

    /// Spins until the collector's wait says it sleeps.
    fn until_asleep(dir: &Path) {
        let path = dir.join(wire::WAKE_FILE);
        while std::fs::read(&path).unwrap()[..4] != COLLECTOR_ASLEEP.to_ne_bytes() {
            std::thread::yield_now();
        }
    }

    /// What the signal handlers do wakes a sleeping collector; one that came while it ran
    /// is taken by its next wait; a real child's exit rings it through `launch`'s handler.
    /// (The only test that registers a word for signals: the registration is global.)
    #[test]
    fn signals_wake_the_collector_whether_it_sleeps_or_runs() {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        word.ring_on_signals();
        let path = dir.path().to_owned();
        let ringer = std::thread::spawn(move || {
            until_asleep(&path);
            ring_from_signal();
        });
        // Far longer than any test may take: only the ring can end it in time. It rang
        // the futex, or came between the word's "asleep" and the sleep.
        let waited = word.wait(Duration::from_secs(120), || false);
        assert!(
            matches!(waited, Waited::Woken | Waited::Interrupted),
            "{waited:?}"
        );
        ringer.join().unwrap();
        // Rung while nobody slept (the word said awake): the next wait does not sleep.
        ring_from_signal();
        assert_eq!(
            word.wait(Duration::from_secs(120), || false),
            Waited::Interrupted
        );
        // A child's exit, through the SIGCHLD handler.
        crate::session::launch::catch_child_exits();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let waited = word.wait(Duration::from_secs(120), || false);
        // The handler ran on another thread (rang the word) or on this one (ended the wait).
        assert!(
            matches!(waited, Waited::Woken | Waited::Interrupted),
            "{waited:?}"
        );
        child.wait().unwrap();
        drop(word);
        // Unregistered: a ring now writes /dev/null and wakes nothing.
        ring_from_signal();
        assert!(SIGNAL_WORD.load(Ordering::Acquire).is_null());
        // The held number, pointed at /dev/null and at the next run's word, is never
        // inherited by the commands framelab runs.
        let close_on_exec = || {
            // SAFETY: F_GETFD on a number this test holds open.
            let flags = unsafe { libc::fcntl(SIGNAL_FD.load(Ordering::Acquire), libc::F_GETFD) };
            flags >= 0 && flags & libc::FD_CLOEXEC != 0
        };
        assert!(close_on_exec());
        let mut next_run = WakeWord::open(dir.path()).unwrap();
        next_run.ring_on_signals();
        assert!(close_on_exec());
    }

    #[test]
    fn a_truncated_word_is_given_up_without_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        make(dir.path(), 0o600, (None, None)).unwrap();
        let mut word = WakeWord::open(dir.path()).unwrap();
        File::options()
            .write(true)
            .open(dir.path().join(wire::WAKE_FILE))
            .unwrap()
            .set_len(0)
            .unwrap();
        // The pwrite grows the file again, or the wait faults in the kernel: never SIGBUS.
        let waited = word.wait(Duration::from_millis(1), || false);
        assert!(matches!(waited, Waited::TimedOut | Waited::Unusable));
    }
}
