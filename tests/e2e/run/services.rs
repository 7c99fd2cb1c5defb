//! `--service`: started before the command, ready when it says so, accounted under its own
//! role, and gone after the run however it ends — a normal end, a crash of the command,
//! Ctrl-C, or kill -9 of framelab.

use crate::common;

use std::path::Path;
use std::process::Stdio;

use common::session::{running, wait_for};
use common::*;

fn pid_in(file: &Path) -> u32 {
    wait_for("the service wrote its pid", || {
        std::fs::read_to_string(file).is_ok_and(|s| s.ends_with('\n'))
    });
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A service that writes its pid, says it is up, and burns CPU until stopped.
fn burner(pid_file: &Path) -> String {
    format!(
        "burner=sh -c 'echo $$ > {}; echo listening; while :; do :; done'",
        pid_file.display()
    )
}

#[test]
fn a_service_runs_beside_the_command_is_accounted_under_its_name_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, pid_file) = (temp_run(&dir, "svc"), dir.path().join("pid"));
    // The command lasts until the service has burnt 20 clock ticks (200 ms) more, however
    // busy the machine (a half-second sleep once left it under 100 ms on a loaded runner).
    let wait_for_the_burn = format!(
        "pid=$(cat {}); ticks() {{ set -- $(cut -d')' -f2 /proc/$pid/stat); echo $((${{12}} + ${{13}})); }}; \
         start=$(ticks); i=0; \
         while [ $(($(ticks) - start)) -lt 20 ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i + 1)); done",
        pid_file.display()
    );
    let out = framelab()
        .args(["run", "--service", &burner(&pid_file)])
        .args(["--ready", "burner=regex:^listening$", "-o"])
        .arg(&path)
        .args(["--", "sh", "-c", &wait_for_the_burn])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let service_pid = pid_in(&pid_file);
    assert!(!running(service_pid), "the service outlived the run");
    let run = load(&path);
    let row = run
        .processes
        .iter()
        .find(|p| p.pid == service_pid)
        .unwrap_or_else(|| panic!("no row for the service: {:#?}", run.processes));
    assert_eq!(row.role, framelab::model::ProcessRole::Service);
    assert_eq!(row.service, "burner");
    // It burnt 200 ms while the command ran (and some more before it was stopped).
    assert!(row.user_ns + row.sys_ns >= 190_000_000, "{row:?}");
    let analysis = framelab::analyze::analyze(&run);
    let roles = framelab::analyze::cpu::role_cpu(&analysis.processes, analysis.window.length_ns);
    assert!(roles.iter().any(|r| r.role == "burner"), "{roles:?}");
    assert!(roles.iter().any(|r| r.role == "command"), "{roles:?}");
}

#[test]
fn a_service_is_gone_after_the_command_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let (path, pid_file) = (temp_run(&dir, "crash"), dir.path().join("pid"));
    let out = framelab()
        .args(["run", "--service", &burner(&pid_file)])
        .args(["--ready", "burner=regex:listening", "-o"])
        .arg(&path)
        .args(["--", "sh", "-c", "kill -SEGV $$"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        !running(pid_in(&pid_file)),
        "the service outlived the crash"
    );
}

#[test]
fn a_service_is_gone_after_ctrl_c_and_after_kill_9_of_framelab() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        let (path, pid_file) = (temp_run(&dir, "sig"), dir.path().join("pid"));
        let mut framelab = framelab()
            .args(["run", "--service", &burner(&pid_file)])
            .args(["--ready", "burner=regex:listening", "-o"])
            .arg(&path)
            .args(["--", "sleep", "100"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let service_pid = pid_in(&pid_file);
        // The command starts once the service is ready; then the signal.
        wait_for("the command started", || {
            std::fs::read_to_string(format!("/proc/{}/task/{0}/children", framelab.id()))
                .is_ok_and(|c| c.split_whitespace().count() >= 2)
        });
        unsafe { libc::kill(framelab.id() as i32, signal) };
        framelab.wait().unwrap();
        wait_for(&format!("the service gone after signal {signal}"), || {
            !running(service_pid)
        });
    }
}

