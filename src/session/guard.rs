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
//! A run's cgroup (see `rungroup`) is registered too, by its path: once the process groups
//! had their grace period, every process in it is killed (`cgroup.kill` on v2; freeze,
//! SIGKILL each member, thaw on v1), daemons that left their process group included, and the
//! directory is removed.
//!
//! ```text
//! guard::start(grace)?;            // once per framelab, before any group exists
//! guard::register_group(pgid);     // right after starting a process group
//! guard::unregister_group(pgid);   // once framelab stopped and reaped it itself
//! let id = guard::register_cgroup(dir, CgroupKind::KillV2)?; // before its first process
//! guard::unregister_cgroup(id);    // once framelab emptied and removed it itself
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
/// A cgroup's path comes in pieces: begin (id and kind), 4 bytes at a time, end.
const OP_CGROUP_BEGIN: i32 = 4;
const OP_CGROUP_BYTES: i32 = 5;
const OP_CGROUP_END: i32 = 6;
const OP_CGROUP_FORGET: i32 = 7;

/// The most cgroups one guardian looks after, and the longest path it keeps.
const MAX_CGROUPS: usize = 16;
pub const MAX_CGROUP_PATH: usize = 480;

/// What the guardian does with a registered cgroup when framelab is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupKind {
    /// cgroup v2: `cgroup.kill`, then remove it.
    KillV2 = 0,
    /// cgroup v1 freezer: freeze, SIGKILL each member, thaw, then remove it.
    FreezeV1 = 1,
    /// Only remove it once empty (the cpuacct twin of a v1 freezer group).
    RemoveOnly = 2,
}

