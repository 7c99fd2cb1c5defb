//! The run group: every process framelab starts for a run is in one cgroup of its own, so
//! that its CPU is counted whole and nothing of it outlives the run — daemons that
//! double-fork and `setsid` out of their process group included, after a normal end and
//! after kill -9 of framelab. Without a cgroup (forced here with FRAMELAB_RUN_GROUP=tree)
//! the run goes on, saying so.

use crate::common;
use crate::common::session as session_common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::*;
use session_common::{running, skip, wait_for};

/// A service that double-forks and `setsid`s a `sleep` (it writes the sleep's pid to
/// `pid_file`), says it is ready once that runs `sleep` (not when a fixed time has passed:
/// the run after it may be short), and waits to be stopped.
fn daemonizing_service(pid_file: &Path) -> String {
    format!(
        "daemon=sh -c '(setsid sh -c \"echo \\$\\$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 300\" &); \
         until [ -s {p} ] && [ \"$(cat /proc/$(cat {p})/comm 2>/dev/null)\" = sleep ]; do sleep 0.01; done; \
         echo ready; exec sleep 300'",
        p = pid_file.display()
    )
}

fn pid_in(file: &Path) -> u32 {
    let mut text = String::new();
    wait_for("the daemon's pid", || {
        text = std::fs::read_to_string(file).unwrap_or_default();
        text.ends_with('\n')
    });
    text.trim().parse().unwrap()
}

/// Whether `pid` is gone (or only a zombie), waiting for it a while: framelab has returned,
/// so this waits only for the kernel to finish a kill already sent.
fn gone_soon(pid: u32) -> bool {
    gone_within(pid, 100)
}

