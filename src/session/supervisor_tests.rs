//! The supervisor's transitions, driven by a scripted executor (`executor_mock.rs`) and a
//! recording that keeps what it was told: no process is spawned, and time moves only when
//! the supervisor sleeps.

use std::time::Duration;

use log::Level;

use super::*;
use crate::said_in_tests::said_while;
use crate::services::{Ready, ServiceSpec};
use crate::session::executor_mock::{Call, MockExecutor, MockService, COMMAND_PID};
use crate::session::launch::Reaped;
use crate::session::options::{LaunchOptions, ServiceOptions, WindowOptions};
use crate::session::prepare::Prepare;
use crate::session::rungroup::{Placement, RunGroup};

/// What the supervisor recorded, in order; its clock follows the executor's.
#[derive(Default)]
struct Recorded {
    now_ns: i64,
    events: Vec<String>,
    exit: Option<ExitInfo>,
    interrupted_by: Option<i32>,
    /// `drain` fails from this call on (a full disk).
    drain_fails_after: Option<usize>,
    drains: usize,
    /// When each drain and each commit came (ns on the executor's clock).
    drained_at: Vec<i64>,
    committed_at: Vec<i64>,
    first_span_ns: Option<i64>,
    /// Every ring's producer wakes the collector (`Recording::producers_wake`).
    producers_wake: bool,
    /// When each reading of the processes came.
    sampled_at: Vec<i64>,
    /// The event before each time the window was said settled (the spill may start).
    settled_after: Vec<String>,
    /// A drain is due only this long after the last (`Recording::drain_due`, spilling).
    drain_every_ns: Option<i64>,
    /// Another thread reads the processes (`Recording::sample_waits_for_ticks`).
    sweeps_elsewhere: bool,
    /// `reaps_done` calls, each after the events then recorded.
    reaps_done_after: Vec<usize>,
    /// When the window was opened (or opened again).
    opened_at: Vec<i64>,
    /// The stop signals said sent.
    stops: Vec<crate::model::StopSignal>,
}

impl Recording for Recorded {
    fn drain(&mut self) -> Result<f64> {
        self.drains += 1;
        self.drained_at.push(self.now_ns);
        if self.drain_fails_after.is_some_and(|n| self.drains > n) {
            anyhow::bail!("disk full");
        }
        Ok(0.0)
    }
    fn now_ns(&self) -> i64 {
        self.now_ns
    }
    fn before_reaping(&mut self, pid: u32) {
        self.events.push(format!("zombie {pid}"));
    }
    fn reaped(&mut self, reaped: &Reaped) {
        self.events.push(format!("reaped {}", reaped.pid));
    }
    fn reaps_done(&mut self) {
        self.reaps_done_after.push(self.events.len());
    }
    fn sample_waits_for_ticks(&self) -> bool {
        self.sweeps_elsewhere
    }
    fn first_span_ns(&self) -> Option<i64> {
        self.first_span_ns
    }
    fn opening_frame_start_ns(&self) -> Option<i64> {
        None
    }
    fn open_window(&mut self, _pid: u32, start_ns: i64) {
        self.events.push(format!("open {start_ns}"));
        self.opened_at.push(self.now_ns);
    }
    fn reopen_window(&mut self, _pid: u32, start_ns: i64) {
        self.events.push(format!("reopen {start_ns}"));
        self.opened_at.push(self.now_ns);
    }
    fn close_window(&mut self, _pid: u32, reason: EndReason) {
        self.events.push(format!("close {reason:?}"));
    }
    fn empty_window(&mut self) {
        self.events.push("empty".into());
    }
    fn window_settled(&mut self) {
        let last = self.events.last().cloned().unwrap_or_default();
        self.settled_after.push(last);
    }
    fn interrupted_by(&mut self, signal: Option<i32>) {
        self.interrupted_by = signal;
    }
    fn stopping_with(&mut self, stop: crate::model::StopSignal) {
        self.stops.push(stop);
    }
    fn set_exit(&mut self, exit: ExitInfo) {
        self.exit = Some(exit);
    }
    fn read_processes(&mut self, _pid: u32) {}
    fn sample(&mut self, _pid: u32) {
        self.sampled_at.push(self.now_ns);
    }
    fn refresh_frames_seen(&mut self) -> u64 {
        0
    }
    fn commit(&mut self) -> Result<()> {
        self.committed_at.push(self.now_ns);
        Ok(())
    }
    fn warmup_fell_back_to_launch(&mut self) {
        self.events.push("fell back".into());
    }
    fn producers_wake(&self) -> bool {
        self.producers_wake
    }
    fn drain_due(&self) -> bool {
        let last = self.drained_at.last().copied();
        match (self.drain_every_ns, last) {
            (Some(every), Some(last)) => self.now_ns - last >= every,
            _ => true,
        }
    }
    fn next_drain_within(&self) -> Option<Duration> {
        let every = self.drain_every_ns?;
        let since = self
            .drained_at
            .last()
            .map_or(every, |last| self.now_ns - last);
        Some(Duration::from_nanos((every - since).max(0) as u64))
    }
}

fn options(grace_s: u64, duration: Option<Duration>) -> RunOptions {
    RunOptions {
        command: vec!["pipeline".into()],
        window: WindowOptions {
            duration,
            ..WindowOptions::default()
        },
        launch: LaunchOptions {
            grace: Duration::from_secs(grace_s),
            ..LaunchOptions::default()
        },
        ..RunOptions::default()
    }
}

/// `opts` with one service, `db`, ready as `ready` says (5 s to get ready).
fn with_db(opts: RunOptions, ready: Ready) -> RunOptions {
    RunOptions {
        services: ServiceOptions {
            specs: vec![ServiceSpec {
                name: "db".into(),
                argv: vec!["db".into()],
                ready,
                cpus: Vec::new(),
            }],
            ready_timeout: Duration::from_secs(5),
        },
        ..opts
    }
}

fn ready_line() -> Ready {
    Ready::Line(regex::Regex::new("ready").unwrap())
}

/// The mock's pid of the first service.
const DB_PID: u32 = 1000;

fn spawn(opts: &RunOptions) -> Spawn<'_> {
    Spawn {
        argv: &opts.command,
        env: &[],
        cpus: &[],
        stdio: Default::default(),
        profile: opts.profile,
        join: Placement::default(),
    }
}

/// A supervisor that started its services: whether they got ready (each service's
/// leader and name), or why not.
fn starting(
    opts: &RunOptions,
    exec: MockExecutor,
) -> (Supervisor<'_, MockExecutor>, Result<Vec<(u32, String)>>) {
    let mut supervisor = Supervisor::new(opts, exec);
    assert_eq!(supervisor.state(), State::Prepare);
    let started = supervisor.start_services(&[], Placement::default());
    (supervisor, started)
}

/// A supervisor whose services are ready.
fn services_ready(opts: &RunOptions, exec: MockExecutor) -> Supervisor<'_, MockExecutor> {
    let (supervisor, started) = starting(opts, exec);
    started.unwrap();
    assert_eq!(supervisor.state(), State::ServicesReady);
    supervisor
}

/// A supervisor whose command runs: its services ready, its `--prepare` (if any) done.
fn command_running(opts: &RunOptions, exec: MockExecutor) -> Supervisor<'_, MockExecutor> {
    let mut supervisor = services_ready(opts, exec);
    supervisor.run_prepare().unwrap();
    assert_eq!(
        supervisor.start_command(spawn(opts)).unwrap().pid,
        COMMAND_PID
    );
    assert_eq!(supervisor.state(), State::Command);
    supervisor
}

