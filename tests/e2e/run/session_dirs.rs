//! The session directory: live sessions survive another framelab's cleanup from another PID
//! namespace, a removed one is reported, a stale one gets no rings, sessions are private by
//! default, and a command that changes user can record when told to (or is told why not).

use crate::common;
use crate::common::session as session_common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use common::*;
use session_common::{is_root, session_dirs, skip, wait_for};

/// A framelab run whose command records 100 frames, waits on a fifo, then records 100
/// more in a new process: what happens between the two halves is up to the test.
struct Paused {
    dir: tempfile::TempDir,
    framelab: Child,
}

impl Paused {
    fn start(extra_args: &[&str]) -> Paused {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("shm")).unwrap();
        let fifo = dir.path().join("go");
        let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: plain mkfifo.
        assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
        let prog = example("testprog");
        let script = format!(
            "{prog} spans 100; read x < {}; {prog} spans 100",
            fifo.display()
        );
        let framelab = framelab()
            .env("FRAMELAB_SHM_DIR", dir.path().join("shm"))
            .args(["run"])
            .args(extra_args)
            .arg("-o")
            .arg(dir.path().join("paused.framelab"))
            .args(["--", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let paused = Paused { dir, framelab };
        let run_file = paused.run_file();
        wait_for("the first half on disk", || {
            // Three stages a frame.
            framelab::store::load_run(&run_file, None).is_ok_and(|r| r.spans.len() >= 300)
        });
        paused
    }

    fn shm(&self) -> PathBuf {
        self.dir.path().join("shm")
    }

    fn run_file(&self) -> PathBuf {
        self.dir.path().join("paused.framelab")
    }

    fn session(&self) -> PathBuf {
        let dirs = session_dirs(&self.shm());
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        dirs[0].clone()
    }

    /// Lets the second half run and waits for framelab.
    fn finish(self) -> (std::process::Output, framelab::model::Run) {
        std::fs::write(self.dir.path().join("go"), "go\n").unwrap();
        let out = self.framelab.wait_with_output().unwrap();
        let run = load(&self.dir.path().join("paused.framelab"));
        (out, run)
    }
}

#[test]
fn a_framelab_in_another_pid_namespace_leaves_a_live_session_alone() {
    let test = "a_framelab_in_another_pid_namespace_leaves_a_live_session_alone";
    if !is_root() {
        return skip(test, "unshare --pid needs root");
    }
    let paused = Paused::start(&[]);
    let session = paused.session();
    // A second framelab in a new PID namespace, sharing the session base: it cannot see the
    // first one's pid, which is what once made it delete the live session as stale.
    let other = std::process::Command::new("unshare")
        .args(["--pid", "--fork"])
        .arg(env!("CARGO_BIN_EXE_framelab"))
        .env("FRAMELAB_SHM_DIR", paused.shm())
        .args(["run", "-o"])
        .arg(paused.dir.path().join("other.framelab"))
        .args(["--", "true"])
        .output()
        .unwrap();
    if !other.status.success() && stderr(&other).contains("unshare") {
        let why = format!("unshare failed here: {}", stderr(&other));
        paused.finish();
        return skip(test, &why);
    }
    assert!(other.status.success(), "{}", stderr(&other));
    assert!(session.is_dir(), "the live session was removed");
    let (out, run) = paused.finish();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        run.spans.len(),
        600,
        "both halves recorded, 3 stages of 200 frames"
    );
    assert_eq!(run.meta.session.session_lost_ns, None);
}

#[test]
fn a_session_removed_under_a_live_run_is_reported() {
    let paused = Paused::start(&[]);
    std::fs::remove_dir_all(paused.session()).unwrap();
    let (out, run) = paused.finish();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(run.meta.session.session_lost_ns.is_some());
    assert!(
        stderr(&out).contains("was removed")
            && stderr(&out).contains("while the run was recording"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("The session directory was removed"),
        "{}",
        stdout(&out)
    );
    // The second half could not record: the run says it is incomplete rather than short.
    assert_eq!(run.spans.len(), 300);
}

#[test]
fn sessions_are_private_to_their_user() {
    let paused = Paused::start(&[]);
    let session = paused.session();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&session), 0o700, "{}", session.display());
    let files: Vec<PathBuf> = std::fs::read_dir(&session)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("r-") || name.starts_with("n-")
        })
        .collect();
    assert!(!files.is_empty());
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let (out, _) = paused.finish();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_program_given_a_stale_session_records_nothing_and_leaves_no_rings() {
    let dir = tempfile::tempdir().unwrap();
    let shm = dir.path().join("shm");
    std::fs::create_dir(&shm).unwrap();
    // A session left behind: its framelab was killed with -9.
    let mut killed = framelab()
        .env("FRAMELAB_SHM_DIR", &shm)
        .args(["run", "-o"])
        .arg(dir.path().join("killed.framelab"))
        .args(["--", "sleep", "60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its liveness lock made: a directory killed before it has none, which the SDK takes
    // for an older framelab's live session.
    wait_for("the session's lock", || {
        session_dirs(&shm).iter().any(|d| d.join("lock").exists())
    });
    killed.kill().unwrap();
    killed.wait().unwrap();
    let stale = session_dirs(&shm).pop().unwrap();
    // Stale once nothing holds its lock: a child framelab forked just before the kill keeps
    // the lock's descriptor until its exec (joining the run's cgroup can take milliseconds).
    let lock = std::fs::File::open(stale.join("lock")).unwrap();
    wait_for("the session's lock to be free", || {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; released at once.
        let free = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if free {
            unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_UN) };
        }
        free
    });

    let program = std::process::Command::new(example("testprog"))
        .args(["spans", "20"])
        .env("FRAMELAB_SESSION", &stale)
        .spawn()
        .unwrap();
    let pid = program.id();
    let status = program.wait_with_output().unwrap().status;
    assert!(status.success());
    let left: Vec<String> = std::fs::read_dir(&stale)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&format!("-{pid}")))
        .collect();
    assert!(
        left.is_empty(),
        "the program left {left:?} in a stale session"
    );
}