/// Whether `pid` is gone (or only a zombie) within `tries` looks 20 ms apart: a bound far
/// above what is waited for, which only keeps a failing test from hanging.
fn gone_within(pid: u32, tries: u32) -> bool {
    for _ in 0..tries {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

fn kill(pid: u32) {
    // SAFETY: plain kill of a process the test made.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// The run group the report says the run had; `None` (after saying why) when this machine
/// gives framelab no cgroup, so a test of cgroup behaviour cannot run.
fn cgroup_of(test: &str, run_file: &Path) -> Option<serde_json::Value> {
    let group = report_json(run_file)["run_group"].clone();
    if group["mechanism"] == "tree" {
        skip(
            test,
            &format!("no cgroup for framelab here: {}", group["unavailable"]),
        );
        return None;
    }
    Some(group)
}

#[test]
fn a_daemonized_grandchild_of_a_service_ends_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "daemon"), dir.path().join("pid"));
    let out = with_daemonizing_service(&file, &pid_file, "auto", &["sh", "-c", "sleep 0.3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let daemon = pid_in(&pid_file);
    let dead = gone_soon(daemon);
    kill(daemon);
    assert!(dead, "the setsid'd sleep {daemon} outlived the run");
    let Some(group) = cgroup_of(
        "a_daemonized_grandchild_of_a_service_ends_with_the_run",
        &file,
    ) else {
        return;
    };
    let path = PathBuf::from(group["path"].as_str().unwrap());
    assert!(
        !path.exists(),
        "the run's cgroup {} is left",
        path.display()
    );
    let text = output_text(&framelab().arg("report").arg(&file).output().unwrap());
    assert!(text.contains("run group"), "{text}");
}

#[test]
fn kill_9_of_framelab_ends_a_daemonized_grandchild() {
    kill_9_ends_a_daemon(
        "kill_9_of_framelab_ends_a_daemonized_grandchild",
        "cgroup2",
        own_cgroup2_dir(),
    );
}

#[test]
fn with_cgroup_v1_kill_9_of_framelab_ends_a_daemonized_grandchild() {
    kill_9_ends_a_daemon(
        "with_cgroup_v1_kill_9_of_framelab_ends_a_daemonized_grandchild",
        "cgroup1",
        own_v1_dir("freezer"),
    );
}

/// This process's directory in the v1 hierarchy holding `controller`.
fn own_v1_dir(controller: &str) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find(|l| {
        l.contains(" - cgroup ")
            && l.rsplit(' ')
                .next()
                .is_some_and(|o| o.split(',').any(|o| o == controller))
    })?;
    let point = mount.split(' ').nth(4)?;
    Some(PathBuf::from(point).join(path.trim_start_matches('/')))
}

/// `framelab run` with `mechanism` (FRAMELAB_RUN_GROUP), a service that daemonizes a
/// grandchild writing its pid to `pid_file`, recording to `file`, then `command`.
fn with_daemonizing_service(
    file: &Path,
    pid_file: &Path,
    mechanism: &str,
    command: &[&str],
) -> std::process::Command {
    let mut framelab = framelab();
    framelab
        .env("FRAMELAB_RUN_GROUP", mechanism)
        .args([
            "run",
            "--grace",
            "1s",
            "--service",
            &daemonizing_service(pid_file),
        ])
        .args(["--ready", "daemon=regex:ready", "-o"])
        .arg(file)
        .arg("--")
        .args(command);
    framelab
}

/// kill -9 of framelab with `mechanism`, whose group framelab makes in `parent`.
fn kill_9_ends_a_daemon(test: &str, mechanism: &str, parent: Option<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "killed"), dir.path().join("pid"));
    let mut child = with_daemonizing_service(&file, &pid_file, mechanism, &["sleep", "300"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let daemon = pid_in(&pid_file);
    wait_for("the daemon to run sleep", || {
        std::fs::read_to_string(format!("/proc/{daemon}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    // framelab's first run group, made in its cgroup (the test's own) before the service.
    let group = parent.map(|d| d.join(format!("framelab-{}-1", child.id())));
    let in_a_cgroup = group.as_ref().is_some_and(|g| g.exists());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The guardian's grace (1 s) and then its kill: waited for, not timed.
    let dead = gone_within(daemon, 500);
    kill(daemon);
    if !in_a_cgroup {
        // Without a cgroup nothing can find a daemon that left framelab's tree.
        skip(test, &format!("framelab made no {mechanism} group here"));
        return;
    }
    assert!(
        dead,
        "the setsid'd sleep {daemon} outlived kill -9 of framelab"
    );
    let group = group.unwrap();
    wait_for("the guardian to remove the run's cgroup", || {
        !group.exists()
    });
}

/// This process's cgroup v2 directory (where framelab, its child, makes its groups).
fn own_cgroup2_dir() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(cgroup2_mount()?.join(path.trim_start_matches('/')))
}

/// A free TCP port on the loopback, found by binding port 0.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_bench_whose_service_daemonizes_and_binds_a_port_completes_both_runs() {
    let python = python();
    if std::process::Command::new(&python)
        .arg("-c")
        .arg("pass")
        .status()
        .map_or(true, |s| !s.success())
    {
        python_skip_or_fail(
            "a_bench_whose_service_daemonizes_and_binds_a_port_completes_both_runs",
            "no Python",
            "install python3",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, pids) = (dir.path().join("bench.framelab"), dir.path().join("pids"));
    // Daemonizes like `redis --daemonize yes`: double fork, setsid, then listens.
    let script = dir.path().join("daemon.py");
    std::fs::write(
        &script,
        "import os, socket, sys, time\n\
         port, pids = int(sys.argv[1]), sys.argv[2]\n\
         if os.fork() == 0:\n\
         \x20   os.setsid()\n\
         \x20   if os.fork() == 0:\n\
         \x20       s = socket.socket()\n\
         \x20       s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
         \x20       s.bind(('127.0.0.1', port))\n\
         \x20       s.listen(16)\n\
         \x20       open(pids, 'a').write(f'{os.getpid()}\\n')\n\
         \x20       while True:\n\
         \x20           s.accept()[0].close()\n\
         \x20   os._exit(0)\n\
         os.wait()\n\
         time.sleep(300)\n",
    )
    .unwrap();
    let port = free_port();
    let service = format!("db={python} {} {port} {}", script.display(), pids.display());
    let out = framelab()
        .args(["bench", "-n", "2", "--grace", "1s", "--service", &service])
        .args(["--ready", &format!("db=tcp:{port}"), "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", "sleep 0.2"])
        .output()
        .unwrap();
    let daemons: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let left: Vec<u32> = daemons.iter().copied().filter(|&p| !gone_soon(p)).collect();
    for &p in &daemons {
        kill(p);
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(daemons.len(), 2, "one daemon a run: {daemons:?}");
    assert!(left.is_empty(), "daemons {left:?} outlived the bench");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something still listens on {port}"
    );
}

/// A command that daemonizes two `sleep`s and ends 0.3 s after they run: both are rows of
/// the report, named, and were killed at the end. cgroup v1 once answered a second read of
/// its open `cgroup.procs` with the first's list, so a short run never saw them.
fn short_lived_daemons_are_rows(test: &str, mechanism: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (file, pids) = (temp_run(&dir, "daemons"), dir.path().join("pids"));
    let command = format!(
        "(setsid sh -c 'sleep 30 & echo $! >> {p}; sleep 31 & echo $! >> {p}' &); \
         until [ \"$(wc -l < {p} 2>/dev/null)\" = 2 ]; do sleep 0.01; done; sleep 0.3",
        p = pids.display()
    );
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", mechanism)
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", &command])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if cgroup_of(test, &file).is_none() {
        return;
    }
    let daemons: Vec<u64> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let doc = report_json(&file);
    for pid in &daemons {
        let row = doc["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"].as_u64() == Some(*pid));
        assert!(
            row.is_some_and(|r| r["name"] == "sleep"),
            "daemonized sleep {pid} is not a row: {}",
            doc["processes"]
        );
        assert!(gone_soon(*pid as u32), "sleep {pid} outlived the run");
        // Both in one line: `2 processes (… (sleep), … (sleep)) were still running …`.
        let line = (stderr(&out).lines())
            .find(|l| l.contains(&format!("{pid} (sleep)")))
            .map(str::to_owned)
            .unwrap_or_default();
        assert!(line.contains("still running"), "{}", stderr(&out));
    }
}

#[test]
fn short_lived_daemons_are_rows_of_a_cgroup_v2_run() {
    short_lived_daemons_are_rows("short_lived_daemons_are_rows_of_a_cgroup_v2_run", "cgroup2");
}

#[test]
fn short_lived_daemons_are_rows_of_a_cgroup_v1_run() {
    short_lived_daemons_are_rows("short_lived_daemons_are_rows_of_a_cgroup_v1_run", "cgroup1");
}

#[test]
fn the_groups_cpu_of_forked_burners_matches_their_rusage() {
    groups_cpu_matches_rusage(
        "the_groups_cpu_of_forked_burners_matches_their_rusage",
        "auto",
    );
}

#[test]
fn a_cgroup_v1_groups_cpu_of_forked_burners_matches_their_rusage() {
    groups_cpu_matches_rusage(
        "a_cgroup_v1_groups_cpu_of_forked_burners_matches_their_rusage",
        "cgroup1",
    );
}

fn groups_cpu_matches_rusage(test: &str, mechanism: &str) {
    let python = python();
    if std::process::Command::new(&python)
        .arg("-c")
        .arg("pass")
        .status()
        .map_or(true, |s| !s.success())
    {
        python_skip_or_fail(test, "no Python", "install python3");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (file, usage) = (temp_run(&dir, "burners"), dir.path().join("usage"));
    // 40 children of 30 ms of CPU each, three at a time: most live between two readings.
    // The command's own rusage (itself and its reaped children) is the independent figure.
    let script = format!(
        "import os, resource, time\n\
         def burn():\n\
         \x20   end = time.process_time() + 0.03\n\
         \x20   while time.process_time() < end: pass\n\
         running = 0\n\
         for _ in range(40):\n\
         \x20   if running == 3:\n\
         \x20       os.wait(); running -= 1\n\
         \x20   if os.fork() == 0:\n\
         \x20       burn(); os._exit(0)\n\
         \x20   running += 1\n\
         while running: os.wait(); running -= 1\n\
         total = 0\n\
         for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):\n\
         \x20   r = resource.getrusage(who); total += r.ru_utime + r.ru_stime\n\
         open('{}', 'w').write(f'{{total}}\\n')\n",
        usage.display()
    );
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", mechanism)
        .args(["run", "--sample-every", "200ms", "-o"])
        .arg(&file)
        .args(["--", &python, "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let Some(group) = cgroup_of(test, &file) else {
        return;
    };
    let rusage_s: f64 = std::fs::read_to_string(&usage)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let group_s = group["cpu_ns"].as_i64().unwrap() as f64 / 1e9;
    let ratio = group_s / rusage_s;
    eprintln!(
        "{} group {group_s:.4} s, rusage {rusage_s:.4} s, ratio {ratio:.4}",
        group["mechanism"]
    );
    assert!(
        (0.95..=1.05).contains(&ratio),
        "the group counted {group_s:.3} s, the command's rusage says {rusage_s:.3} s"
    );
    // The rows and the (not seen by name) row add up to the group.
    let doc = report_json(&file);
    let rows: i64 = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["user_ns"].as_i64().unwrap() + p["sys_ns"].as_i64().unwrap())
        .sum();
    let group_ns = group["cpu_ns"].as_i64().unwrap();
    // Rows read in clock ticks may each be a tick over; never short: the (not seen by
    // name) row holds what they miss.
    let tick_rows: i64 = doc["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cpu_resolution_ns"].as_i64().unwrap())
        .filter(|&r| r > 1_000)
        .sum();
    assert!(
        rows >= group_ns - 1_000_000 && rows <= group_ns + tick_rows,
        "rows {rows} against the group's {group_ns} (ticks {tick_rows}): {doc}"
    );
}

#[test]
fn without_a_cgroup_the_run_goes_on_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "tree"), dir.path().join("pid"));
    let out = with_daemonizing_service(&file, &pid_file, "tree", &["sh", "-c", "sleep 0.3"])
        .output()
        .unwrap();
    let daemon = pid_in(&pid_file);
    let dead = gone_soon(daemon);
    kill(daemon);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("run group: no cgroup"))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 1, "{}", stderr(&out));
    assert!(lines[0].contains("FRAMELAB_RUN_GROUP=tree"), "{}", lines[0]);
    // The tree walk still ends the daemon (framelab was its subreaper), and names it.
    assert!(dead, "the setsid'd sleep {daemon} outlived the run");
    let group = report_json(&file)["run_group"].clone();
    assert_eq!(group["mechanism"], "tree", "{group}");
    assert!(
        group["escaped"]
            .to_string()
            .contains(&format!("process {daemon} (sleep) was still running")),
        "{group}"
    );

    // A cgroup directory that cannot be had: the same fallback, saying what was wrong.
    let missing = dir.path().join("no-such-cgroup");
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", "cgroup2")
        .env("FRAMELAB_CGROUP_ROOT", &missing)
        .args(["run", "-o"])
        .arg(temp_run(&dir, "missing"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("run group: no cgroup") && err.contains(&missing.display().to_string()),
        "{err}"
    );

    // A mechanism that does not exist is bad input: one line, non-zero.
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", "jail")
        .args(["run", "-o"])
        .arg(temp_run(&dir, "bad"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        error_line(&out).contains("FRAMELAB_RUN_GROUP=\"jail\""),
        "{}",
        stderr(&out)
    );
}

/// The cgroup2 mount, from mountinfo (never assumed).
fn cgroup2_mount() -> Option<PathBuf> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .ok()?
        .lines()
        .find(|l| l.contains(" - cgroup2 "))
        .and_then(|l| l.split(' ').nth(4))
        .map(PathBuf::from)
}

