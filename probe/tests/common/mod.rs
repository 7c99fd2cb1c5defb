//! Helpers for the SDK's integration tests. The SDK reads its environment once per process,
//! so each scenario runs in a fresh process: the test binary runs itself with one test
//! selected and `FL_TEST_CHILD` set, and the parent then reads the session directory the way
//! the collector would, from the files alone.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::mem::offset_of;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use framelab_probe::wire::{self, Record, RingHeader};

const CHILD_ENV: &str = "FL_TEST_CHILD";

/// True in the child process started for `test`: it should record and return.
pub fn is_child(test: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(test)
}

/// A session directory, removed on drop.
pub struct Session {
    pub dir: PathBuf,
}

impl Session {
    pub fn new(test: &str) -> Session {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("fl-probe-{}-{n}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Session { dir }
    }

    /// Runs `test` in a child process inside this session; returns its stdout.
    pub fn run(&self, test: &str, env: &[(&str, &str)]) -> String {
        let mut all = vec![(wire::SESSION_ENV, self.dir.to_str().unwrap())];
        all.extend_from_slice(env);
        run_child(test, &all, None)
    }

    pub fn rings(&self) -> Vec<Ring> {
        let mut rings: Vec<Ring> = files(&self.dir, "r-")
            .iter()
            .map(|p| Ring::read(p))
            .collect();
        rings.sort_by_key(|r| (r.pid, r.tid));
        rings
    }

    /// The names file of `pid`, as `(id, kind, name)` lines in file order.
    pub fn names(&self, pid: u32) -> Vec<(u16, char, String)> {
        let text = std::fs::read_to_string(self.dir.join(format!("n-{pid}")))
            .unwrap_or_else(|e| panic!("names file of {pid}: {e}"));
        text.lines()
            .map(|l| {
                let (id, kind, name) =
                    wire::parse_name_line(l).unwrap_or_else(|| panic!("bad names line {l:?}"));
                (id, kind, name.to_owned())
            })
            .collect()
    }

    /// The id of `(kind, name)` in `pid`'s names file.
    pub fn id(&self, pid: u32, kind: char, name: &str) -> u16 {
        self.names(pid)
            .into_iter()
            .find(|(_, k, n)| *k == kind && n == name)
            .unwrap_or_else(|| panic!("{kind} {name} not in the names file of {pid}"))
            .0
    }

    pub fn file_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `test` alone in a fresh process of this test binary, with `env` and no inherited
/// session; panics with its output unless it succeeds.
pub fn run_child(test: &str, env: &[(&str, &str)], cwd: Option<&Path>) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(CHILD_ENV, test)
        .env_remove(wire::SESSION_ENV)
        .env_remove(wire::RING_RECORDS_ENV)
        .env_remove(wire::CLOCK_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child {test} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The value after `key=` in a child's output line `key=value`.
pub fn reported(stdout: &str, key: &str) -> u64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key}= not in child output:\n{stdout}"))
        .trim()
        .parse()
        .unwrap()
}

fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
        .collect()
}

