//! The session directory in shared memory: private to the user by default, shared with a
//! group or handed to another user on request; its liveness lock; and cleaning up after
//! framelabs that were killed.
//!
//! Liveness is a lock, not a pid: the collector holds an exclusive `flock` on `lock` inside
//! its session directory for as long as it runs, and the kernel drops it when the collector
//! dies, however it dies. A pid means nothing across PID namespaces (a container sharing
//! /dev/shm sees other pids, or none), so `kill(pid, 0)` once made one framelab delete a
//! live session of another. The SDK asks the same lock before it makes a ring.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use framelab_probe::wire;

const PREFIX: &str = "framelab-session-";
/// A session directory is made under this name, then renamed into place with its lock held:
/// a cleaner never sees a session directory without its lock.
const STAGING_PREFIX: &str = ".framelab-session-";
/// A staging directory left by a framelab killed while making it is removed after this.
const STAGING_STALE_AFTER: Duration = Duration::from_secs(60);

/// Who may use the session besides framelab's own user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SessionAccess {
    /// Only framelab's user (0700): other users cannot read the timings or stage names.
    #[default]
    Private,
    /// Members of this group may record and read (02770; `--share-session GROUP`).
    Group { name: String, gid: u32 },
    /// The directory belongs to this user (`--session-user USER`): a command that drops
    /// privileges to USER can record; framelab (root) still reads everything.
    User { name: String, uid: u32, gid: u32 },
}

impl SessionAccess {
    /// `--share-session GROUP`: a group name or number.
    pub fn group(name: &str) -> Result<SessionAccess> {
        let gid = lookup_group(name).with_context(|| {
            format!("--share-session {name}: no such group; give a group name from /etc/group or a number")
        })?;
        Ok(SessionAccess::Group {
            name: name.to_owned(),
            gid,
        })
    }

    /// `--session-user USER`: a user name or number.
    pub fn user(name: &str) -> Result<SessionAccess> {
        let (uid, gid) = lookup_user(name).with_context(|| {
            format!("--session-user {name}: no such user; give a user name from /etc/passwd or a number")
        })?;
        Ok(SessionAccess::User {
            name: name.to_owned(),
            uid,
            gid,
        })
    }
}

pub struct SessionDir {
    path: PathBuf,
    base: PathBuf,
    /// Held (flock LOCK_EX) for the whole run: the session is live while this is open.
    lock: File,
    /// The directory's identity, to notice it was removed (or replaced) under us.
    dev_ino: (u64, u64),
    /// The wakeup word, opened before any program of the run can touch it; taken by the
    /// collector.
    wake: Option<super::wake::WakeWord>,
}

/// The directory session directories go in: `FRAMELAB_SHM_DIR`, else /dev/shm, else the
/// temporary directory.
pub fn base_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(wire::SHM_DIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if !dir.is_dir() {
            bail!(
                "{}={} is not a directory: create it, or unset {} to use /dev/shm",
                wire::SHM_DIR_ENV,
                dir.display(),
                wire::SHM_DIR_ENV
            );
        }
        return Ok(dir);
    }
    Ok(if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    })
}

