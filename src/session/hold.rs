//! Holding the command between fork and exec while something is set up on its pid: the
//! profiler's events, so that they are inherited by every thread and child the command
//! makes from its first instruction on. `Command::spawn` returns only once the child has
//! exec'd, so the setup runs on a thread of its own: the child writes its pid to one pipe
//! and waits for a byte (or end of file) on another, in `pre_exec`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;

/// The child's ends, used in `pre_exec` (only async-signal-safe calls there).
#[derive(Clone, Copy, Debug)]
pub struct ChildEnds {
    pid_w: RawFd,
    go_r: RawFd,
    /// The parent's ends, closed in the child so that end of file can be seen.
    parent: [RawFd; 2],
}

impl ChildEnds {
    /// Called in the forked child before exec: says its pid, waits to be let go.
    /// Failures are ignored: at worst the command runs unprofiled.
    pub fn wait_in_child(&self) {
        // SAFETY: close, getpid, write and read are async-signal-safe.
        unsafe {
            for fd in self.parent {
                libc::close(fd);
            }
            let pid = libc::getpid() as u32;
            let bytes = pid.to_ne_bytes();
            libc::write(self.pid_w, bytes.as_ptr().cast(), 4);
            libc::close(self.pid_w);
            let mut go = 0u8;
            while libc::read(self.go_r, (&mut go as *mut u8).cast(), 1) < 0
                && *libc::__errno_location() == libc::EINTR
            {}
            libc::close(self.go_r);
        }
    }
}

pub struct Hold<T> {
    child: ChildEnds,
    // The parent's copies of the child's ends, closed once the child exists.
    child_fds: Option<(OwnedFd, OwnedFd)>,
    setup: JoinHandle<Option<T>>,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl<T: Send + 'static> Hold<T> {
    /// Runs `setup(pid)` once the child says its pid, then lets it exec.
    pub fn new(setup: impl FnOnce(u32) -> T + Send + 'static) -> std::io::Result<Hold<T>> {
        let (pid_r, pid_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        let child = ChildEnds {
            pid_w: pid_w.as_raw_fd(),
            go_r: go_r.as_raw_fd(),
            parent: [pid_r.as_raw_fd(), go_w.as_raw_fd()],
        };
        let setup = std::thread::Builder::new()
            .name("framelab-hold".into())
            .spawn(move || {
                let mut file = std::fs::File::from(pid_r);
                let mut bytes = [0u8; 4];
                use std::io::{Read, Write};
                // End of file: the child failed before exec (or was never forked).
                let got = file
                    .read_exact(&mut bytes)
                    .ok()
                    .map(|()| setup(u32::from_ne_bytes(bytes)));
                let _ = std::fs::File::from(go_w).write_all(&[1]);
                got
            })?;
        Ok(Hold {
            child,
            child_fds: Some((pid_w, go_r)),
            setup,
        })
    }

    pub fn child_ends(&self) -> ChildEnds {
        self.child
    }

    /// After spawning (whether it worked or not): what the setup made, if the child got
    /// as far as saying its pid.
    pub fn finish(mut self) -> Option<T> {
        // Now only the child holds its ends: its exit or exec is an end of file.
        self.child_fds = None;
        self.setup.join().ok().flatten()
    }
}