/// Drives a supervisor to its end with this executor: services, --prepare, the command,
/// the watch, the accounting. The recording follows the executor's clock.
fn run(opts: &RunOptions, exec: MockExecutor) -> (MockExecutor, Recorded, Result<()>) {
    let mut rec = Recorded::default();
    let (exec, outcome) = run_with(opts, exec, &mut rec);
    (exec, rec, outcome)
}

fn run_with(
    opts: &RunOptions,
    exec: MockExecutor,
    rec: &mut Recorded,
) -> (MockExecutor, Result<()>) {
    let mut supervisor = command_running(opts, exec);
    supervisor.start_watching(rec);
    let outcome = loop {
        rec.now_ns = supervisor.executor().elapsed.as_nanos() as i64;
        match supervisor.tick(rec) {
            Ok(true) => break supervisor.drain(rec),
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        assert!(
            supervisor.executor().elapsed < Duration::from_secs(600),
            "the run never ended: {:?}",
            supervisor.executor().calls
        );
    };
    if outcome.is_ok() {
        assert_eq!(supervisor.state(), State::Drain);
    }
    let (_, escaped) = supervisor.account(outcome.is_err(), &mut RunGroup::untracked(), &[]);
    assert_eq!(escaped, supervisor.executor().escaped);
    assert_eq!(supervisor.state(), State::Account);
    let Supervisor { exec, .. } = supervisor;
    (exec, outcome)
}

const SIGINT: i32 = libc::SIGINT;
const SIGTERM: i32 = libc::SIGTERM;
const SIGKILL: i32 = libc::SIGKILL;

/// The call before the last, which ends the run's group.
fn before_the_group_ends(exec: &MockExecutor) -> &Call {
    let n = exec.calls.len();
    assert_eq!(exec.calls[n - 1], Call::EndRunGroup, "{:?}", exec.calls);
    &exec.calls[n - 2]
}

fn signals_only(exec: &MockExecutor) -> Vec<i32> {
    exec.signals().into_iter().map(|(s, _)| s).collect()
}

#[test]
fn a_service_that_never_gets_ready_starts_nothing_and_is_stopped() {
    let opts = with_db(options(2, None), ready_line());
    let exec = MockExecutor {
        services: vec![MockService {
            ready_after: None,
            ..MockService::new("db")
        }],
        ..MockExecutor::default()
    };
    let (mut supervisor, started) = starting(&opts, exec);
    let e = started.unwrap_err();
    assert!(
        e.to_string().starts_with(
            "service db was not ready when a line of its output matches /ready/ after 5s"
        ),
        "{e}"
    );
    assert_eq!(supervisor.state(), State::NotStarted);
    let exec = supervisor.executor();
    // The --ready-timeout on the executor's clock, then SIGINT, which stops it.
    assert_eq!(
        exec.service_signals("db"),
        [
            (SIGINT, Duration::from_secs(5)),
            (SIGKILL, Duration::from_millis(5005))
        ]
    );
    assert_eq!(exec.calls.last(), Some(&Call::Unregister(DB_PID)));
    assert!(
        !exec.spawned(),
        "the command never starts: {:?}",
        exec.calls
    );
}

#[test]
fn a_service_ready_after_a_delay_starts_the_command_then() {
    let opts = with_db(options(2, None), Ready::Delay(Duration::from_millis(1500)));
    let (mut supervisor, started) = starting(&opts, MockExecutor::default());
    let roots = started.unwrap();
    assert_eq!(roots, [(DB_PID, "db".to_owned())]);
    assert_eq!(supervisor.state(), State::ServicesReady);
    let waited = supervisor.executor().elapsed;
    assert!(
        (Duration::from_millis(1500)..Duration::from_millis(1511)).contains(&waited),
        "{waited:?}"
    );
}

#[test]
fn a_service_that_exits_before_it_is_ready_says_how() {
    let opts = with_db(options(2, None), ready_line());
    let exec = MockExecutor {
        services: vec![MockService {
            ready_after: None,
            exits_after: Some((Duration::from_millis(200), 3 << 8)),
            ..MockService::new("db")
        }],
        ..MockExecutor::default()
    };
    let (mut supervisor, started) = starting(&opts, exec);
    let e = started.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("service db exited (exit code 3) before it was ready"),
        "{e}"
    );
    let exec = supervisor.executor();
    // Its leftovers are killed at once, not given a grace period.
    assert_eq!(
        exec.service_signals("db"),
        [(SIGKILL, Duration::from_millis(200))]
    );
    assert!(exec.called(&Call::Unregister(DB_PID)));
}

#[test]
fn a_port_taken_before_the_service_starts_is_refused() {
    let opts = with_db(
        options(2, None),
        Ready::Tcp {
            host: "127.0.0.1".into(),
            port: 5432,
        },
    );
    let exec = MockExecutor {
        port_taken: true,
        ..MockExecutor::default()
    };
    let (mut supervisor, started) = starting(&opts, exec);
    let e = started.unwrap_err();
    assert!(e.to_string().contains("already accepts connections"), "{e}");
    assert!(supervisor.executor().calls.is_empty(), "nothing started");
}

#[test]
fn a_service_that_ignores_stop_signals_is_killed_after_each_grace_period() {
    let opts = with_db(options(2, None), Ready::Started);
    let exec = MockExecutor {
        services: vec![MockService {
            ignores: vec![SIGINT, SIGTERM],
            ..MockService::new("db")
        }],
        exits_after: Some((Duration::from_millis(100), 0)),
        ..MockExecutor::default()
    };
    let mut rec = Recorded::default();
    let mut supervisor = command_running(&opts, exec);
    supervisor.watch(&mut rec).unwrap();
    let stopping_at = supervisor.executor().elapsed;
    let (outputs, _) = supervisor.account(false, &mut RunGroup::untracked(), &[]);
    let exec = supervisor.executor();
    let after = |s: u64| stopping_at + Duration::from_secs(s);
    let signals: Vec<(i32, Duration)> = exec.service_signals("db");
    assert_eq!(signals.len(), 3, "{signals:?}");
    assert_eq!(signals[0], (SIGINT, after(0)));
    // Each next signal once the grace period is over (the loop looks every 5 ms).
    for (i, signal) in [(1, SIGTERM), (2, SIGKILL)] {
        let (sent, at) = signals[i];
        assert_eq!(sent, signal);
        assert!(
            (after(2 * i as u64)..after(2 * i as u64) + Duration::from_millis(6)).contains(&at),
            "{signals:?}"
        );
    }
    assert_eq!(before_the_group_ends(exec), &Call::Unregister(DB_PID));
    // What happened is kept with its output.
    let db = outputs.iter().find(|o| o.role == "db").unwrap();
    assert_eq!(
        db.note,
        "service db ignored SIGINT for 2s; service db ignored SIGTERM for 2s; service db was \
         killed (SIGKILL)"
    );
}