#[test]
fn a_process_that_moves_out_of_the_group_is_still_ended_and_named() {
    let test = "a_process_that_moves_out_of_the_group_is_still_ended_and_named";
    let Some(mount) = cgroup2_mount() else {
        skip(test, "no cgroup2 mount");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "escape"), dir.path().join("pid"));
    // It moves itself to the root cgroup (root may), then daemonizes; the command ends
    // once it has written its pid, after the move (not after a time a loaded machine can
    // outlast).
    let escape = format!(
        "(setsid sh -c \"echo 0 > {m}/cgroup.procs; echo \\$\\$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 300\" &); \
         i=0; until [ -s {p} ] || [ $i -ge 6000 ]; do sleep 0.01; i=$((i + 1)); done",
        m = mount.display(),
        p = pid_file.display()
    );
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", "cgroup2")
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", &escape])
        .output()
        .unwrap();
    let escaped = pid_in(&pid_file);
    let dead = gone_soon(escaped);
    kill(escaped);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let Some(group) = cgroup_of(test, &file) else {
        return;
    };
    assert!(dead, "{escaped}, which left the group, outlived the run");
    let said = group["escaped"].to_string();
    assert!(
        said.contains(&format!(
            "process {escaped} (sleep) had left the run's cgroup"
        )),
        "{group}"
    );
}