struct Guard {
    /// The write end: framelab's only copy. Closing it (exiting) releases the guardian.
    pipe: OwnedFd,
    /// The guardian's pid, as the intermediate child reported it (0 if it could not).
    pid: u32,
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
    // The intermediate child tells the guardian's pid through this: where framelab is the
    // reaper of orphans (a subreaper, or init of a pid namespace) the guardian becomes its
    // child, and the end of a run must not take it for a leftover of the run.
    let mut pid_fds = [-1; 2];
    // SAFETY: valid out-array. A failure leaves -1s: the pid is then unknown (0).
    unsafe { libc::pipe2(pid_fds.as_mut_ptr(), libc::O_CLOEXEC) };
    let grace_ms = grace_ms(grace);
    // SAFETY: the children run only async-signal-safe system calls (see `guardian`).
    let first = unsafe { libc::fork() };
    if first < 0 {
        let e = std::io::Error::last_os_error();
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
            libc::close(pid_fds[0]);
            libc::close(pid_fds[1]);
        }
        bail!("cannot start framelab's guardian process (fork: {e})");
    }
    if first == 0 {
        // The intermediate child: fork the guardian and exit, so the guardian is nobody's
        // child in framelab's tree (never reaped or accounted as part of the run).
        unsafe {
            libc::close(write_end);
            libc::close(pid_fds[0]);
            let pid = libc::fork();
            if pid == 0 {
                libc::close(pid_fds[1]);
                guardian(read_end, grace_ms);
            }
            let bytes = pid.to_ne_bytes();
            libc::write(pid_fds[1], bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
    }
    // SAFETY: reaping the intermediate child, which exits at once, then reading what it
    // wrote (its write end closed with it: the read ends).
    let mut pid_bytes = [0u8; 4];
    unsafe {
        libc::close(read_end);
        libc::close(pid_fds[1]);
        let mut status = 0;
        while libc::waitpid(first, &mut status, 0) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        if libc::read(pid_fds[0], pid_bytes.as_mut_ptr().cast(), 4) != 4 {
            pid_bytes = [0; 4];
        }
        libc::close(pid_fds[0]);
    }
    // SAFETY: we own write_end from here on.
    let pipe = unsafe { OwnedFd::from_raw_fd(write_end) };
    let pid = u32::try_from(i32::from_ne_bytes(pid_bytes)).unwrap_or(0);
    *guard = Some(Guard { pipe, pid });
    Ok(())
}

/// Whether `pid` is not framelab's guardian: where framelab reaps orphans (init of a pid
/// namespace), the guardian is its child, and no walk of the run's tree may take it in.
pub fn not_guardian(pid: &u32) -> bool {
    let guard = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().is_none_or(|g| g.pid != *pid)
}

/// From now on, `pgid` is killed if framelab dies before unregistering it.
pub fn register_group(pgid: u32) {
    with_guard(|g| send(g, OP_REGISTER, pgid as i32));
}

/// framelab stopped `pgid` itself: the guardian forgets it (its id may be reused).
pub fn unregister_group(pgid: u32) {
    with_guard(|g| send(g, OP_UNREGISTER, pgid as i32));
}

/// From now on, every process in the cgroup at `dir` is killed and the cgroup removed if
/// framelab dies before unregistering it. `None` when no guardian runs or the path is too long
/// for it (then it is not looked after).
pub fn register_cgroup(dir: &std::path::Path, kind: CgroupKind) -> Option<u32> {
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT_ID: AtomicU32 = AtomicU32::new(1);
    let path = dir.as_os_str().as_bytes();
    if path.len() > MAX_CGROUP_PATH || path.contains(&0) {
        return None;
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
    let guard = GUARD.lock().unwrap_or_else(|e| e.into_inner());
    let g = guard.as_ref()?;
    // All pieces under the one lock: no other message comes between them.
    send(g, OP_CGROUP_BEGIN, ((id << 2) | kind as u32) as i32);
    for piece in path.chunks(4) {
        let mut word = [0u8; 4];
        word[..piece.len()].copy_from_slice(piece);
        send(g, OP_CGROUP_BYTES, i32::from_ne_bytes(word));
    }
    send(g, OP_CGROUP_END, id as i32);
    Some(id)
}

/// framelab emptied and removed the cgroup itself: the guardian forgets it.
pub fn unregister_cgroup(id: u32) {
    with_guard(|g| send(g, OP_CGROUP_FORGET, id as i32));
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
    let mut cgroups = [Cgroup::EMPTY; MAX_CGROUPS];
    // The slot whose path is coming in, if any.
    let mut filling: Option<usize> = None;
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
            OP_CGROUP_BEGIN => {
                filling = cgroups.iter().position(|c| c.id == 0);
                if let Some(slot) = filling {
                    cgroups[slot] = Cgroup {
                        id: (value as u32 >> 2) as i32,
                        kind: value & 3,
                        len: 0,
                        path: [0; MAX_CGROUP_PATH + 1],
                        complete: false,
                    };
                }
            }
            OP_CGROUP_BYTES => {
                if let Some(slot) = filling {
                    let c = &mut cgroups[slot];
                    for b in value.to_ne_bytes() {
                        if b != 0 && c.len < MAX_CGROUP_PATH {
                            c.path[c.len] = b;
                            c.len += 1;
                        }
                    }
                }
            }
            OP_CGROUP_END => {
                if let Some(slot) = filling.take() {
                    cgroups[slot].complete = true;
                }
            }
            OP_CGROUP_FORGET => {
                for c in cgroups.iter_mut().filter(|c| c.id == value) {
                    c.id = 0;
                }
            }
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
    empty_cgroups(&cgroups);
    libc::_exit(0)
}

/// A registered cgroup, held without allocating.
#[derive(Clone, Copy)]
struct Cgroup {
    /// 0: a free slot.
    id: i32,
    kind: i32,
    len: usize,
    /// The path, NUL-terminated room included.
    path: [u8; MAX_CGROUP_PATH + 1],
    complete: bool,
}

impl Cgroup {
    const EMPTY: Cgroup = Cgroup {
        id: 0,
        kind: 0,
        len: 0,
        path: [0; MAX_CGROUP_PATH + 1],
        complete: false,
    };

    /// `<path>/<file>` NUL-terminated in `buf`.
    fn file<'a>(&self, file: &[u8], buf: &'a mut [u8; MAX_CGROUP_PATH + 64]) -> &'a [u8] {
        let mut n = 0;
        for &b in self.path[..self.len].iter().chain(b"/").chain(file) {
            if n + 1 < buf.len() {
                buf[n] = b;
                n += 1;
            }
        }
        buf[n] = 0;
        &buf[..=n]
    }
}