#[test]
fn a_failing_prepare_stops_the_services_and_never_starts_the_command() {
    let opts = RunOptions {
        launch: LaunchOptions {
            prepare: Some(Prepare {
                command: "make data".into(),
                env: Vec::new(),
            }),
            ..options(2, None).launch
        },
        ..with_db(options(2, None), Ready::Started)
    };
    let exec = MockExecutor {
        prepare_fails: Some("--prepare failed (exit status: 2)".into()),
        ..MockExecutor::default()
    };
    let mut supervisor = services_ready(&opts, exec);
    match supervisor.run_prepare() {
        Err(NotStarted::PrepareFailed(why)) => assert_eq!(why, "--prepare failed (exit status: 2)"),
        other => panic!("a failed --prepare is kept as a failed run: {other:?}"),
    }
    assert_eq!(supervisor.state(), State::NotStarted);
    let exec = supervisor.executor();
    assert_eq!(
        exec.calls,
        vec![
            Call::SpawnService("db".into()),
            Call::Register(DB_PID),
            Call::Prepare("make data".into()),
            Call::ServiceSignal("db".into(), SIGINT, Duration::ZERO),
            Call::ServiceSignal("db".into(), SIGKILL, Duration::from_millis(5)),
            Call::Unregister(DB_PID),
        ]
    );
}

#[test]
fn a_command_that_cannot_start_stops_the_services() {
    let opts = with_db(options(2, None), Ready::Started);
    let exec = MockExecutor {
        spawn_fails: true,
        ..MockExecutor::default()
    };
    let mut supervisor = services_ready(&opts, exec);
    supervisor.run_prepare().unwrap();
    assert!(supervisor.start_command(spawn(&opts)).is_err());
    assert_eq!(supervisor.state(), State::NotStarted);
    let exec = supervisor.executor();
    assert_eq!(exec.service_signals("db")[0], (SIGINT, Duration::ZERO));
    assert_eq!(exec.calls.last(), Some(&Call::Unregister(DB_PID)));
}

#[test]
fn a_command_that_exits_early_is_not_signalled_but_its_leftovers_are_killed() {
    // --duration 10s, but the command exits with code 3 after 0.3 s.
    let opts = options(2, Some(Duration::from_secs(10)));
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(300), 3 << 8)),
        ..MockExecutor::default()
    };
    let (exec, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    // Only the SIGKILL to what is left of its group, after it was reaped.
    assert_eq!(signals_only(&exec), vec![SIGKILL]);
    assert!(
        exec.elapsed < Duration::from_millis(400),
        "{:?}",
        exec.elapsed
    );
    let exit = rec.exit.unwrap();
    assert_eq!(
        (exit.code, exit.signal, exit.crashed),
        (Some(3), None, false)
    );
    assert_eq!(
        rec.events,
        vec![
            "open 0".to_owned(),
            format!("zombie {COMMAND_PID}"),
            format!("reaped {COMMAND_PID}"),
            "close Exited".to_owned(),
        ]
    );
    // Its group is the guardian's from its start to the end of the run.
    assert!(exec.called(&Call::Register(COMMAND_PID)));
    assert_eq!(before_the_group_ends(&exec), &Call::Unregister(COMMAND_PID));
}

#[test]
fn a_command_killed_by_a_signal_nobody_sent_crashed() {
    let opts = options(2, None);
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(100), libc::SIGSEGV)),
        ..MockExecutor::default()
    };
    let (_, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    let exit = rec.exit.unwrap();
    assert_eq!((exit.signal, exit.crashed), (Some(libc::SIGSEGV), true));
}

#[test]
fn the_end_of_the_duration_stops_the_command_with_sigint() {
    let opts = options(2, Some(Duration::from_secs(1)));
    let (exec, rec, outcome) = run(&opts, MockExecutor::default());
    outcome.unwrap();
    let signals = exec.signals();
    assert_eq!(signals[0].0, SIGINT);
    assert!(signals[0].1 >= Duration::from_secs(1), "{signals:?}");
    assert!(
        rec.events.contains(&"close Duration".to_owned()),
        "{:?}",
        rec.events
    );
    // Stopped by framelab's own signal: no crash.
    let exit = rec.exit.unwrap();
    assert_eq!((exit.signal, exit.crashed), (Some(SIGINT), false));
}

#[test]
fn the_grace_period_escalates_sigint_then_sigterm_then_sigkill() {
    let opts = options(2, Some(Duration::from_secs(1)));
    let exec = MockExecutor {
        // Deaf to SIGINT and SIGTERM.
        dies_of: vec![SIGKILL],
        ..MockExecutor::default()
    };
    let (exec, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    let signals = exec.signals();
    // SIGINT, SIGTERM after the grace, SIGKILL after another, then the leftovers' SIGKILL.
    assert_eq!(
        signals_only(&exec),
        vec![SIGINT, SIGTERM, SIGKILL, SIGKILL],
        "{signals:?}"
    );
    let grace = Duration::from_secs(2);
    // One tick (at most 20 ms) after each grace period ends.
    let tick = Duration::from_millis(20);
    for pair in signals[..3].windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!(gap >= grace && gap <= grace + tick, "{signals:?}");
    }
    let exit = rec.exit.unwrap();
    assert_eq!((exit.signal, exit.crashed), (Some(SIGKILL), false));
}

#[test]
fn ctrl_c_while_the_command_runs_stops_it_and_says_which_signal() {
    let opts = options(2, None);
    let exec = MockExecutor {
        interrupts_at: vec![Duration::from_millis(500)],
        ..MockExecutor::default()
    };
    let (exec, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    assert!(
        rec.events.contains(&"close Interrupted".to_owned()),
        "{:?}",
        rec.events
    );
    assert_eq!(rec.interrupted_by, Some(SIGINT));
    let signals = exec.signals();
    assert_eq!(signals[0].0, SIGINT);
    assert!(signals[0].1 >= Duration::from_millis(500), "{signals:?}");
}

#[test]
fn a_second_ctrl_c_while_stopping_kills_at_once() {
    let opts = options(30, None);
    let exec = MockExecutor {
        dies_of: vec![SIGKILL],
        interrupts_at: vec![Duration::from_millis(500), Duration::from_millis(800)],
        ..MockExecutor::default()
    };
    let (exec, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    let signals = exec.signals();
    // The run says so: the report's note must not claim a grace period was given.
    let said: Vec<(i32, Option<i32>)> = rec.stops.iter().map(|s| (s.signal, s.interrupt)).collect();
    assert_eq!(
        said[..2],
        [(SIGINT, None), (SIGKILL, Some(SIGINT))],
        "{said:?}"
    );
    assert!(rec.stops[1].at_ns >= 800_000_000, "{:?}", rec.stops);
    // No SIGTERM and no 30 s grace: SIGKILL at the second Ctrl-C.
    assert_eq!(
        signals_only(&exec),
        vec![SIGINT, SIGKILL, SIGKILL],
        "{signals:?}"
    );
    assert!(signals[1].1 >= Duration::from_millis(800), "{signals:?}");
    assert!(signals[1].1 < Duration::from_secs(1), "{signals:?}");
}

#[test]
fn ctrl_c_as_the_command_exits_keeps_its_exit_as_the_end() {
    let opts = options(2, None);
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(300), 0)),
        interrupts_at: vec![Duration::from_millis(300)],
        ..MockExecutor::default()
    };
    let (exec, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    assert!(
        rec.events.contains(&"close Exited".to_owned()),
        "{:?}",
        rec.events
    );
    assert_eq!(rec.interrupted_by, None);
    assert_eq!(signals_only(&exec), vec![SIGKILL], "only the leftovers'");
}