#[test]
fn ctrl_c_ends_a_daemonized_grandchild() {
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "interrupted"), dir.path().join("pid"));
    let mut child = with_daemonizing_service(&file, &pid_file, "auto", &["sleep", "301"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let daemon = pid_in(&pid_file);
    // 301: the service's own `sleep 300` must not be taken for the command.
    wait_for("the command to start", || {
        session_common::descendants(child.id()).iter().any(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.split('\0').eq(["sleep", "301", ""]))
        })
    });
    // SAFETY: SIGINT to the framelab this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let dead = gone_soon(daemon);
    kill(daemon);
    // 130: interrupted by SIGINT, as a shell says.
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        dead,
        "the setsid'd sleep {daemon} outlived Ctrl-C of framelab"
    );
}

/// A read-only cgroup2 mount (root mounts the hierarchy once more), unmounted on drop: what
/// a container's /sys/fs/cgroup is.
struct ReadOnlyCgroup2 {
    dir: tempfile::TempDir,
}

impl Drop for ReadOnlyCgroup2 {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn a_read_only_cgroup_filesystem_means_the_fallback_and_a_line_saying_so() {
    let test = "a_read_only_cgroup_filesystem_means_the_fallback_and_a_line_saying_so";
    if !session_common::is_root() {
        skip(test, "mounting cgroup2 needs root");
        return;
    }
    let ro = ReadOnlyCgroup2 {
        dir: tempfile::tempdir().unwrap(),
    };
    let mounted = std::process::Command::new("mount")
        .args(["-t", "cgroup2", "-o", "ro", "none"])
        .arg(ro.dir.path())
        .status();
    if !mounted.as_ref().is_ok_and(|s| s.success()) {
        skip(
            test,
            &format!("mount -t cgroup2 -o ro failed here ({mounted:?})"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "ro");
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", "cgroup2")
        .env("FRAMELAB_CGROUP_ROOT", ro.dir.path())
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", "exit 0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("run group:"))
        .map(str::to_owned)
        .collect();
    assert_eq!(said.len(), 1, "{}", stderr(&out));
    assert!(
        said[0].contains("read-only") && said[0].contains("FRAMELAB_CGROUP_ROOT"),
        "{}",
        said[0]
    );
    let group = report_json(&file)["run_group"].clone();
    assert_eq!(group["mechanism"], "tree", "{group}");
    assert!(
        group["unavailable"].to_string().contains("read-only"),
        "{group}"
    );
}

/// A command that makes a cgroup of its own below the run's and puts a daemonized sleep in
/// it (writing the sleep's pid to `pid_file`), then runs `then`.
fn makes_its_own_cgroup(mount: &Path, pid_file: &Path, then: &str) -> Vec<String> {
    let script = format!(
        "G={}$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir $G/inner || exit 3; \
         (setsid sh -c \"echo 0 > $G/inner/cgroup.procs; echo \\$\\$ > {}; exec sleep 300\" &); {then}",
        mount.display(),
        pid_file.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

#[test]
fn a_cgroup_the_command_makes_inside_the_runs_is_emptied_and_removed_too() {
    let test = "a_cgroup_the_command_makes_inside_the_runs_is_emptied_and_removed_too";
    let (Some(mount), Some(own)) = (cgroup2_mount(), own_cgroup2_dir()) else {
        skip(test, "no cgroup2 mount");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "inner"), dir.path().join("pid"));
    let out = framelab()
        .env("FRAMELAB_RUN_GROUP", "cgroup2")
        .args(["run", "-o"])
        .arg(&file)
        .arg("--")
        .args(makes_its_own_cgroup(&mount, &pid_file, "sleep 0.3"))
        .output()
        .unwrap();
    let Some(group) = cgroup_of(test, &file) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let daemon = pid_in(&pid_file);
    let dead = gone_soon(daemon);
    kill(daemon);
    assert!(
        dead,
        "the sleep {daemon} in the command's own cgroup outlived the run"
    );
    let path = PathBuf::from(group["path"].as_str().unwrap());
    assert!(!path.exists(), "{} is left", path.display());

    // The same after kill -9 of framelab: the guardian empties and removes both.
    let pid_file = dir.path().join("pid9");
    let mut child = framelab()
        .env("FRAMELAB_RUN_GROUP", "cgroup2")
        .args(["run", "--grace", "1s", "-o"])
        .arg(temp_run(&dir, "inner9"))
        .arg("--")
        .args(makes_its_own_cgroup(&mount, &pid_file, "sleep 300"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let daemon = pid_in(&pid_file);
    let group = own.join(format!("framelab-{}-1", child.id()));
    wait_for("the inner cgroup", || group.join("inner").exists());
    child.kill().unwrap();
    child.wait().unwrap();
    let dead = gone_within(daemon, 500);
    kill(daemon);
    assert!(
        dead,
        "the sleep {daemon} in the command's own cgroup outlived kill -9"
    );
    wait_for("the guardian to remove the run's cgroup", || {
        !group.exists()
    });
}

/// framelab as init of a pid namespace of its own: its guardian, reparented to it, is not
/// taken for a leftover of the run (it was killed and named) nor for a thread of the run.
#[test]
fn framelab_as_init_of_a_pid_namespace_keeps_its_guardian_out_of_the_run() {
    let test = "framelab_as_init_of_a_pid_namespace_keeps_its_guardian_out_of_the_run";
    if unsafe { libc::geteuid() } != 0 {
        skip(test, "a pid namespace needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "ns");
    let out = std::process::Command::new("unshare")
        .args(["-p", "-f", "--mount-proc"])
        .arg(env!("CARGO_BIN_EXE_framelab"))
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", "sleep 0.3"])
        .output();
    let Ok(out) = out else {
        skip(test, "no unshare");
        return;
    };
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("framelab-guard"), "{}", stderr(&out));
    let report = stdout(&framelab().arg("report").arg(&file).output().unwrap());
    assert!(!report.contains("framelab-guard"), "{report}");
}

/// A background job left in the command's process group is killed when the command ends,
/// and named: it was killed with no word.
#[test]
fn a_background_job_of_the_command_is_named_when_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (file, pid_file) = (temp_run(&dir, "bg"), dir.path().join("pid"));
    let command = format!("sleep 30 & echo $! > {}; sleep 0.2", pid_file.display());
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", &command])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pid = pid_in(&pid_file);
    assert!(gone_soon(pid), "the background sleep outlived the run");
    assert!(
        stderr(&out).contains(&format!(
            "process {pid} (sleep) was still running in the command's process group"
        )),
        "{}",
        stderr(&out)
    );
}

/// Six background jobs left by the command: one warning and one note naming how many, the
/// first three and what was done, not six of each (the run file keeps a line each).
#[test]
fn many_leftovers_are_one_warning_and_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "many");
    let command = "for i in 1 2 3 4 5 6; do sleep 30 & done; sleep 0.2";
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", command])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stderr(&out);
    let warned: Vec<&str> = (said.lines())
        .filter(|l| l.contains("still running"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", stderr(&out));
    assert!(
        warned[0].contains("6 processes (")
            && warned[0].contains(" (sleep) and 3 more) were still running in the command's process group when the command ended: killed with it"),
        "{}",
        warned[0]
    );
    let doc = report_json(&file);
    let notes: Vec<&str> = (doc["notes"].as_array().unwrap().iter())
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("still running"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("Run group: 6 processes ("),
        "{}",
        notes[0]
    );
    assert_eq!(doc["run_group"]["escaped"].as_array().unwrap().len(), 6);
}

/// `--duration` stops the command with SIGINT; its trap handler then burns 300 ms of CPU
/// before exiting. That is after the window, in no figure: a note says how much, from what
/// the cgroup counted until the command ended.
#[test]
fn cpu_used_while_being_stopped_is_a_note() {
    let test = "cpu_used_while_being_stopped_is_a_note";
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "trap");
    let testprog = example("testprog");
    let command = format!("trap '{testprog} cpu 300; exit 0' INT; while :; do sleep 0.05; done");
    // A long grace: the handler is never cut short by SIGTERM.
    let out = framelab()
        .args(["run", "--duration", "1s", "--grace", "60s", "-o"])
        .arg(&file)
        .args(["--", "sh", "-c", &command])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let Some(group) = cgroup_of(test, &file) else {
        return;
    };
    // testprog burns until its CPU clock reads 300 ms; the cgroup counts µs.
    let after_ns = group["after_window_cpu_ns"].as_i64().unwrap_or(0);
    assert!(after_ns >= 299_000_000, "{group}");
    let doc = report_json(&file);
    let said = doc["notes"].to_string();
    assert!(
        said.contains("After the window: the run's processes used "),
        "{said}"
    );
}
