//! Joining the session: reading the environment once, creating this thread's ring on its
//! first record, and publishing interned names. Everything here is off the hot path.

use std::cell::Cell;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU8, Ordering::*};
use std::sync::OnceLock;

use crate::sys;
use crate::wire::*;

pub(crate) const MODE_UNKNOWN: u8 = 0;
pub(crate) const MODE_OFF: u8 = 1;
pub(crate) const MODE_ON: u8 = 2;

/// Whether a session is active. The disabled fast path is one relaxed load of this.
pub(crate) static MODE: AtomicU8 = AtomicU8::new(MODE_UNKNOWN);

struct Config {
    dir: PathBuf,
    ring_records: u64,
    /// Permissions of the files this process makes in the session: private (0600), or
    /// 0660 in a directory shared with a group.
    file_mode: u32,
}

static CONFIG: OnceLock<Option<Config>> = OnceLock::new();

/// The session's wakeup word (`wire::WAKE_FILE`), mapped once per process; null without
/// one (a framelab from before it) or where this build cannot wake (`sys::CAN_WAKE`).
/// Inherited by a forked child: the same word of the same session.
static WAKE_WORD: AtomicPtr<AtomicU32> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    /// This thread's ring, or null before its first record.
    pub(crate) static RING: Cell<*mut RingHeader> = const { Cell::new(std::ptr::null_mut()) };
    /// Set once this thread cannot record (its ring could not be made, or it is exiting), so
    /// later calls return at once instead of retrying system calls on every record.
    static GAVE_UP: Cell<bool> = const { Cell::new(false) };
    /// Owns the mapping; closes the ring when the thread exits.
    static OWNER: RingOwner = const { RingOwner { ring: Cell::new(std::ptr::null_mut()), bytes: Cell::new(0) } };
}

struct RingOwner {
    ring: Cell<*mut RingHeader>,
    bytes: Cell<usize>,
}

impl Drop for RingOwner {
    fn drop(&mut self) {
        let ring = self.ring.replace(std::ptr::null_mut());
        if ring.is_null() {
            return;
        }
        // Records made by later thread-local destructors are not recorded (no new ring file).
        GAVE_UP.set(true);
        let _ = RING.try_with(|r| r.set(std::ptr::null_mut()));
        // SAFETY: the mapping is ours and no guard outlives the thread.
        unsafe {
            (*ring).closed.store(1, Release);
            sys::munmap(ring.cast(), self.bytes.get());
        }
    }
}

fn config() -> Option<&'static Config> {
    CONFIG
        .get_or_init(|| {
            // With or without a session: interning takes the names lock either way, and a
            // fork while another thread holds it must not leave the child's copy locked.
            // SAFETY: the handlers only touch this crate's own state.
            unsafe {
                sys::pthread_atfork(Some(lock_names), Some(unlock_names), Some(after_fork_child))
            };
            let dir = PathBuf::from(std::env::var_os(SESSION_ENV)?);
            let dir_mode = std::fs::metadata(&dir)
                .ok()
                .filter(|m| m.is_dir())?
                .permissions()
                .mode();
            // A session left behind by a framelab that is gone: record nothing, leave no rings.
            if !session_is_live(&dir) {
                return None;
            }
            let file_mode = if dir_mode & 0o070 != 0 { 0o660 } else { 0o600 };
            let clock = match std::env::var(CLOCK_ENV).as_deref() {
                Ok("mono") => CLOCK_MONO,
                _ => CLOCK_TSC,
            };
            crate::clock::select(clock);
            map_wake_word(&dir);
            let ring_records = std::env::var(RING_RECORDS_ENV)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(DEFAULT_RING_RECORDS)
                .clamp(MIN_RING_RECORDS, MAX_RING_RECORDS)
                .next_power_of_two();
            Some(Config {
                dir,
                ring_records,
                file_mode,
            })
        })
        .as_ref()
}