#[test]
fn ctrl_c_while_services_get_ready_starts_nothing() {
    let opts = with_db(options(2, None), ready_line());
    let exec = MockExecutor {
        services: vec![MockService {
            ready_after: Some(Duration::from_secs(3)),
            ..MockService::new("db")
        }],
        interrupts_at: vec![Duration::from_secs(1)],
        ..MockExecutor::default()
    };
    let (mut supervisor, started) = starting(&opts, exec);
    let e = started.unwrap_err();
    assert_eq!(
        e.to_string(),
        "interrupted while waiting for service db to get ready"
    );
    assert_eq!(supervisor.state(), State::NotStarted);
    let exec = supervisor.executor();
    assert_eq!(
        exec.service_signals("db")[0],
        (SIGINT, Duration::from_secs(1))
    );
    assert!(!exec.spawned());
}

#[test]
fn ctrl_c_during_prepare_fails_the_run_instead_of_keeping_it() {
    let opts = RunOptions {
        launch: LaunchOptions {
            prepare: Some(Prepare {
                command: "sleep 60".into(),
                env: Vec::new(),
            }),
            ..options(2, None).launch
        },
        ..with_db(options(2, None), Ready::Started)
    };
    let exec = MockExecutor {
        prepare_fails: Some("--prepare failed (signal: 2 (SIGINT))".into()),
        interrupt_in_prepare: true,
        ..MockExecutor::default()
    };
    let mut supervisor = services_ready(&opts, exec);
    match supervisor.run_prepare() {
        Err(NotStarted::Failed(e)) => assert_eq!(e.to_string(), "interrupted during --prepare"),
        other => panic!("{other:?}"),
    }
    assert!(!supervisor.executor().service_signals("db").is_empty());
    assert!(!supervisor.executor().spawned());
}

#[test]
fn a_recording_failure_stops_the_command_group() {
    let opts = options(2, None);
    let mut rec = Recorded {
        drain_fails_after: Some(3),
        ..Recorded::default()
    };
    let (exec, outcome) = run_with(&opts, MockExecutor::default(), &mut rec);
    assert_eq!(outcome.unwrap_err().to_string(), "disk full");
    assert!(
        exec.called(&Call::StopGroup(COMMAND_PID)),
        "{:?}",
        exec.calls
    );
    assert_eq!(before_the_group_ends(&exec), &Call::Unregister(COMMAND_PID));
}

#[test]
fn a_run_that_ends_inside_the_warmup_has_an_empty_window() {
    let opts = RunOptions {
        window: WindowOptions {
            warmup: Duration::from_secs(5),
            warmup_from: crate::model::WarmupFrom::Launch,
            ..WindowOptions::default()
        },
        ..options(2, None)
    };
    let exec = MockExecutor {
        exits_after: Some((Duration::from_secs(1), 0)),
        ..MockExecutor::default()
    };
    let (_, rec, outcome) = run(&opts, exec);
    outcome.unwrap();
    let tail: Vec<&str> = rec
        .events
        .iter()
        .rev()
        .take(3)
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        ["empty", "close Exited", &*rec.events[rec.events.len() - 3]]
    );
    assert!(
        rec.events[rec.events.len() - 3].starts_with("open "),
        "{:?}",
        rec.events
    );
    // Opened only to be closed empty: nothing to spill.
    assert!(rec.settled_after.is_empty(), "{:?}", rec.settled_after);
}

#[test]
fn the_window_is_settled_once_when_it_opens_for_good() {
    // At launch, without a warmup: settled as it opens, once.
    let exec = MockExecutor {
        exits_after: Some((Duration::from_secs(2), 0)),
        ..MockExecutor::default()
    };
    let (_, rec, outcome) = run(&options(2, None), exec);
    outcome.unwrap();
    assert_eq!(rec.settled_after, ["open 0"]);
    // After the first frame's warmup: settled when the window opens there.
    let opts = RunOptions {
        window: WindowOptions {
            warmup: Duration::from_millis(500),
            warmup_from: crate::model::WarmupFrom::FirstFrame,
            ..WindowOptions::default()
        },
        ..options(2, None)
    };
    let exec = MockExecutor {
        exits_after: Some((Duration::from_secs(2), 0)),
        ..MockExecutor::default()
    };
    let mut rec = Recorded {
        first_span_ns: Some(100_000_000),
        ..Recorded::default()
    };
    let (_, outcome) = run_with(&opts, exec, &mut rec);
    outcome.unwrap();
    assert_eq!(rec.settled_after, ["open 600000000"]);
}

#[test]
fn services_started_are_stopped_after_the_command() {
    let opts = with_db(options(2, None), Ready::Started);
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(100), 0)),
        ..MockExecutor::default()
    };
    let (exec, _, outcome) = run(&opts, exec);
    outcome.unwrap();
    assert_eq!(exec.calls[0], Call::SpawnService("db".into()));
    let command_gone = (exec.calls.iter())
        .position(|c| *c == Call::Unregister(COMMAND_PID))
        .unwrap();
    let db_stopped = (exec.calls.iter())
        .position(|c| matches!(c, Call::ServiceSignal(_, SIGINT, _)))
        .unwrap();
    assert!(command_gone < db_stopped, "{:?}", exec.calls);
    assert_eq!(before_the_group_ends(&exec), &Call::Unregister(DB_PID));
}

#[test]
fn what_is_left_of_the_run_group_is_killed_last_and_escapes_are_said() {
    let opts = with_db(options(2, None), Ready::Started);
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(100), 0)),
        escaped: vec!["process 77 (daemon) had left the run's group: killed".into()],
        ..MockExecutor::default()
    };
    let mut supervisor = command_running(&opts, exec);
    supervisor.watch(&mut Recorded::default()).unwrap();
    let (_, escaped) = supervisor.account(false, &mut RunGroup::untracked(), &[]);
    assert_eq!(
        escaped,
        ["process 77 (daemon) had left the run's group: killed"]
    );
    // After the command's group is forgotten and the services are stopped: nothing of
    // the run outlives it, the services' leftovers included.
    let exec = supervisor.executor();
    let at = |call: &Call| exec.calls.iter().position(|c| c == call).unwrap();
    assert!(at(&Call::Unregister(COMMAND_PID)) < at(&Call::Unregister(DB_PID)));
    assert_eq!(before_the_group_ends(exec), &Call::Unregister(DB_PID));
}

#[test]
fn a_recording_failure_stops_the_command_before_the_group_is_killed() {
    let opts = options(2, None);
    let mut rec = Recorded {
        drain_fails_after: Some(1),
        ..Recorded::default()
    };
    let (exec, outcome) = run_with(&opts, MockExecutor::default(), &mut rec);
    assert!(outcome.is_err());
    let at = |call: &Call| exec.calls.iter().position(|c| c == call).unwrap();
    assert!(at(&Call::StopGroup(COMMAND_PID)) < at(&Call::EndRunGroup));
}

#[test]
fn ticks_follow_the_fill_of_the_rings() {
    let (min, max) = (Duration::from_millis(1), Duration::from_millis(20));
    assert_eq!(next_tick(0.0, min, min, max), max, "idle: the longest wait");
    assert_eq!(
        next_tick(0.25, Duration::from_millis(8), min, max),
        Duration::from_millis(8),
        "at the target fill: same wait"
    );
    assert_eq!(
        next_tick(0.5, Duration::from_millis(8), min, max),
        Duration::from_millis(4),
        "fuller: wait less"
    );
    assert_eq!(next_tick(1.0, Duration::from_millis(2), min, max), min);
}