#[test]
fn a_service_that_ignores_sigint_and_sigterm_is_killed_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let (path, pid_file) = (temp_run(&dir, "stubborn"), dir.path().join("pid"));
    let service = format!(
        "stubborn=sh -c 'trap \"\" INT TERM; echo $$ > {}; echo up; while :; do sleep 0.05; done'",
        pid_file.display()
    );
    let out = framelab()
        .args(["run", "--grace", "200ms", "--service", &service])
        .args(["--ready", "stubborn=regex:up", "-o"])
        .arg(&path)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    for said in [
        "service stubborn ignored SIGINT",
        "service stubborn ignored SIGTERM",
        "service stubborn was killed (SIGKILL)",
    ] {
        assert!(err.contains(said), "{said} in {err}");
    }
    assert!(!running(pid_in(&pid_file)));
}

#[test]
fn services_that_never_get_ready_are_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "bad");
    let run = |service: &str, ready: &str, extra: &[&str]| {
        let out = framelab()
            .args(["run", "--service", service, "--ready", ready])
            .args(extra)
            .arg("-o")
            .arg(&path)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0));
        error_line(&out)
    };
    let early = run(
        "db=sh -c 'echo no config >&2; exit 3'",
        "db=regex:ready",
        &[],
    );
    assert!(
        early.contains("service db exited (exit code 3) before it was ready")
            && early.contains("no config"),
        "{early}"
    );
    let never = run(
        "db=sleep 30",
        "db=regex:ready",
        &["--ready-timeout", "300ms"],
    );
    assert!(never.contains("service db was not ready"), "{never}");
    assert!(!path.exists(), "a run that never started leaves no file");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let busy = run("web=sleep 30", &format!("web=tcp:{port}"), &[]);
    assert!(busy.contains("already accepts connections"), "{busy}");

    for (args, expected) in [
        (
            vec!["--service", "a=sleep 1", "--service", "a=sleep 2"],
            "two services are named a",
        ),
        (
            vec!["--service", "command=sleep 1"],
            "the measured command's role",
        ),
        (vec!["--ready", "x=tcp:1"], "no service named x"),
        // Without any service the line listed them as "()".
        (
            vec!["--pin", "db=0"],
            "no service named db (start one with --service NAME=CMD)",
        ),
        (
            vec!["--service", "a=sleep 1", "--pin", "a=99999"],
            "CPU 99999 is not available",
        ),
    ] {
        let out = framelab()
            .arg("run")
            .args(&args)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0));
        assert!(
            error_line(&out).contains(expected),
            "{args:?}: {}",
            error_line(&out)
        );
    }
}

#[test]
fn a_service_ready_on_a_tcp_port_serves_the_command() {
    let Ok(python) = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
    else {
        eprintln!("skipped: no python3 for the HTTP server");
        return;
    };
    let python = String::from_utf8_lossy(&python.stdout).trim().to_owned();
    let port = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "http");
    let client =
        format!("import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/').read()");
    let out = framelab()
        .args(["run", "--service"])
        .arg(format!(
            "web={python} -m http.server --bind 127.0.0.1 {port}"
        ))
        .args(["--ready", &format!("web=tcp:127.0.0.1:{port}"), "-o"])
        .arg(&path)
        .args(["--", &python, "-c", &client])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The server is gone: its port is free again.
    wait_for("the port freed", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    });
}