/// Maps the session's wakeup word, when there is one and this build can wake.
fn map_wake_word(dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    if !sys::CAN_WAKE {
        return;
    }
    let Ok(path) = std::ffi::CString::new(dir.join(WAKE_FILE).as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: plain calls on a descriptor we own; the mapping is checked before use.
    unsafe {
        let fd = sys::open(path.as_ptr(), sys::O_RDWR | sys::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let map = sys::mmap(
            std::ptr::null_mut(),
            WAKE_FILE_BYTES,
            sys::PROT_READ | sys::PROT_WRITE,
            sys::MAP_SHARED,
            fd,
            0,
        );
        sys::close(fd);
        if map != sys::MAP_FAILED {
            WAKE_WORD.store(map.cast(), Release);
        }
    }
}

/// Wakes the collector if it sleeps on the session's wakeup word: one relaxed load when it
/// does not, one compare-and-swap and one system call (the first producer to see it) when
/// it does. Called only when a ring is found a quarter full or more.
#[cold]
pub(crate) fn wake_collector() {
    let word = WAKE_WORD.load(Acquire);
    if word.is_null() {
        return;
    }
    // SAFETY: a live shared mapping of the wakeup word, never unmapped.
    let w = unsafe { &*word };
    if w.load(Relaxed) == COLLECTOR_ASLEEP
        && w.compare_exchange(COLLECTOR_ASLEEP, COLLECTOR_AWAKE, AcqRel, Relaxed)
            .is_ok()
    {
        sys::futex_wake(word);
    }
}

/// Decides the mode on first use. Returns whether recording is on.
#[cold]
pub(crate) fn resolve_mode() -> bool {
    let on = config().is_some();
    MODE.store(if on { MODE_ON } else { MODE_OFF }, Relaxed);
    on
}

/// Creates this thread's ring. Returns null when the session is gone or the thread is exiting.
#[cold]
#[inline(never)]
pub(crate) fn attach_thread() -> *mut RingHeader {
    if MODE.load(Relaxed) == MODE_UNKNOWN && !resolve_mode() {
        return std::ptr::null_mut();
    }
    let Some(cfg) = config() else {
        return std::ptr::null_mut();
    };
    // A thread whose destructors already ran cannot own a ring: do not make a file for it.
    if GAVE_UP.get() || OWNER.try_with(|_| ()).is_err() {
        GAVE_UP.set(true);
        return std::ptr::null_mut();
    }
    publish_names_after_fork();
    let ring = match create_ring(cfg) {
        Some(ring) => ring,
        None => {
            GAVE_UP.set(true);
            return std::ptr::null_mut();
        }
    };
    let owned = OWNER.try_with(|o| {
        o.ring.set(ring);
        o.bytes.set(ring_file_bytes(cfg.ring_records));
    });
    if owned.is_err() {
        GAVE_UP.set(true);
        // The thread is tearing down: give the ring back rather than leak it.
        unsafe {
            (*ring).closed.store(1, Release);
            sys::munmap(ring.cast(), ring_file_bytes(cfg.ring_records));
        }
        return std::ptr::null_mut();
    }
    let _ = RING.try_with(|r| r.set(ring));
    ring
}

/// Whether a collector holds the session's lock (`wire::LOCK_FILE`). A directory without
/// one was made by a framelab from before the lock: taken as live.
fn session_is_live(dir: &Path) -> bool {
    let lock = match std::fs::File::open(dir.join(LOCK_FILE)) {
        Ok(lock) => lock,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
        Err(_) => return false,
    };
    // SAFETY: flock on a descriptor we own; a shared lock only conflicts with the collector's.
    unsafe {
        if sys::flock(lock.as_raw_fd(), sys::LOCK_SH | sys::LOCK_NB) == 0 {
            sys::flock(lock.as_raw_fd(), sys::LOCK_UN);
            return false;
        }
    }
    std::io::Error::last_os_error().raw_os_error() == Some(sys::EWOULDBLOCK)
}

fn create_ring(cfg: &Config) -> Option<*mut RingHeader> {
    // SAFETY: plain libc calls.
    let (pid, tid) = unsafe { (sys::getpid() as u32, sys::gettid() as u32) };
    create_ring_as(cfg, pid, tid, thread_name(pid, tid))
}

/// A ring of its own for a named queue (`crate::Queue`): the header carries `tid` (a pseudo
/// tid, `wire::QUEUE_TID_BASE` and up) and the queue's name. With its size in bytes; `None`
/// when there is no live session or the ring cannot be made (then said as for a thread).
#[cold]
pub(crate) fn create_queue_ring(tid: u32, name: [u8; 32]) -> Option<(*mut RingHeader, usize)> {
    if MODE.load(Relaxed) == MODE_UNKNOWN && !resolve_mode() {
        return None;
    }
    let cfg = config()?;
    publish_names_after_fork();
    // SAFETY: a plain libc call.
    let pid = unsafe { sys::getpid() as u32 };
    let ring = create_ring_as(cfg, pid, tid, name)?;
    Some((ring, ring_file_bytes(cfg.ring_records)))
}

fn create_ring_as(cfg: &Config, pid: u32, tid: u32, name: [u8; 32]) -> Option<*mut RingHeader> {
    let bytes = ring_file_bytes(cfg.ring_records);
    let (file, path) = match create_ring_file(cfg, pid, tid) {
        Ok(created) => created,
        Err(errno) => {
            mark_unrecorded(cfg, errno, pid, tid);
            return None;
        }
    };
    let give_up = |errno: i32| {
        // Leave no ring behind for the collector to trip over, but say why there is none.
        let _ = std::fs::remove_file(&path);
        mark_unrecorded(cfg, errno, pid, tid);
    };
    // Every page is given memory now. A sparse file would fault on the first record written
    // to a page shared memory has no room for, and SIGBUS would kill the program.
    // SAFETY: plain call on our descriptor; it returns the error number itself.
    let reserved = match unsafe { sys::posix_fallocate(file.as_raw_fd(), 0, bytes as i64) } {
        0 => Ok(()),
        // A file system without fallocate (not tmpfs): sized as before.
        sys::EOPNOTSUPP => file
            .set_len(bytes as u64)
            .map_err(|e| e.raw_os_error().unwrap_or(0)),
        errno => Err(errno),
    };
    if let Err(errno) = reserved {
        give_up(errno);
        return None;
    }
    // SAFETY: mapping a file we just sized; checked for failure below.
    let map = unsafe {
        sys::mmap(
            std::ptr::null_mut(),
            bytes,
            sys::PROT_READ | sys::PROT_WRITE,
            sys::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if map == sys::MAP_FAILED {
        give_up(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        return None;
    }
    let ring = map.cast::<RingHeader>();
    // SAFETY: the mapping is zero-filled and large enough for the header.
    unsafe {
        (*ring).version = WIRE_VERSION;
        (*ring).clock = crate::clock::selected();
        (*ring).pid = pid;
        (*ring).tid = tid;
        (*ring).capacity = cfg.ring_records;
        (*ring).thread_name = name;
        if !WAKE_WORD.load(Relaxed).is_null() {
            (*ring).features = FEATURE_WAKES;
        }
        (*ring).magic.store(RING_MAGIC, Release);
    }
    Some(ring)
}

/// Creates `r-<pid>-<tid>`, or `r-<pid>-<tid>-<n>` when an exited thread of this process
/// had the same tid (the kernel reuses them) and its ring is still there. On failure, the
/// error number.
fn create_ring_file(cfg: &Config, pid: u32, tid: u32) -> Result<(std::fs::File, PathBuf), i32> {
    create_unique(cfg, &format!("r-{pid}-{tid}"), true)
}

/// Creates `stem`, or `stem-<n>` when taken, with the session's file permissions.
fn create_unique(cfg: &Config, stem: &str, read: bool) -> Result<(std::fs::File, PathBuf), i32> {
    let mut last_errno = 0;
    for n in 0..1000 {
        let name = match n {
            0 => stem.to_owned(),
            _ => format!("{stem}-{n}"),
        };
        let path = cfg.dir.join(name);
        match OpenOptions::new()
            .read(read)
            .write(true)
            .create_new(true)
            .mode(cfg.file_mode)
            .open(&path)
        {
            Ok(file) => {
                set_mode(&file, cfg.file_mode);
                return Ok((file, path));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                last_errno = e.raw_os_error().unwrap_or(0);
                continue;
            }
            Err(e) => return Err(e.raw_os_error().unwrap_or(0)),
        }
    }
    Err(last_errno)
}

/// The permissions asked for, whatever the program's umask: in a shared session the
/// collector (another user of the group) must be able to write the ring's tail.
fn set_mode(file: &std::fs::File, mode: u32) {
    if mode & 0o070 != 0 {
        let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
    }
}

/// Leaves `u-<errno>-<pid>-<tid>` (empty: it needs no space) so the collector can count a
/// thread that runs unrecorded and say why.
fn mark_unrecorded(cfg: &Config, errno: i32, pid: u32, tid: u32) {
    let _ = create_unique(
        cfg,
        &format!("{UNRECORDED_PREFIX}{errno}-{pid}-{tid}"),
        false,
    );
}

/// The kernel's name of the calling thread ("main" for the main thread). Not
/// `std::thread::current()`: it panics when called from a thread-local destructor, and a
/// panic here would abort a C caller.
fn thread_name(pid: u32, tid: u32) -> [u8; 32] {
    let mut out = [0u8; 32];
    if pid == tid {
        out[..4].copy_from_slice(b"main");
        return out;
    }
    // PR_GET_NAME writes at most 16 bytes, NUL-terminated.
    // SAFETY: `out` has room for 16 bytes.
    unsafe { sys::prctl(sys::PR_GET_NAME, out.as_mut_ptr()) };
    out[31] = 0;
    out
}

// ---- names -------------------------------------------------------------------------------

/// Interned names of this process, index = id - 1. Guarded by a spin lock so fork handlers
/// can hold it across `fork()` (a std Mutex guard cannot be carried between handlers).
struct Names {
    list: std::cell::UnsafeCell<Vec<(char, String)>>,
}
unsafe impl Sync for Names {}
static NAMES: Names = Names {
    list: std::cell::UnsafeCell::new(Vec::new()),
};
static NAMES_LOCK: AtomicBool = AtomicBool::new(false);
/// The pid whose names file holds every name; differs from getpid() in a forked child.
static NAMES_PID: AtomicU32 = AtomicU32::new(0);
/// Names refused because the table was full; the collector reports this.
pub(crate) static NAMES_REFUSED: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn lock_names() {
    while NAMES_LOCK
        .compare_exchange_weak(false, true, Acquire, Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
}

unsafe extern "C" fn unlock_names() {
    NAMES_LOCK.store(false, Release);
}

/// Bumped in every forked child: a queue made before the fork makes its own ring in the
/// child instead of writing into the parent's.
pub(crate) static FORK_GENERATION: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn after_fork_child() {
    unlock_names();
    FORK_GENERATION.fetch_add(1, Relaxed);
    // The parent's liveness lock is the parent's: this copy would keep it held after the
    // parent died. The child takes its own with its first names.
    let inherited = PROCESS_LOCK.swap(-1, Relaxed);
    if inherited >= 0 {
        sys::close(inherited);
    }
    // The child inherits the parent's ring mapping; it must never write into it.
    let _ = RING.try_with(|r| r.set(std::ptr::null_mut()));
    let _ = OWNER.try_with(|o| {
        let ring = o.ring.replace(std::ptr::null_mut());
        if !ring.is_null() {
            // A span guard or laps begun before the fork still point at the parent's ring.
            // Swap the child's view for zeroed private memory: a ring of capacity 0, where
            // every record is dropped, so they can never write into the parent's ring.
            sys::mmap(
                ring.cast(),
                o.bytes.get(),
                sys::PROT_READ | sys::PROT_WRITE,
                sys::MAP_PRIVATE | sys::MAP_ANONYMOUS | sys::MAP_FIXED,
                -1,
                0,
            );
        }
    });
    GAVE_UP.set(false);
}

/// Returns the id of `name` for `kind`, interning it on first use. 0 when the table is full.
pub(crate) fn intern(kind: char, name: &str) -> u16 {
    unsafe { lock_names() };
    // SAFETY: the spin lock is held.
    let list = unsafe { &mut *NAMES.list.get() };
    let id = match list.iter().position(|(k, n)| *k == kind && n == name) {
        Some(i) => i as u16 + 1,
        None if list.len() as u32 >= MAX_NAMES => {
            NAMES_REFUSED.fetch_add(1, Relaxed);
            // Id 0 tells the collector a name was refused, so the report can say so.
            if config().is_some() {
                append_names(&[(name_kind::REFUSED, name.to_owned())], 0);
            }
            0
        }
        None => {
            list.push((kind, name.to_owned()));
            let id = list.len() as u16;
            if config().is_some() {
                append_names(&list[id as usize - 1..], id);
            }
            id
        }
    };
    unsafe { unlock_names() };
    id
}

/// In a forked child, writes the inherited names to the child's own names file first.
fn publish_names_after_fork() {
    let pid = unsafe { sys::getpid() as u32 };
    if NAMES_PID.load(Relaxed) == pid {
        return;
    }
    unsafe { lock_names() };
    if NAMES_PID.load(Relaxed) != pid {
        let list = unsafe { &*NAMES.list.get() };
        append_names(list, 1);
    }
    unsafe { unlock_names() };
}

/// Appends `names` (ids from `first_id`) to this process's names file. Called with the lock held.
fn append_names(names: &[(char, String)], first_id: u16) {
    let Some(cfg) = config() else { return };
    let pid = unsafe { sys::getpid() as u32 };
    let mut text = String::new();
    let first_from_this_pid = NAMES_PID.swap(pid, Relaxed) != pid;
    if first_from_this_pid {
        // First write from this pid: the file must hold every earlier name too.
        let list = unsafe { &*NAMES.list.get() };
        for (i, (k, n)) in list.iter().enumerate() {
            if first_id == 0 || (i as u16) + 1 < first_id {
                text.push_str(&format!("{} {} {}\n", i + 1, k, sanitize(n)));
            }
        }
    }
    for (i, (k, n)) in names.iter().enumerate() {
        let id = if first_id == 0 {
            0
        } else {
            first_id as usize + i
        };
        text.push_str(&format!("{id} {k} {}\n", sanitize(n)));
    }
    let path = cfg.dir.join(format!("n-{pid}"));
    if let Ok(mut f) = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(cfg.file_mode)
        .open(path)
    {
        set_mode(&f, cfg.file_mode);
        let _ = f.write_all(text.as_bytes());
        if first_from_this_pid {
            hold_process_lock(f);
        }
    }
}

/// The descriptor holding this process's shared `flock` on its names file, or -1: the
/// collector's sign that the process lives, valid across PID namespaces (a pid is not:
/// the pid in a ring's header may name another process, or none, where the collector is).
/// Kept open for the life of the process; close-on-exec, and closed in a forked child.
static PROCESS_LOCK: AtomicI32 = AtomicI32::new(-1);

fn hold_process_lock(names_file: std::fs::File) {
    use std::os::fd::IntoRawFd;
    // SAFETY: flock on a descriptor we own; it stays open until exit or exec.
    unsafe {
        if sys::flock(names_file.as_raw_fd(), sys::LOCK_SH) != 0 {
            return;
        }
        let previous = PROCESS_LOCK.swap(names_file.into_raw_fd(), Relaxed);
        if previous >= 0 {
            sys::close(previous);
        }
    }
}

fn sanitize(name: &str) -> String {
    name.replace(['\n', '\r'], " ")
}

/// Names refused because the table was full.
pub fn names_refused() -> u32 {
    NAMES_REFUSED.load(Relaxed)
}