fn profiled(opts: RunOptions) -> RunOptions {
    RunOptions {
        profile: Some(crate::profile::ProfileOptions {
            hz: 999,
            call_graph: crate::profile::CallGraph::default(),
        }),
        ..opts
    }
}

#[test]
fn a_profiler_the_kernel_refuses_leaves_the_command_running_unprofiled() {
    let opts = profiled(options(2, None));
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(50), 0)),
        ..MockExecutor::default()
    };
    let mut supervisor = services_ready(&opts, exec);
    supervisor.run_prepare().unwrap();
    let spawned = supervisor.start_command(spawn(&opts)).unwrap();
    assert_eq!(spawned.pid, COMMAND_PID);
    assert_eq!(supervisor.state(), State::Command, "the run goes on");
    match spawned.profiler {
        Some(Err(why)) => assert!(why.contains("refused"), "{why}"),
        _ => panic!("the refusal is handed back to be said"),
    }
    let exec = supervisor.executor();
    assert_eq!(
        exec.calls[..2],
        [Call::Spawn(vec!["pipeline".into()]), Call::Profile(999)]
    );
}

/// Options `drive` can take to its end with the mock: a runnable command, the run file
/// in `dir`.
fn driven(dir: &tempfile::TempDir) -> RunOptions {
    RunOptions {
        command: vec!["sh".into()],
        output: Some(dir.path().join("driven.framelab")),
        ..options(2, None)
    }
}

#[test]
fn a_session_directory_that_cannot_be_made_starts_nothing_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = driven(&dir);
    let exec = MockExecutor {
        session_dir_fails: true,
        ..MockExecutor::default()
    };
    let e = drive(&opts, exec).unwrap_err().to_string();
    assert!(
        e.starts_with("cannot create the session directory") && e.contains("FRAMELAB_SHM_DIR"),
        "one line that says what to do: {e}"
    );
    assert_nothing_left(&opts);
}

#[test]
fn a_refused_profiler_still_records_the_whole_run_without_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let opts = profiled(driven(&dir));
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(50), 0)),
        ..MockExecutor::default()
    };
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Exited);
    assert_eq!(outcome.exit.as_ref().and_then(|e| e.code), Some(0));
    let run = crate::store::load_run(&outcome.path, None).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Exited);
    let profile = crate::store::load_profile(&outcome.path, outcome.run_id).unwrap();
    assert!(profile.is_none(), "nothing profiled is stored");
}

/// Where the first call `found` matches is in `calls`.
fn position(calls: &[Call], found: impl Fn(&Call) -> bool) -> Option<usize> {
    calls.iter().position(found)
}

#[test]
fn drive_a_profiled_run_profiles_the_command_from_its_start_until_it_ended() {
    // A service beside it, the window closed by --duration: the profiler opens on the
    // command as it starts (held between fork and exec), samples the service too, and is
    // stopped once the command was, before the services are.
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        window: WindowOptions {
            duration: Some(Duration::from_secs(1)),
            ..WindowOptions::default()
        },
        ..profiled(with_db(driven(&dir), Ready::Started))
    };
    let exec = MockExecutor {
        profiler_samples: Some(3),
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Duration);
    let calls = calls.lock().unwrap();
    let at = |found: &dyn Fn(&Call) -> bool| position(&calls, found).unwrap_or(usize::MAX);
    let spawned = at(&|c| matches!(c, Call::Spawn(_)));
    let profiling = at(&|c| *c == Call::Profile(999));
    let service_sampled = at(&|c| *c == Call::ProfilerAttach(DB_PID));
    let command_stopped = at(&|c| matches!(c, Call::Signal(SIGINT, _)));
    let finished = at(&|c| *c == Call::ProfilerFinished);
    let db_stopped = at(&|c| matches!(c, Call::ServiceSignal(name, SIGINT, _) if name == "db"));
    assert_eq!(profiling, spawned + 1, "opened with the spawn: {calls:?}");
    assert!(profiling < service_sampled, "{calls:?}");
    assert!(service_sampled < command_stopped, "{calls:?}");
    assert!(command_stopped < finished, "{calls:?}");
    assert!(finished < db_stopped, "{calls:?}");
    assert_eq!(
        (calls.iter())
            .filter(|c| **c == Call::ProfilerFinished)
            .count(),
        1
    );
    // The recording is stored with the run.
    let profile = crate::store::load_profile(&outcome.path, outcome.run_id)
        .unwrap()
        .expect("the profile is stored");
    assert_eq!(profile.samples.len(), 3);
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Duration);
}

#[test]
fn drive_ctrl_c_while_profiling_stops_the_command_then_the_profiler_and_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let opts = profiled(driven(&dir));
    let exec = MockExecutor {
        profiler_samples: Some(5),
        interrupts_at: vec![Duration::from_millis(300)],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Interrupted);
    let calls = calls.lock().unwrap();
    let stopped = position(&calls, |c| matches!(c, Call::Signal(SIGINT, _)));
    let finished = position(&calls, |c| *c == Call::ProfilerFinished);
    assert!(stopped.is_some() && stopped < finished, "{calls:?}");
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Interrupted);
    let profile = crate::store::load_profile(&outcome.path, outcome.run_id).unwrap();
    assert_eq!(
        profile.map(|p| p.samples.len()),
        Some(5),
        "what was sampled until the Ctrl-C is kept"
    );
}

#[test]
fn a_started_profiler_samples_the_services_and_watched_processes_and_says_its_notes() {
    let opts = profiled(options(2, None));
    let exec = MockExecutor {
        profiler_samples: Some(0),
        profiler_notes: vec!["kernel stacks are not sampled (perf_event_paranoid is 2)".into()],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let mut supervisor = services_ready(&opts, exec);
    supervisor.run_prepare().unwrap();
    let Some(started) = supervisor.start_command(spawn(&opts)).unwrap().profiler else {
        panic!("a profiler is handed back");
    };
    let (profiler, said) = said_while(|| start_profiler(started, &[DB_PID], &[77]));
    assert!(profiler.is_some());
    assert_eq!(
        said,
        [(
            Level::Info,
            "profiling: kernel stacks are not sampled (perf_event_paranoid is 2)".into()
        )]
    );
    let calls = calls.lock().unwrap();
    let attached: Vec<&Call> = (calls.iter())
        .filter(|c| matches!(c, Call::ProfilerAttach(_)))
        .collect();
    assert_eq!(
        attached,
        [&Call::ProfilerAttach(DB_PID), &Call::ProfilerAttach(77)]
    );
}

/// A profiler that cannot start is one line, and the run goes on without it.
#[test]
fn a_profiler_that_cannot_start_is_said_in_one_line() {
    let (profiler, said) = said_while(|| {
        start_profiler(
            Err("perf_event_open is refused in the mock".into()),
            &[DB_PID],
            &[],
        )
    });
    assert!(profiler.is_none());
    assert_eq!(
        said,
        [(
            Level::Warn,
            "this run is not profiled: perf_event_open is refused in the mock".into()
        )]
    );
}

/// What the progress line was told, one word each.
#[derive(Clone, Default)]
struct Told(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl crate::session::RunProgress for Told {
    fn begin(&mut self) {
        self.0.lock().unwrap().push("begin".into());
    }

    fn update(&mut self, phase: &str, elapsed: Duration, _frames: u64) {
        let told = format!("{phase} {} ms", elapsed.as_millis());
        self.0.lock().unwrap().push(told);
    }

    fn phase(&mut self, phase: &str) {
        self.0.lock().unwrap().push(phase.into());
    }

    fn finish(&mut self) {
        self.0.lock().unwrap().push("finish".into());
    }
}

/// The progress line the command line gives is told as the run goes, on the executor's
/// clock: from the command's start, every half second, until the run is drained.
#[test]
fn the_progress_line_is_told_every_half_second_until_the_run_is_drained() {
    let told = Told::default();
    let mut opts = options(2, Some(Duration::from_millis(1600)));
    opts.live.progress = crate::session::ProgressLine::new(told.clone());
    let (_, _, outcome) = run(&opts, MockExecutor::default());
    outcome.unwrap();
    let told = told.0.lock().unwrap();
    assert_eq!(
        *told,
        [
            "begin",
            "measuring 500 ms",
            "measuring 1000 ms",
            "measuring 1500 ms",
            "stopping",
            "finish"
        ]
    );
}

#[test]
fn commits_come_every_500_ms_on_the_dot_and_the_window_closes_at_the_end_of_the_duration() {
    // Readings of the processes every 70 ms, which no tick divides: each commit is still due
    // 500 ms after the last (what a kill -9 loses), not at the first tick past it.
    let mut opts = options(2, Some(Duration::from_secs(2)));
    opts.sampling.every = Duration::from_millis(70);
    let (_, rec, outcome) = run(&opts, MockExecutor::default());
    outcome.unwrap();
    assert_eq!(rec.events.first().map(String::as_str), Some("open 0"));
    let ms = |ns: &i64| ns / 1_000_000;
    let commits: Vec<i64> = rec.committed_at.iter().map(ms).take(3).collect();
    assert_eq!(commits, [500, 1000, 1500]);
    // Drains at most 20 ms apart, and 20 ms when nothing bounds them.
    let open: Vec<i64> = (rec.drained_at.iter())
        .filter(|&&at| at < 2_000_000_000)
        .map(ms)
        .collect();
    let gaps: Vec<i64> = open.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&gap| gap <= 20), "{gaps:?}");
    assert!(gaps.contains(&20), "{gaps:?}");
    // The window closes at the end of --duration, not at the next tick past it.
    assert!(
        open.len() > 1 && rec.drained_at.contains(&2_000_000_000),
        "{:?}",
        rec.drained_at
    );
}