impl SessionDir {
    pub fn create(access: &SessionAccess) -> Result<SessionDir> {
        let base = base_dir()?;
        remove_stale(&base);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!("{}-{nanos:x}", std::process::id());
        let path = base.join(format!("{PREFIX}{name}"));
        let staging = base.join(format!("{STAGING_PREFIX}{name}.new"));
        let fail = |what: &str, e: std::io::Error| {
            anyhow::anyhow!(
                "cannot create the session directory {} ({what}: {e}); check that {} is writable, or set {} to a directory that is",
                path.display(),
                base.display(),
                wire::SHM_DIR_ENV
            )
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&staging)
            .map_err(|e| fail("mkdir", e))?;
        let made = (|| {
            let lock = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(staging.join(wire::LOCK_FILE))
                .map_err(|e| fail("its lock", e))?;
            flock(&lock, libc::LOCK_EX | libc::LOCK_NB).map_err(|e| fail("locking it", e))?;
            apply_access(&staging, &lock, access)?;
            let (mode, owner) = match access {
                SessionAccess::Private => (0o600, (None, None)),
                SessionAccess::Group { gid, .. } => (0o660, (None, Some(*gid))),
                SessionAccess::User { uid, gid, .. } => (0o600, (Some(*uid), Some(*gid))),
            };
            super::wake::make(&staging, mode, owner).map_err(|e| fail("its wakeup word", e))?;
            std::fs::rename(&staging, &path).map_err(|e| fail("rename", e))?;
            let meta = std::fs::metadata(&path).map_err(|e| fail("stat", e))?;
            Ok(SessionDir {
                wake: super::wake::WakeWord::open(&path),
                path: path.clone(),
                base: base.clone(),
                lock,
                dev_ino: (meta.dev(), meta.ino()),
            })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        made
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session's wakeup word (once: the collector keeps it), if it could be opened.
    pub fn take_wake_word(&mut self) -> Option<super::wake::WakeWord> {
        self.wake.take()
    }

    /// Where the session directory is (/dev/shm): the memory rings take.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The user the session directory belongs to (who can make rings in it).
    pub fn owner_uid(&self) -> Option<u32> {
        self.lock_dir_meta().map(|m| m.uid())
    }

    /// Shared with a group (`--share-session`): other users may record.
    pub fn shared(&self) -> bool {
        self.lock_dir_meta().is_some_and(|m| m.mode() & 0o070 != 0)
    }

    fn lock_dir_meta(&self) -> Option<std::fs::Metadata> {
        std::fs::metadata(&self.path).ok()
    }

    /// Whether the session directory is still there: not removed by another process (a
    /// cleaner that thought it stale, a user), nor replaced by another of the same name.
    pub fn still_there(&self) -> bool {
        let lock_linked = self.lock.metadata().is_ok_and(|m| m.nlink() > 0);
        let same_dir = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.is_dir() && (m.dev(), m.ino()) == self.dev_ino);
        lock_linked && same_dir
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        // Only ours: a directory of the same name made by someone else stays.
        if self.still_there() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Makes the staging directory what `access` asks for. The mode is set explicitly, not
/// through the umask, which could only take bits away.
fn apply_access(dir: &Path, lock: &File, access: &SessionAccess) -> Result<()> {
    let set_mode = |mode: u32| {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).with_context(|| {
            format!(
                "cannot set the permissions of the session directory {}",
                dir.display()
            )
        })
    };
    match access {
        SessionAccess::Private => set_mode(0o700),
        SessionAccess::Group { name, gid } => {
            chown(dir, None, Some(*gid)).with_context(|| {
                format!("--share-session {name}: cannot give the session directory to group {name} (framelab must be root or a member of it)")
            })?;
            let _ = chown_fd(lock, None, Some(*gid));
            lock.set_permissions(std::fs::Permissions::from_mode(0o640))?;
            // setgid: files made inside belong to the group too.
            set_mode(0o2770)
        }
        SessionAccess::User { name, uid, gid } => {
            chown(dir, Some(*uid), Some(*gid)).with_context(|| {
                format!("--session-user {name}: cannot give the session directory to {name} (framelab must run as root)")
            })?;
            set_mode(0o700)
        }
    }
}

fn chown(path: &Path, uid: Option<u32>, gid: Option<u32>) -> std::io::Result<()> {
    std::os::unix::fs::chown(path, uid, gid)
}

fn chown_fd(file: &File, uid: Option<u32>, gid: Option<u32>) -> std::io::Result<()> {
    std::os::unix::fs::fchown(file, uid, gid)
}

fn flock(file: &File, operation: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether a session directory's collector is gone: its lock can be taken. `None` when it
/// cannot be told (no lock file: made by a framelab before locks, or unreadable).
fn stale(dir: &Path) -> Option<(bool, File)> {
    let lock = File::open(dir.join(wire::LOCK_FILE)).ok()?;
    match flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Some((true, lock)),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Some((false, lock)),
        Err(_) => None,
    }
}

/// Session directories whose framelab no longer runs (killed with -9) are removed; live
/// ones, in this PID namespace or another, are left alone.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let staging = name.starts_with(STAGING_PREFIX) && name.ends_with(".new");
        if !name.starts_with(PREFIX) && !staging {
            continue;
        }
        // A directory, not a link someone planted to have framelab delete what it points at.
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        let old = || {
            (meta.modified().ok())
                .and_then(|m| m.elapsed().ok())
                .is_some_and(|age| age > STAGING_STALE_AFTER)
        };
        // A staging directory is being made: its lock file exists a moment before it is
        // locked, so taking that lock would take a live one (and its maker would fail).
        // Only age tells a dead one.
        if staging {
            if old() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
            continue;
        }
        // Holding its lock while removing it: no SDK takes it for live meanwhile. A live one,
        // or one without a lock (an older framelab's: its liveness cannot be told safely),
        // is left alone.
        if let Some((true, _lock)) = stale(&entry.path()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A user's uid and primary gid, by name or number.
fn lookup_user(name: &str) -> Option<(u32, u32)> {
    if let Ok(uid) = name.parse::<u32>() {
        // SAFETY: getpwuid returns a pointer into static storage or null.
        let pw = unsafe { libc::getpwuid(uid) };
        let gid = if pw.is_null() {
            uid
        } else {
            unsafe { (*pw).pw_gid }
        };
        return Some((uid, gid));
    }
    let c_name = std::ffi::CString::new(name).ok()?;
    // SAFETY: as above; read at once.
    let pw = unsafe { libc::getpwnam(c_name.as_ptr()) };
    (!pw.is_null()).then(|| unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// A group's gid, by name or number.
fn lookup_group(name: &str) -> Option<u32> {
    if let Ok(gid) = name.parse::<u32>() {
        return Some(gid);
    }
    let c_name = std::ffi::CString::new(name).ok()?;
    // SAFETY: getgrnam returns a pointer into static storage or null; read at once.
    let gr = unsafe { libc::getgrnam(c_name.as_ptr()) };
    (!gr.is_null()).then(|| unsafe { (*gr).gr_gid })
}

/// `nobody (uid 65534)`, or `uid 1234` without a name.
pub fn describe_uid(uid: u32) -> String {
    // SAFETY: getpwuid returns a pointer into static storage or null; read at once.
    let pw = unsafe { libc::getpwuid(uid) };
    if pw.is_null() {
        return format!("uid {uid}");
    }
    let name = unsafe { std::ffi::CStr::from_ptr((*pw).pw_name) };
    format!("{} (uid {uid})", name.to_string_lossy())
}