/// A ring file decoded from its bytes, as the collector would see it.
#[derive(Debug)]
pub struct Ring {
    pub file: String,
    pub magic: u64,
    pub version: u32,
    pub clock: u32,
    pub pid: u32,
    pub tid: u32,
    pub capacity: u64,
    pub thread_name: String,
    pub head: u64,
    pub tail: u64,
    pub dropped: u64,
    pub closed: u32,
    pub features: u32,
    /// Records from tail to head, oldest first.
    pub records: Vec<Record>,
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

impl Ring {
    pub fn read(path: &Path) -> Ring {
        let b = std::fs::read(path).unwrap();
        let capacity = u64_at(&b, offset_of!(RingHeader, capacity));
        assert_eq!(b.len(), wire::ring_file_bytes(capacity), "{path:?}: size");
        let head = u64_at(&b, offset_of!(RingHeader, head));
        let tail = u64_at(&b, offset_of!(RingHeader, tail));
        let records = (tail..head)
            .map(|i| {
                let at = wire::HEADER_BYTES + (i % capacity) as usize * 32;
                Record {
                    word: u64_at(&b, at),
                    frame: u64_at(&b, at + 8),
                    a: u64_at(&b, at + 16),
                    b: u64_at(&b, at + 24),
                }
            })
            .collect();
        let name_at = offset_of!(RingHeader, thread_name);
        let name = &b[name_at..name_at + 32];
        let name_len = name.iter().position(|&c| c == 0).unwrap_or(32);
        Ring {
            file: path.file_name().unwrap().to_str().unwrap().to_owned(),
            magic: u64_at(&b, offset_of!(RingHeader, magic)),
            version: u32_at(&b, offset_of!(RingHeader, version)),
            clock: u32_at(&b, offset_of!(RingHeader, clock)),
            pid: u32_at(&b, offset_of!(RingHeader, pid)),
            tid: u32_at(&b, offset_of!(RingHeader, tid)),
            capacity,
            thread_name: String::from_utf8_lossy(&name[..name_len]).into_owned(),
            head,
            tail,
            dropped: u64_at(&b, offset_of!(RingHeader, dropped)),
            closed: u32_at(&b, offset_of!(RingHeader, closed)),
            features: u32_at(&b, offset_of!(RingHeader, features)),
            records,
        }
    }

    /// Records of `kind`, counted per name id.
    pub fn count_by_name(&self, kind: u8) -> BTreeMap<u16, usize> {
        let mut counts = BTreeMap::new();
        for r in self.records.iter().filter(|r| r.kind() == kind) {
            *counts.entry(r.name()).or_default() += 1;
        }
        counts
    }
}

/// Asserts what every ring must satisfy: identity, file name, sizes.
pub fn assert_well_formed(ring: &Ring) {
    assert_eq!(ring.magic, wire::RING_MAGIC, "{}", ring.file);
    assert_eq!(ring.version, wire::WIRE_VERSION);
    let name = format!("r-{}-{}", ring.pid, ring.tid);
    assert!(
        ring.file == name || ring.file.starts_with(&format!("{name}-")),
        "{}",
        ring.file
    );
    assert!(ring.capacity.is_power_of_two());
    assert!(ring.head - ring.tail <= ring.capacity);
}

extern "C" {
    pub fn gettid() -> i32;
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn kill(pid: i32, signal: i32) -> i32;
}

const WNOHANG: i32 = 1;
const SIGKILL: i32 = 9;

/// Forks; runs `child` in the new process, which then exits (running thread-local
/// destructors, as a normal exit does). Returns the child's pid and exit status.
pub fn fork_and_wait(child: impl FnOnce()) -> (u32, i32) {
    let (pid, status) = fork_and_wait_or_kill(child, None);
    (pid, status.expect("no deadline"))
}

/// As `fork_and_wait`, but a child still running after `deadline` is killed (status None):
/// a deadlock detector, generous enough never to trip on a slow machine.
pub fn fork_and_wait_or_kill(
    child: impl FnOnce(),
    deadline: Option<std::time::Duration>,
) -> (u32, Option<i32>) {
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    // SAFETY: the child only runs `child` and exits.
    let pid = unsafe { fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).is_ok();
        let _ = std::io::stdout().flush();
        std::process::exit(if ok { 0 } else { 101 });
    }
    let mut status = 0;
    let Some(deadline) = deadline else {
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { waitpid(pid, &mut status, 0) }, pid);
        return (pid as u32, Some(status));
    };
    let started = std::time::Instant::now();
    // SAFETY: polling, then killing, our own child.
    unsafe {
        while waitpid(pid, &mut status, WNOHANG) == 0 {
            if started.elapsed() > deadline {
                kill(pid, SIGKILL);
                waitpid(pid, &mut status, 0);
                return (pid as u32, None);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    (pid as u32, Some(status))
}