#[test]
fn a_bench_starts_its_services_fresh_for_every_run_and_compares_their_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let (file, pids) = (dir.path().join("svc.framelab"), dir.path().join("pids"));
    let service = format!(
        "burner=sh -c 'echo $$ >> {}; echo listening; while :; do :; done'",
        pids.display()
    );
    let out = framelab()
        .args([
            "bench",
            "-n",
            "2",
            "--format",
            "json",
            "--service",
            &service,
        ])
        .args(["--ready", "burner=regex:listening"])
        .args(["--metric", r"jobs:higher=done (\d+)"])
        .args(["--variant", "short=sh -c 'sleep 0.2; echo done 100'"])
        .args(["--variant", "long=sh -c 'sleep 0.4; echo done 100'", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // One fresh service per run, every one gone.
    let started: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(started.len(), 4, "{started:?}");
    assert!(started.iter().all(|&pid| !running(pid)), "{started:?}");
    // The commands' own output shares bench's stdout: the comparison is read back instead.
    let all = framelab()
        .args(["compare", "--format", "json"])
        .arg(&file)
        .output()
        .unwrap();
    let c: serde_json::Value = serde_json::from_str(&stdout(&all)).unwrap();
    let keys = c["metrics"].to_string();
    assert!(
        keys.contains("\"cpu.burner\"") && keys.contains("\"cpu.command\""),
        "{keys}"
    );

    // The service's CPU per unit of the command's own metric (100 jobs a run), when asked.
    let per = framelab()
        .args([
            "compare",
            "--format",
            "json",
            "--show",
            "cpu.burner,cpu_per.jobs.burner",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(per.status.code(), Some(0), "{}", stderr(&per));
    let c: serde_json::Value = serde_json::from_str(&stdout(&per)).unwrap();
    let rows = c["groups"][0]["comparisons"][0]["rows"].as_array().unwrap();
    let median = |metric: &str| {
        let row = rows.iter().find(|r| r["metric"] == metric).unwrap();
        row["variant"]["median"].as_f64().unwrap()
    };
    let (cpu_s, per_job_us) = (median("cpu.burner"), median("cpu_per.jobs.burner"));
    assert!(cpu_s > 0.0);
    assert!(
        ((per_job_us * 100.0) / (cpu_s * 1e6) - 1.0).abs() < 1e-9,
        "{per_job_us} µs a job, {cpu_s} s in all"
    );
}

/// `--prepare` runs once the run's services are ready (it used to run before they were
/// started), and `--service`/`--pin VARIANT:…` give one variant its own server build and
/// CPUs in place of those given for all.
#[test]
fn prepare_runs_after_the_services_and_a_variant_gets_its_own_server_and_pin() {
    let dir = tempfile::tempdir().unwrap();
    let (file, log, served) = (
        dir.path().join("v.framelab"),
        dir.path().join("log"),
        dir.path().join("served"),
    );
    let (l, s) = (log.display(), served.display());
    // The "server" says which build it is in a file, then that it is ready.
    let server = |variant: &str, build: &str| {
        format!("{variant}server=sh -c 'echo {build} > {s}; echo ready; exec sleep 60'")
    };
    let out = framelab()
        .args(["bench", "-n", "2", "--shell"])
        .args(["--service", &server("", "base")])
        .args(["--service", &server("v2:", "v2-build")])
        .args(["--ready", "server=regex:ready"])
        .args(["--pin", "v2:command=0"])
        .args([
            "--prepare",
            &format!("echo prepare $FRAMELAB_VARIANT $(cat {s}) >> {l}"),
        ])
        .args(["--variant", &format!("v1=echo run v1 $(cat {s}) >> {l}")])
        .args(["--variant", &format!("v2=echo run v2 $(cat {s}) >> {l}")])
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines,
        "prepare v1 base\nrun v1 base\nprepare v2 v2-build\nrun v2 v2-build\n\
         prepare v1 base\nrun v1 base\nprepare v2 v2-build\nrun v2 v2-build\n"
    );
    // v2's command ran on CPU 0, and its fingerprint says so; v1's was not pinned.
    let e = framelab::store::load_experiment(&file).unwrap().unwrap();
    let prints = framelab::store::load_fingerprints(&file).unwrap();
    for r in &e.runs {
        let pinned = &prints[&r.run_id].pinned_cpus;
        match r.variant.as_str() {
            "v2" => assert_eq!(pinned, "0"),
            _ => assert_eq!(pinned, ""),
        }
    }

    // A prefix naming no variant is refused before anything runs, as is one in `run`.
    let typo = framelab()
        .args(["bench", "-n", "2", "--shell"])
        .args(["--service", &server("v3:", "x")])
        .args(["--variant", "v1=true", "--variant", "v2=true"])
        .arg("-o")
        .arg(dir.path().join("typo.framelab"))
        .output()
        .unwrap();
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        error_line(&typo).contains("no variant is named v3; the variants are v1, v2"),
        "{}",
        stderr(&typo)
    );
    let run = framelab()
        .args(["run", "--service", &server("v2:", "x"), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        error_line(&run).contains("'v2:' gives it to one variant of a framelab bench"),
        "{}",
        stderr(&run)
    );
}
