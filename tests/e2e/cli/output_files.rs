//! Files framelab writes (issue 11 item 1): `-o` that is a FIFO, a device, a symbolic link,
//! the input itself, the null device, or has a link planted beside it. Each test uses real
//! files and real device nodes; nothing here writes to the machine's own /dev.

use crate::common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{error_line, example, framelab, stderr};

const FIXTURE: &str = "tests/fixtures/import/mangohud-0.6.8-glxgears-llvmpipe.csv";

/// A run file with one imported run, in `dir`.
fn imported_run(dir: &Path) -> PathBuf {
    let path = dir.join("r.framelab");
    let out = framelab()
        .args(["import", FIXTURE, "-o"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

fn export(run: &Path, to: &Path) -> std::process::Output {
    framelab()
        .args(["export", "--format", "csv"])
        .arg(run)
        .arg("-o")
        .arg(to)
        .output()
        .unwrap()
}

fn is_root() -> bool {
    // SAFETY: geteuid touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// A character device node `major:minor` made in `dir` (a stand-in for /dev/full or
/// /dev/null that a broken build can harm without harming the machine). `None`, with the
/// reason printed, where this process may not make device nodes.
fn device_node(dir: &Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    let path = dir.join(name);
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mknod only creates a node.
    let rc = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    if rc != 0 {
        eprintln!(
            "skipped: cannot make a {major}:{minor} device node here ({})",
            std::io::Error::last_os_error()
        );
        return None;
    }
    Some(path)
}

#[test]
fn export_to_a_fifo_streams_and_keeps_the_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let fifo = dir.path().join("pipe");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    // The reader is a process: a broken build that replaced the FIFO leaves it waiting, and
    // the test kills it instead of hanging.
    let mut reader = Command::new("cat")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = export(&run, &fifo);
    let still_fifo = fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo();
    if !still_fifo || !out.status.success() {
        let _ = reader.kill();
        let _ = reader.wait();
    }
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(still_fifo, "the FIFO was replaced");
    let mut text = String::new();
    reader
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    reader.wait().unwrap();
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        2,
        "nothing else written"
    );
    let file = dir.path().join("file.csv");
    assert!(export(&run, &file).status.success());
    assert_eq!(
        text,
        fs::read_to_string(&file).unwrap(),
        "the same bytes as a file"
    );
}

#[test]
fn export_over_a_link_writes_where_it_points_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let real = dir.path().join("real.csv");
    fs::write(&real, "old").unwrap();
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink("real.csv", &link).unwrap();
    let out = export(&run, &link);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&real)
        .unwrap()
        .starts_with("frame,stage,"));

    // A link to nothing would create a file wherever it points: refused.
    let dangling = dir.path().join("dangling.csv");
    std::os::unix::fs::symlink(dir.path().join("elsewhere.csv"), &dangling).unwrap();
    let out = export(&run, &dangling);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("does not exist"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("elsewhere.csv").exists());
}

#[test]
fn a_link_planted_at_the_old_temporary_name_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    let planted = dir.path().join("out.csv.partial");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let out_path = dir.path().join("out.csv");
    let out = export(&run, &out_path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(fs::symlink_metadata(&planted)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::read_to_string(&out_path)
        .unwrap()
        .starts_with("frame,stage,"));
    // Only the four files there before and the export: no temporary left.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 4);
}

#[test]
fn a_link_owned_by_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: giving a link to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    let link = dir.path().join("shared.csv");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let out = export(&run, &link);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("owned by another user"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn a_full_device_gives_no_space_and_stays_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    // As root a broken build would replace the device: use a node of our own then.
    let full = if is_root() {
        match device_node(dir.path(), "full", 1, 7) {
            Some(path) => path,
            None => return,
        }
    } else if fs::OpenOptions::new().write(true).open("/dev/full").is_ok() {
        PathBuf::from("/dev/full")
    } else {
        eprintln!("skipped: /dev/full cannot be opened for writing here");
        return;
    };
    let out = export(&run, &full);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(line.contains("no space left"), "{line}");
    assert!(fs::metadata(&full).unwrap().file_type().is_char_device());
}