#[test]
fn with_producers_that_wake_it_the_collector_sleeps_until_the_next_reading_or_commit() {
    // Readings every 300 ms, no tick: the drain loop waits for a producer each time, and
    // that wait ends at the next reading, commit or end of --duration, whichever is first.
    // A reading due within half an interval of a wakeup is taken then (600 at 500), and
    // the next stays on its beat (900).
    let mut opts = options(2, Some(Duration::from_secs(2)));
    opts.sampling.every = Duration::from_millis(300);
    let mut rec = Recorded {
        producers_wake: true,
        ..Recorded::default()
    };
    let (exec, outcome) = run_with(&opts, MockExecutor::default(), &mut rec);
    outcome.unwrap();
    assert!(exec.waits > 0, "the loop waited for producers");
    let ms = |ns: &i64| ns / 1_000_000;
    let drains: Vec<i64> = rec.drained_at.iter().map(ms).take(9).collect();
    assert_eq!(drains, [0, 300, 500, 900, 1000, 1200, 1500, 1800, 2000]);
    let readings: Vec<i64> = rec.sampled_at.iter().map(ms).take(6).collect();
    assert_eq!(readings, [300, 500, 900, 1200, 1500, 1800]);
    assert_eq!(
        rec.committed_at.iter().map(ms).take(3).collect::<Vec<_>>(),
        [500, 1000, 1500]
    );
    assert!(
        rec.drained_at.contains(&2_000_000_000),
        "{:?}",
        rec.drained_at
    );
}

/// A 1.1 s run (`--duration`) whose processes are read every 50 ms, spilling with
/// producers that wake the collector (a drain due 250 ms after the last), with `rec`'s other
/// settings and `window`'s changes: what it recorded.
fn spilling_run(rec: Recorded, window: impl FnOnce(&mut WindowOptions)) -> Recorded {
    let mut opts = options(2, Some(Duration::from_millis(1_100)));
    opts.sampling.every = Duration::from_millis(50);
    window(&mut opts.window);
    let mut rec = Recorded {
        producers_wake: true,
        drain_every_ns: Some(250_000_000),
        ..rec
    };
    let (_, outcome) = run_with(&opts, MockExecutor::default(), &mut rec);
    outcome.unwrap();
    rec
}

/// Times in whole ms.
fn in_ms(times_ns: &[i64]) -> Vec<i64> {
    times_ns.iter().map(|ns| ns / 1_000_000).collect()
}

#[test]
fn ticks_whose_drain_is_not_due_still_read_the_processes_and_commit_and_the_end_drains() {
    // Spilling with producers that wake it, the collector drains on their wakeups and every
    // 250 ms, not at each of the 20 readings a second; the readings and commits keep their
    // beat, and the end of --duration drains whatever the rings hold.
    let rec = spilling_run(Recorded::default(), |_| {});
    assert_eq!(in_ms(&rec.drained_at), [0, 250, 500, 750, 1000, 1101]);
    let readings = in_ms(&rec.sampled_at);
    assert_eq!(readings, (1..=22).map(|i| i * 50).collect::<Vec<_>>());
    assert_eq!(in_ms(&rec.committed_at), [500, 1000]);
}

#[test]
fn when_another_thread_reads_the_processes_ticks_wake_only_to_drain_commit_and_end() {
    // The sampler's thread reads the processes on its own wakeups: the collector's thread
    // sleeps from drain to drain (producers' wakeups, every 250 ms spilling), following
    // what the readings found on those ticks, and the end of --duration still ends it.
    let sweeping = Recorded {
        sweeps_elsewhere: true,
        ..Recorded::default()
    };
    let rec = spilling_run(sweeping, |_| {});
    assert_eq!(in_ms(&rec.drained_at), [0, 250, 500, 750, 1000, 1101]);
    let ticks = in_ms(&rec.sampled_at);
    assert_eq!(ticks, [250, 500, 750, 1000, 1100]);
    assert_eq!(in_ms(&rec.committed_at), [500, 1000]);
    // Every tick looked for exited children and said when it was done.
    assert!(rec.reaps_done_after.len() >= ticks.len());
}

#[test]
fn until_the_window_opens_for_good_the_ticks_keep_the_readings_beat() {
    // The window opens 300 ms after the first span (at 100 ms): it is noticed on a tick,
    // and its baselines read then, so the ticks keep the 50 ms beat of the readings until
    // it has opened, however the processes are read; after it, only drains, commits and
    // the end wake the collector.
    let sweeping = Recorded {
        sweeps_elsewhere: true,
        first_span_ns: Some(100_000_000),
        ..Recorded::default()
    };
    let rec = spilling_run(sweeping, |window| {
        window.warmup = Duration::from_millis(300);
        window.warmup_from = crate::model::WarmupFrom::FirstFrame;
    });
    assert_eq!(
        rec.events.first().map(String::as_str),
        Some("open 400000000")
    );
    assert_eq!(
        in_ms(&rec.sampled_at),
        [50, 100, 150, 200, 250, 300, 350, 400, 500, 750, 1000, 1100]
    );
}

