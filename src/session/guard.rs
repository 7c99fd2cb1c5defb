//! A guardian process that cleans up after framelab even when framelab is killed with -9.
//!
//! `PR_SET_PDEATHSIG` reaches only framelab's direct child; a shell's background jobs, a
//! service's workers or a load generator's children would live on. The guardian is forked
//! once, detached from framelab (its own session, not framelab's child), and holds the
//! read end of a pipe whose write end only framelab holds. framelab tells it through the
//! pipe which process groups to look after. When the pipe reaches end-of-file — framelab
//! exited, however it exited — the guardian sends SIGTERM to every group still registered,
//! SIGKILL to what is left after the grace period, and exits.
//!
//! ```text
//! guard::start(grace)?;            // once per framelab, before any group exists
//! guard::register_group(pgid);     // right after starting a process group
//! guard::unregister_group(pgid);   // once framelab stopped and reaped it itself
//! ```
//!
//! Everything the guardian runs after the fork is a plain system call: it never allocates,
//! so it is safe however many threads framelab had when it forked.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Result};

/// The most groups one guardian looks after (framelab runs a command and a few services).
const MAX_GROUPS: usize = 256;

const OP_REGISTER: i32 = 1;
const OP_UNREGISTER: i32 = 2;
const OP_GRACE_MS: i32 = 3;

struct Guard {
    /// The write end: framelab's only copy. Closing it (exiting) releases the guardian.
    pipe: OwnedFd,
}

static GUARD: Mutex<Option<Guard>> = Mutex::new(None);

/// Starts the guardian if it is not running yet, with `grace` between SIGTERM and SIGKILL.
pub fn start(grace: Duration) -> Result<()> {
    let mut guard = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(g) = guard.as_ref() {
        send(g, OP_GRACE_MS, grace_ms(grace));
        return Ok(());
    }
    let mut fds = [0; 2];
    // SAFETY: valid out-array; close-on-exec so no command inherits the write end.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!(
            "cannot start framelab's guardian process (pipe: {})",
            std::io::Error::last_os_error()
        );
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    let grace_ms = grace_ms(grace);
    // SAFETY: the children run only async-signal-safe system calls (see `guardian`).
    let first = unsafe { libc::fork() };
    if first < 0 {
        let e = std::io::Error::last_os_error();
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        bail!("cannot start framelab's guardian process (fork: {e})");
    }
    if first == 0 {
        // The intermediate child: fork the guardian and exit, so the guardian is nobody's
        // child in framelab's tree (never reaped or accounted as part of the run).
        unsafe {
            libc::close(write_end);
            if libc::fork() == 0 {
                guardian(read_end, grace_ms);
            }
            libc::_exit(0);
        }
    }
    // SAFETY: reaping the intermediate child, which exits at once.
    unsafe {
        libc::close(read_end);
        let mut status = 0;
        while libc::waitpid(first, &mut status, 0) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
    // SAFETY: we own write_end from here on.
    let pipe = unsafe { OwnedFd::from_raw_fd(write_end) };
    *guard = Some(Guard { pipe });
    Ok(())
}

/// From now on, `pgid` is killed if framelab dies before unregistering it.
pub fn register_group(pgid: u32) {
    with_guard(|g| send(g, OP_REGISTER, pgid as i32));
}

/// framelab stopped `pgid` itself: the guardian forgets it (its id may be reused).
pub fn unregister_group(pgid: u32) {
    with_guard(|g| send(g, OP_UNREGISTER, pgid as i32));
}

fn with_guard(f: impl FnOnce(&Guard)) {
    let guard = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(g) = guard.as_ref() {
        f(g);
    }
}

fn grace_ms(grace: Duration) -> i32 {
    grace.as_millis().min(i32::MAX as u128) as i32
}

/// One message: 8 bytes, written whole (a pipe write under PIPE_BUF is atomic).
fn send(guard: &Guard, op: i32, value: i32) {
    use std::os::fd::AsRawFd;
    let mut message = [0u8; 8];
    message[..4].copy_from_slice(&op.to_ne_bytes());
    message[4..].copy_from_slice(&value.to_ne_bytes());
    loop {
        // SAFETY: writing our buffer to our pipe.
        let n = unsafe { libc::write(guard.pipe.as_raw_fd(), message.as_ptr().cast(), 8) };
        if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// The guardian's whole life. Only system calls from here: no allocation, no locks.
unsafe fn guardian(pipe: libc::c_int, mut grace_ms: i32) -> ! {
    // Its own session: a terminal's Ctrl-C or hang-up aimed at framelab's job misses it.
    libc::setsid();
    libc::prctl(libc::PR_SET_NAME, c"framelab-guard".as_ptr(), 0, 0, 0);
    for signal in [libc::SIGINT, libc::SIGHUP, libc::SIGPIPE, libc::SIGQUIT] {
        libc::signal(signal, libc::SIG_IGN);
    }
    // Hold nothing of framelab's: not its terminal, not the pipes a caller waits on for
    // framelab's output to end, not the run file.
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    for fd in 0..3 {
        if null >= 0 && null != fd {
            libc::dup2(null, fd);
        }
    }
    let keep = [pipe, 0, 1, 2];
    let limit = match libc::sysconf(libc::_SC_OPEN_MAX) {
        n if n > 0 => n.min(65_536) as libc::c_int,
        _ => 1024,
    };
    for fd in 3..limit {
        if !keep.contains(&fd) {
            libc::close(fd);
        }
    }

    let mut groups = [0i32; MAX_GROUPS];
    let mut message = [0u8; 8];
    loop {
        let n = libc::read(pipe, message.as_mut_ptr().cast(), 8);
        if n < 0 && *libc::__errno_location() == libc::EINTR {
            continue;
        }
        if n != 8 {
            break; // end of file: framelab is gone
        }
        let op = i32::from_ne_bytes([message[0], message[1], message[2], message[3]]);
        let value = i32::from_ne_bytes([message[4], message[5], message[6], message[7]]);
        match op {
            OP_REGISTER if value > 1 => {
                if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                    *slot = value;
                }
            }
            OP_UNREGISTER => {
                for g in groups.iter_mut().filter(|g| **g == value) {
                    *g = 0;
                }
            }
            OP_GRACE_MS => grace_ms = value.max(0),
            _ => {}
        }
    }
    for &g in groups.iter().filter(|&&g| g > 1) {
        libc::kill(-g, libc::SIGTERM);
    }
    // Until every group is empty, or the grace period is over.
    let step_ms = 10;
    let mut waited = 0;
    while waited < grace_ms && groups.iter().any(|&g| g > 1 && libc::kill(-g, 0) == 0) {
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: step_ms * 1_000_000,
        };
        libc::nanosleep(&pause, std::ptr::null_mut());
        waited += step_ms as i32;
    }
    for &g in groups.iter().filter(|&&g| g > 1) {
        libc::kill(-g, libc::SIGKILL);
    }
    libc::_exit(0)
}