#[test]
fn export_refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let hard = dir.path().join("hard.framelab");
    fs::hard_link(&run, &hard).unwrap();
    let soft = dir.path().join("soft.csv");
    std::os::unix::fs::symlink(&run, &soft).unwrap();
    for to in [&run, &hard, &soft] {
        let out = export(&run, to);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            error_line(&out).contains("the file being read"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(common::load(&run).spans.len(), 3384, "the run is intact");
}

#[test]
fn the_null_device_keeps_no_run_file() {
    let dir = tempfile::tempdir().unwrap();
    let Some(null) = device_node(dir.path(), "null", 1, 3) else {
        return;
    };
    let import = framelab()
        .args(["import", FIXTURE, "-o"])
        .arg(&null)
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", stderr(&import));
    assert!(
        stderr(&import).contains("no file was kept"),
        "{}",
        stderr(&import)
    );
    assert!(common::stdout(&import).contains("frames"));
    let run = framelab()
        .args(["run", "-o"])
        .arg(&null)
        .arg("--")
        .arg(example("testprog"))
        .args(["work", "20", "100"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("no file was kept"),
        "{}",
        stderr(&run)
    );
    assert!(
        common::stdout(&run).contains("work"),
        "the report is printed"
    );
    let bench = framelab()
        .args(["bench", "-n", "2", "--show", "work.p50", "-o"])
        .arg(&null)
        .arg("--variant")
        .arg(format!("a={} work 10 100", example("testprog")))
        .arg("--variant")
        .arg(format!("b={} work 10 150", example("testprog")))
        .output()
        .unwrap();
    assert!(bench.status.success(), "{}", stderr(&bench));
    assert!(
        stderr(&bench).contains("no file was kept"),
        "{}",
        stderr(&bench)
    );
    // No journal beside it, no file in its place.
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["null"], "{names:?}");
    assert!(fs::metadata(&null).unwrap().file_type().is_char_device());
}

#[test]
fn run_files_only_go_to_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut child = framelab()
        .args(["import", FIXTURE, "-o"])
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A framelab that opened the FIFO would wait for a writer forever: guard the test.
    let pid = child.id();
    let guard = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(30));
        // SAFETY: signals only the child this test started (harmless if it has exited).
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    drop(guard);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("it is a FIFO"), "{err}");
    let out = framelab()
        .args(["import", FIXTURE, "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("standard output"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_planted_journal_link_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, "precious").unwrap();
    let run = dir.path().join("r.framelab");
    std::os::unix::fs::symlink(&victim, dir.path().join("r.framelab-journal")).unwrap();
    let out = framelab()
        .args(["import", FIXTURE, "-o"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        error_line(&out).contains("is not SQLite's journal"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    assert!(!run.exists());
}

#[test]
fn a_run_that_cannot_start_keeps_the_runs_already_in_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    // Executable, but its interpreter does not exist: the launch itself fails.
    let junk = dir.path().join("junk");
    fs::write(&junk, "#!/nonexistent/interpreter\n").unwrap();
    fs::set_permissions(&junk, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = framelab()
        .args(["run", "-o"])
        .arg(&run)
        .arg("--")
        .arg(&junk)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(run.exists(), "the file holding run 1 was removed");
    assert_eq!(common::load(&run).spans.len(), 3384);
}

#[test]
fn a_replaced_export_keeps_its_mode_and_owner() {
    let dir = tempfile::tempdir().unwrap();
    let run = imported_run(dir.path());
    let out_path = dir.path().join("out.csv");
    fs::write(&out_path, "old").unwrap();
    fs::set_permissions(
        &out_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o604),
    )
    .unwrap();
    let before = fs::metadata(&out_path).unwrap();
    let out = export(&run, &out_path);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = fs::metadata(&out_path).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o604);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
}

/// A tmpfs of `kib` KiB mounted on a new directory in `dir`, or `None` (reason printed)
/// where this process may not mount.
fn small_tmpfs(dir: &Path, kib: u32) -> Option<PathBuf> {
    let mount = dir.join("small");
    fs::create_dir(&mount).unwrap();
    let ok = is_root()
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&mount)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: cannot mount a small tmpfs here (needs root and CAP_SYS_ADMIN)");
        return None;
    }
    Some(mount)
}

#[test]
fn a_full_disk_leaves_no_half_import_and_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(small) = small_tmpfs(dir.path(), 100) else {
        return;
    };
    let run = small.join("x.framelab");
    let out = framelab()
        .args(["import", FIXTURE, "-o"])
        .arg(&run)
        .output()
        .unwrap();
    let names: Vec<_> = fs::read_dir(&small)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let _ = Command::new("umount").arg(&small).status();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(
        err.lines().count(),
        1,
        "one line, not the writer's too: {err}"
    );
    assert!(err.contains("the disk is full"), "{err}");
    assert!(
        names.is_empty(),
        "a failed import leaves nothing: {names:?}"
    );
}

#[test]
fn the_run_file_error_names_the_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    fs::write(&notes, "not a run file\n").unwrap();
    let out = framelab()
        .args(["run", "-o"])
        .arg(&notes)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line = error_line(&out);
    assert!(line.starts_with("error: refusing to write into "), "{line}");
    assert_eq!(line.matches("notes.txt").count(), 1, "{line}");
    assert_eq!(fs::read_to_string(&notes).unwrap(), "not a run file\n");
}
