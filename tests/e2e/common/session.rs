//! Helpers for the session tests: waiting for progress (what a recording framelab has
//! committed to its run file included, for tests that act while it runs), the processes
//! below a pid and their CPU, tmpfs mounts as root, skipping with a visible reason.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Waits until `ready` holds. Generous: this waits for progress, it does not time anything.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("gave up after 60 s waiting for {what}");
}

/// Whether the test runs as root (tmpfs mounts, other users, namespaces need it).
pub fn is_root() -> bool {
    // SAFETY: plain getter.
    unsafe { libc::geteuid() == 0 }
}

/// Prints why a test does not run here; the caller returns.
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
}

/// `pid`'s own user + sys CPU (ns), from /proc; `None` once it is gone.
pub fn cpu_ns(pid: u32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let parsed = framelab::session::procfs::parse_stat(stat.trim(), 1_000_000_000 / 100)?;
    Some(parsed.cpu.user_ns + parsed.cpu.sys_ns)
}

/// `pid`'s parent, from /proc; `None` once it is gone.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(1)?.parse().ok()
}

/// Whether `pid` exists and is not a zombie (a zombie has run its last instruction).
pub fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 2..].chars().next())
        .unwrap_or('X');
    !matches!(state, 'Z' | 'X')
}

/// Every process below `root` (children, grandchildren, ...), from /proc.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        {
            if let Some(ppid) = parent_of(pid) {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// A tmpfs of `size` (e.g. `1m`) mounted on a fresh directory, unmounted on drop.
pub struct Tmpfs {
    pub dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (after saying why) when this process may not mount.
    pub fn mount(test: &str, size: &str) -> Option<Tmpfs> {
        if !is_root() {
            skip(test, "mounting a small tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=1777"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            other => {
                skip(test, &format!("mount -t tmpfs failed here ({other:?})"));
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// The session directories framelab made under `base`.
pub fn session_dirs(base: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(base)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("framelab-session-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A shell loop that ends once `go` exists: a command the test lets end when it has seen
/// what it waits for, instead of one that sleeps and hopes.
pub fn until_exists(go: &Path) -> String {
    format!("while [ ! -e '{}' ]; do sleep 0.02; done", go.display())
}

/// Asks `query` of what framelab has committed so far to the run file it records into
/// (`None` before the file or the table is there, or while framelab writes).
pub fn committed<T>(
    path: &Path,
    query: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
) -> Option<T> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    query(&conn).ok()
}

/// The end of the window as framelab's last commit of the run in `path` says it (ns after
/// the launch; each commit moves it to its own time): 0 before the first commit.
pub fn committed_window_end_ns(path: &Path) -> i64 {
    committed(path, |conn| {
        conn.query_row("SELECT max(window_end_ns) FROM runs", [], |r| {
            r.get::<_, Option<i64>>(0)
        })
    })
    .flatten()
    .unwrap_or(0)
}

/// Waits for framelab, recording into `path`, to commit after this call. It reads the run's
/// processes first thing and then at `--sample-every` (these tests give 100 ms or less), and
/// commits every 500 ms after reading what is due: the first commit follows its first
/// reading, and any commit after the one this call waited for follows a reading made after
/// this call.
pub fn wait_for_a_commit(path: &Path) {
    let seen = committed_window_end_ns(path);
    wait_for("framelab's next commit", || {
        committed_window_end_ns(path) > seen
    });
}

/// Runs `framelab` (its command must end once `go` exists, `until_exists`) until `ready`
/// holds of what it has committed, then lets the command end; framelab's output.
pub fn run_until(
    framelab: &mut std::process::Command,
    path: &Path,
    go: &Path,
    what: &str,
    mut ready: impl FnMut(&rusqlite::Connection) -> rusqlite::Result<bool>,
) -> std::process::Output {
    let mut child = framelab
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("framelab starts");
    // Generous: this waits for progress, it does not time anything.
    for _ in 0..1200 {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "framelab ended ({}) before {what}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if committed(path, &mut ready).unwrap_or(false) {
            std::fs::write(go, "").unwrap();
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    panic!(
        "gave up after 60 s waiting for {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