/// `setpriv` to nobody:nogroup, then testprog: a command that drops privileges.
fn as_nobody(framelab_args: &[&str]) -> Option<(std::process::Output, framelab::model::Run)> {
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists())?;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nobody.framelab");
    let out = framelab()
        .env("FRAMELAB_SHM_DIR", dir.path())
        .arg("run")
        .args(framelab_args)
        .arg("-o")
        .arg(&path)
        .args([
            "--",
            setpriv,
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            &example("testprog"),
            "spans",
            "300",
        ])
        .output()
        .unwrap();
    let run = load(&path);
    Some((out, run))
}

#[test]
fn a_command_that_changes_user_is_told_why_it_recorded_nothing_and_how_to_fix_it() {
    let test = "a_command_that_changes_user_is_told_why_it_recorded_nothing_and_how_to_fix_it";
    if !is_root() {
        return skip(test, "changing user needs root");
    }
    let Some((out, run)) = as_nobody(&[]) else {
        return skip(test, "no setpriv here");
    };
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(run.spans.is_empty());
    assert_eq!(run.meta.session.foreign_users, vec!["nobody (uid 65534)"]);
    let report = stdout(&out);
    assert!(
        report.contains("ran as nobody (uid 65534) and recorded nothing")
            && report.contains("--session-user nobody"),
        "{report}"
    );
    assert!(
        stderr(&out).contains("--session-user nobody"),
        "{}",
        stderr(&out)
    );

    // Told to, it records everything.
    for option in [["--session-user", "nobody"], ["--share-session", "nogroup"]] {
        let (out, run) = as_nobody(&option).unwrap();
        assert!(out.status.success(), "{option:?}: {}", stderr(&out));
        assert_eq!(
            run.spans.len(),
            900,
            "{option:?}: three stages of 300 frames"
        );
        assert!(run.meta.session.foreign_users.is_empty(), "{option:?}");
    }
}

#[test]
fn a_command_in_its_own_pid_namespace_is_recorded_to_its_last_frame() {
    let test = "a_command_in_its_own_pid_namespace_is_recorded_to_its_last_frame";
    if !is_root() {
        return skip(test, "unshare --pid needs root");
    }
    // In the new namespace the program's pid is about 1002 after a thousand forks: a pid
    // that names no process (or another one) where framelab is. Its ring must still be read
    // until the program is done, not retired the first time it is empty.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ns.framelab");
    let script = format!(
        "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done; {} spans 300",
        example("testprog")
    );
    let out = framelab()
        .env("FRAMELAB_SHM_DIR", dir.path())
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", "unshare", "--pid", "--fork", "sh", "-c", &script])
        .output()
        .unwrap();
    if !out.status.success() && stderr(&out).contains("unshare") {
        return skip(test, &format!("unshare failed here: {}", stderr(&out)));
    }
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(load(&path).spans.len(), 900, "3 stages of 300 frames");
}

/// A session directory being made (its staging name, its lock file there but not locked
/// yet) belongs to a framelab starting beside this one: its cleanup must leave it alone, or
/// that framelab fails "locking it" (seen when bench_e2e's tests ran at once). One left by a
/// framelab that died while making it is removed once old.
#[test]
fn a_session_being_made_is_not_cleaned_up_but_an_old_dead_one_is() {
    let shm = tempfile::tempdir().unwrap();
    let making = shm.path().join(".framelab-session-4242-abc.new");
    let dead = shm.path().join(".framelab-session-4243-def.new");
    for dir in [&making, &dead] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("lock"), b"").unwrap();
    }
    let two_minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::open(&dead)
        .unwrap()
        .set_modified(two_minutes_ago)
        .unwrap();
    let out = framelab()
        .env("FRAMELAB_SHM_DIR", shm.path())
        .args(["run", "-o"])
        .arg(shm.path().join("r.framelab"))
        .arg("--")
        .arg(example("testprog"))
        .args(["spans", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(making.is_dir(), "a session being made was removed");
    assert!(!dead.exists(), "a dead staging directory was left");
}