#[test]
fn a_window_whose_start_is_known_ahead_opens_at_it_not_at_the_next_reading() {
    // 330 ms after the first span (at 100 ms): between two readings of the 50 ms beat.
    for sweeps_elsewhere in [false, true] {
        let rec = Recorded {
            sweeps_elsewhere,
            first_span_ns: Some(100_000_000),
            ..Recorded::default()
        };
        let rec = spilling_run(rec, |window| {
            window.warmup = Duration::from_millis(330);
            window.warmup_from = crate::model::WarmupFrom::FirstFrame;
        });
        assert_eq!(
            rec.events.first().map(String::as_str),
            Some("open 430000000")
        );
        assert_eq!(
            in_ms(&rec.opened_at),
            [430],
            "sweeps elsewhere: {sweeps_elsewhere}"
        );
    }
}

/// Neither the run file nor its journal is left.
fn assert_nothing_left(opts: &RunOptions) {
    let output = opts.output.as_ref().unwrap();
    let mut journal = output.as_os_str().to_owned();
    journal.push("-journal");
    assert!(!output.exists(), "no run file");
    assert!(!std::path::Path::new(&journal).exists(), "no journal");
}

/// The calls the mock was asked for by `drive`, which took it.
fn calls_of(exec: &MockExecutor) -> std::sync::Arc<std::sync::Mutex<Vec<Call>>> {
    exec.shared_calls.clone()
}

#[test]
fn drive_a_service_that_exits_before_it_is_ready_starts_no_command_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), ready_line());
    let exec = MockExecutor {
        services: vec![MockService {
            ready_after: None,
            exits_after: Some((Duration::from_millis(200), 3 << 8)),
            ..MockService::new("db")
        }],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let e = drive(&opts, exec).unwrap_err().to_string();
    assert!(
        e.starts_with("service db exited (exit code 3) before it was ready"),
        "{e}"
    );
    assert_nothing_left(&opts);
    let calls = calls.lock().unwrap();
    assert!(
        !calls.iter().any(|c| matches!(c, Call::Spawn(_))),
        "the command never starts: {calls:?}"
    );
    assert!(calls.contains(&Call::Unregister(DB_PID)), "{calls:?}");
}

#[test]
fn drive_ctrl_c_while_a_service_gets_ready_starts_nothing_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), ready_line());
    let exec = MockExecutor {
        services: vec![MockService {
            ready_after: Some(Duration::from_secs(3)),
            ..MockService::new("db")
        }],
        interrupts_at: vec![Duration::from_secs(1)],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let e = drive(&opts, exec).unwrap_err().to_string();
    assert_eq!(e, "interrupted while waiting for service db to get ready");
    assert_nothing_left(&opts);
    let calls = calls.lock().unwrap();
    assert!(!calls.iter().any(|c| matches!(c, Call::Spawn(_))));
}

#[test]
fn drive_ctrl_c_while_the_sources_open_starts_nothing_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), Ready::Started);
    let exec = MockExecutor {
        services: vec![MockService::new("db")],
        interrupts_at: vec![Duration::ZERO],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let e = drive(&opts, exec).unwrap_err().to_string();
    assert_eq!(e, "interrupted while telemetry's sources opened");
    assert_nothing_left(&opts);
    let calls = calls.lock().unwrap();
    assert!(
        !calls.iter().any(|c| matches!(c, Call::Spawn(_))),
        "{calls:?}"
    );
    assert!(
        calls.contains(&Call::Unregister(DB_PID)),
        "the service stopped: {calls:?}"
    );
}

#[test]
fn drive_a_service_that_dies_while_the_command_runs_is_said_in_the_run_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), Ready::Started);
    let exec = MockExecutor {
        services: vec![MockService {
            exits_after: Some((Duration::from_millis(100), 1 << 8)),
            ..MockService::new("db")
        }],
        exits_after: Some((Duration::from_millis(500), 0)),
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let (outcome, said) = said_while(|| drive(&opts, exec));
    let outcome = outcome.unwrap();
    assert_eq!(outcome.end_reason, EndReason::Exited);
    assert_eq!(outcome.exit.as_ref().and_then(|e| e.code), Some(0));
    // Said as the services stop, once, as a note (not a warning).
    let dead = "service db exited while the command ran: what the command measured may not be \
                what you meant";
    let about_db: Vec<_> = (said.iter())
        .filter(|(_, line)| line.starts_with("service db"))
        .collect();
    assert_eq!(about_db, [&(Level::Info, dead.to_string())], "{said:?}");
    let run = crate::store::load_run(&outcome.path, None).unwrap();
    let db = (run.outputs.iter())
        .find(|o| o.role == "db" && o.stream == "stdout")
        .expect("the service's output is kept");
    assert!(
        db.note
            .starts_with("service db exited while the command ran: what the command measured"),
        "{:?}",
        db.note
    );
    // Dead already: no stop signal but the SIGKILL to what is left of its group.
    let calls = calls.lock().unwrap();
    let stops: Vec<i32> = (calls.iter())
        .filter_map(|c| match c {
            Call::ServiceSignal(name, signal, _) if name == "db" => Some(*signal),
            _ => None,
        })
        .collect();
    assert_eq!(stops, [SIGKILL], "{calls:?}");
}

/// What a run says, in the order it says it, heard with no process and no standard
/// error: the run group's fallback as it is made, the scheduler's as it is traced, and a
/// process that left the run's group, a warning once the run is accounted.
#[test]
fn drive_says_its_notes_and_warns_of_a_process_that_escaped_the_run_group() {
    let dir = tempfile::tempdir().unwrap();
    let opts = driven(&dir);
    let exec = MockExecutor {
        exits_after: Some((Duration::from_millis(100), 0)),
        escaped: vec!["process 77 (daemon) had left the run's group: killed".into()],
        ..MockExecutor::default()
    };
    let (outcome, said) = said_while(|| drive(&opts, exec));
    outcome.unwrap();
    let begins: Vec<(Level, &str)> = (said.iter())
        .map(|(level, line)| (*level, &line[..line.find(':').unwrap_or(line.len())]))
        .collect();
    assert_eq!(
        begins,
        [
            (Level::Info, "run group"),
            (Level::Warn, "scheduler tracepoints unavailable"),
            (Level::Warn, "process 77 (daemon) had left the run's group")
        ],
        "{said:?}"
    );
    assert_eq!(
        said.last().unwrap().1,
        "process 77 (daemon) had left the run's group: killed"
    );
}

#[test]
fn drive_the_end_of_the_duration_closes_the_window_and_the_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        window: WindowOptions {
            duration: Some(Duration::from_secs(1)),
            ..WindowOptions::default()
        },
        ..driven(&dir)
    };
    let exec = MockExecutor::default();
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Duration);
    let exit = outcome.exit.clone().unwrap();
    assert_eq!((exit.signal, exit.crashed), (Some(SIGINT), false));
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Duration);
    // Stopped once, at the end of --duration on the executor's clock.
    let calls = calls.lock().unwrap();
    let first_stop = (calls.iter()).find_map(|c| match c {
        Call::Signal(signal, at) => Some((*signal, *at)),
        _ => None,
    });
    assert_eq!(first_stop, Some((SIGINT, Duration::from_secs(1))));
}