/// Kills every process of each registered cgroup, waits (up to 2 s) until they are gone and
/// removes the cgroups. Only system calls.
unsafe fn empty_cgroups(cgroups: &[Cgroup; MAX_CGROUPS]) {
    let live = |c: &&Cgroup| c.id != 0 && c.complete;
    for c in cgroups.iter().filter(live) {
        let mut buf = [0u8; MAX_CGROUP_PATH + 64];
        match c.kind {
            0 if !write_to(c.file(b"cgroup.kill", &mut buf), b"1") => kill_members(c),
            1 => {
                let frozen = write_to(c.file(b"freezer.state", &mut buf), b"FROZEN");
                if frozen {
                    // Until the freezer says FROZEN (or 1 s): no member forks meanwhile.
                    for _ in 0..500 {
                        let mut state = [0u8; 16];
                        let n = read_from(c.file(b"freezer.state", &mut buf), &mut state);
                        if n >= 6 && &state[..6] == b"FROZEN" {
                            break;
                        }
                        pause_ms(2);
                    }
                }
                kill_members(c);
                write_to(c.file(b"freezer.state", &mut buf), b"THAWED");
            }
            _ => {}
        }
    }
    for c in cgroups.iter().filter(live) {
        let mut buf = [0u8; MAX_CGROUP_PATH + 64];
        for _ in 0..400 {
            let empty = if c.kind == 0 {
                // v2: `populated 0` once no process is left in it or below it.
                let mut events = [0u8; 128];
                let n = read_from(c.file(b"cgroup.events", &mut buf), &mut events);
                n <= 0
                    || events[..n as usize]
                        .windows(11)
                        .any(|w| w == b"populated 0")
            } else {
                let mut first = [0u8; 1];
                read_from(c.file(b"cgroup.procs", &mut buf), &mut first) <= 0
            };
            if empty {
                break;
            }
            if c.kind != 2 {
                kill_members(c);
            }
            pause_ms(5);
        }
        let mut dir = [0u8; TREE_PATH];
        dir[..c.len].copy_from_slice(&c.path[..c.len]);
        for _ in 0..100 {
            if remove_tree(&mut dir, c.len, 0) {
                break;
            }
            pause_ms(5);
        }
    }
}

/// Room for the path of a cgroup a process of the run made below the run's.
const TREE_PATH: usize = 4096;

/// Removes the cgroup at `path[..len]` and the ones a process of the run made below it
/// (deepest first, at most 8 levels): whether it is gone. Only system calls.
unsafe fn remove_tree(path: &mut [u8; TREE_PATH], len: usize, depth: u32) -> bool {
    path[len] = 0;
    let fd = libc::open(
        path.as_ptr().cast(),
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    if fd >= 0 && depth < 8 {
        let mut entries = [0u8; 2048];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                fd,
                entries.as_mut_ptr(),
                entries.len(),
            );
            if n <= 0 {
                break;
            }
            // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
            let mut at = 0usize;
            while at + 19 < n as usize {
                let reclen = u16::from_ne_bytes([entries[at + 16], entries[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &entries[at + 19..(at + reclen).min(n as usize)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                let is_dir = entries[at + 18] == libc::DT_DIR;
                if is_dir && name != b"." && name != b".." && len + 1 + name.len() < TREE_PATH {
                    path[len] = b'/';
                    path[len + 1..len + 1 + name.len()].copy_from_slice(name);
                    remove_tree(path, len + 1 + name.len(), depth + 1);
                    path[len] = 0;
                }
                at += reclen;
            }
        }
    }
    if fd >= 0 {
        libc::close(fd);
    }
    path[len] = 0;
    libc::rmdir(path.as_ptr().cast()) == 0 || *libc::__errno_location() == libc::ENOENT
}

/// SIGKILLs each pid listed in the cgroup's `cgroup.procs`.
unsafe fn kill_members(c: &Cgroup) {
    let mut buf = [0u8; MAX_CGROUP_PATH + 64];
    let fd = libc::open(
        c.file(b"cgroup.procs", &mut buf).as_ptr().cast(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return;
    }
    let mut chunk = [0u8; 4096];
    let mut pid: i32 = 0;
    loop {
        let n = libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len());
        if n <= 0 {
            break;
        }
        for &b in &chunk[..n as usize] {
            if b.is_ascii_digit() {
                pid = pid.saturating_mul(10).saturating_add((b - b'0') as i32);
            } else {
                if pid > 1 {
                    libc::kill(pid, libc::SIGKILL);
                }
                pid = 0;
            }
        }
    }
    if pid > 1 {
        libc::kill(pid, libc::SIGKILL);
    }
    libc::close(fd);
}

unsafe fn write_to(path: &[u8], text: &[u8]) -> bool {
    let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return false;
    }
    let ok = libc::write(fd, text.as_ptr().cast(), text.len()) == text.len() as isize;
    libc::close(fd);
    ok
}

/// Reads the start of a file into `out`: the bytes read, or -1.
unsafe fn read_from(path: &[u8], out: &mut [u8]) -> isize {
    let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return -1;
    }
    let n = libc::read(fd, out.as_mut_ptr().cast(), out.len());
    libc::close(fd);
    n
}

unsafe fn pause_ms(ms: i64) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    libc::nanosleep(&pause, std::ptr::null_mut());
}