#[test]
fn drive_ctrl_c_while_stopping_kills_at_once_and_the_run_keeps_its_end() {
    // --duration closed the window; the command is deaf to SIGINT, and Ctrl-C comes
    // while framelab waits out the grace period: SIGKILL then, not after 30 s.
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        window: WindowOptions {
            duration: Some(Duration::from_secs(1)),
            ..WindowOptions::default()
        },
        launch: LaunchOptions {
            grace: Duration::from_secs(30),
            ..LaunchOptions::default()
        },
        ..driven(&dir)
    };
    let exec = MockExecutor {
        dies_of: vec![SIGKILL],
        interrupts_at: vec![Duration::from_millis(1500)],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Duration, "the window's end");
    let exit = outcome.exit.clone().unwrap();
    assert_eq!((exit.signal, exit.crashed), (Some(SIGKILL), false));
    let calls = calls.lock().unwrap();
    let signals: Vec<(i32, Duration)> = (calls.iter())
        .filter_map(|c| match c {
            Call::Signal(signal, at) => Some((*signal, *at)),
            _ => None,
        })
        .collect();
    assert_eq!(signals[0], (SIGINT, Duration::from_secs(1)), "{signals:?}");
    assert_eq!(signals[1].0, SIGKILL, "{signals:?}");
    assert!(
        (Duration::from_millis(1500)..Duration::from_millis(1521)).contains(&signals[1].1),
        "one tick after the Ctrl-C: {signals:?}"
    );
}

#[test]
fn drive_ctrl_c_once_the_command_exited_leaves_the_drained_run_whole() {
    // The command exits at 300 ms and its rings are drained; Ctrl-C comes at 1 s, while
    // the service (deaf to SIGINT) is being stopped: the run ends as the command did, its
    // file whole, and the service is still stopped in order.
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), Ready::Started);
    let exec = MockExecutor {
        services: vec![MockService {
            ignores: vec![SIGINT],
            ..MockService::new("db")
        }],
        exits_after: Some((Duration::from_millis(300), 0)),
        interrupts_at: vec![Duration::from_secs(1)],
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Exited);
    assert_eq!(outcome.interrupt_signal, None);
    assert_eq!(outcome.exit.as_ref().and_then(|e| e.code), Some(0));
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Exited);
    assert_eq!(run.meta.exit.as_ref().and_then(|e| e.code), Some(0));
    let db = (run.outputs.iter()).find(|o| o.role == "db" && o.stream == "stdout");
    assert_eq!(
        db.map(|o| o.note.as_str()),
        Some("service db ignored SIGINT for 2s"),
        "kept with the run"
    );
    // The Ctrl-C came after the command's stop signals were due: none was sent.
    let calls = calls.lock().unwrap();
    let signals: Vec<i32> = (calls.iter())
        .filter_map(|c| match c {
            Call::Signal(signal, _) => Some(*signal),
            _ => None,
        })
        .collect();
    assert_eq!(signals, [SIGKILL], "only the leftovers': {calls:?}");
    let stopped_at = (calls.iter()).find_map(|c| match c {
        Call::ServiceSignal(_, SIGINT, at) => Some(*at),
        _ => None,
    });
    assert!(
        stopped_at.is_some_and(|at| at < Duration::from_secs(1)),
        "the Ctrl-C came while the service was being stopped: {calls:?}"
    );
}

#[test]
fn drive_a_command_that_exits_inside_the_warmup_keeps_a_run_with_an_empty_window() {
    // --warmup 5s from the launch, and the command exits after 1 s: every frame was warmup.
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        window: WindowOptions {
            warmup: Duration::from_secs(5),
            warmup_from: crate::model::WarmupFrom::Launch,
            ..WindowOptions::default()
        },
        ..driven(&dir)
    };
    let exec = MockExecutor {
        exits_after: Some((Duration::from_secs(1), 0)),
        ..MockExecutor::default()
    };
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(outcome.end_reason, EndReason::Exited);
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert_eq!(run.meta.end_reason, EndReason::Exited);
    assert_eq!(
        run.meta.window_start_ns, run.meta.window_end_ns,
        "the window is empty, never the whole run"
    );
}

#[test]
fn drive_a_command_that_cannot_start_stops_the_services_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with_db(driven(&dir), Ready::Started);
    let exec = MockExecutor {
        spawn_fails: true,
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let e = drive(&opts, exec).unwrap_err().to_string();
    assert_eq!(e, "command not found: 'sh'");
    assert_nothing_left(&opts);
    let calls = calls.lock().unwrap();
    let spawned = calls.iter().position(|c| matches!(c, Call::Spawn(_)));
    let db_stopped = (calls.iter())
        .position(|c| matches!(c, Call::ServiceSignal(name, SIGINT, _) if name == "db"));
    assert!(spawned < db_stopped, "{calls:?}");
    assert_eq!(calls.last(), Some(&Call::Unregister(DB_PID)), "{calls:?}");
}

#[test]
fn drive_a_failing_prepare_keeps_a_run_with_nothing_measured() {
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        launch: LaunchOptions {
            prepare: Some(Prepare {
                command: "make data".into(),
                env: Vec::new(),
            }),
            ..LaunchOptions::default()
        },
        ..driven(&dir)
    };
    let exec = MockExecutor {
        prepare_fails: Some("--prepare failed (exit status: 2)".into()),
        ..MockExecutor::default()
    };
    let calls = calls_of(&exec);
    let outcome = drive(&opts, exec).unwrap();
    assert_eq!(
        outcome.prepare_failure.as_deref(),
        Some("--prepare failed (exit status: 2)")
    );
    assert!(outcome.exit.is_none());
    let run = crate::store::load_run(&outcome.path, Some(outcome.run_id)).unwrap();
    assert!(run.spans.is_empty(), "nothing measured");
    assert!(!calls
        .lock()
        .unwrap()
        .iter()
        .any(|c| matches!(c, Call::Spawn(_))));
}

#[test]
fn a_service_that_daemonized_is_stopped_through_its_daemon() {
    // `pg_ctl start`: the service's own process exits at once, its daemon runs on.
    const DAEMON: u32 = 4242;
    let opts = with_db(options(2, None), Ready::Started);
    let exec = MockExecutor {
        services: vec![MockService {
            exits_after: Some((Duration::from_millis(1), 0)),
            ..MockService::new("db")
        }],
        daemons: vec![(DAEMON, vec![SIGINT])],
        exits_after: Some((Duration::from_millis(100), 0)),
        ..MockExecutor::default()
    };
    let mut rec = Recorded::default();
    let mut supervisor = command_running(&opts, exec);
    supervisor.watch(&mut rec).unwrap();
    let stopping_at = supervisor.executor().elapsed;
    let daemons = [(DAEMON, "db".to_owned())];
    let (outputs, _) = supervisor.account(false, &mut RunGroup::untracked(), &daemons);
    let exec = supervisor.executor();
    let to_daemon: Vec<(i32, Duration)> = (exec.calls.iter())
        .filter_map(|c| match c {
            Call::DaemonSignal(DAEMON, signal, at) => Some((*signal, *at)),
            _ => None,
        })
        .collect();
    // It ignores SIGINT: SIGTERM after the grace period ends it, and no SIGKILL follows.
    assert_eq!(to_daemon.len(), 2, "{to_daemon:?}");
    assert_eq!(to_daemon[0], (SIGINT, stopping_at));
    assert_eq!(to_daemon[1].0, SIGTERM);
    assert!(
        to_daemon[1].1 >= stopping_at + Duration::from_secs(2),
        "{to_daemon:?}"
    );
    assert!(!exec.process_alive_now(DAEMON));
    // Its leader's exit is how it started, not an end while the command ran.
    let db = outputs.iter().find(|o| o.role == "db").unwrap();
    assert_eq!(db.note, "service db ignored SIGINT for 2s");
}
