//! The accounting of watched processes against fixture /proc trees: the children they reap,
//! a pid taken by another process, roles.

use super::*;
use crate::session::procfs::ScriptedClocks;
use crate::session::watch::WatchRoles;

const TICK_NS: i64 = 10_000_000;
/// framelab's pid in the fixtures: it has no children there.
const COLLECTOR: u32 = 1;

/// A watched pid and its role.
fn watching(pid: u32, role: &str) -> WatchList {
    let mut roles = WatchRoles::default();
    roles.pids.insert(pid, role.to_owned());
    WatchList {
        pids: vec![pid],
        names: Vec::new(),
        roles,
    }
}

#[test]
fn a_watched_process_counts_the_children_it_reaped_over_the_window() {
    let mut world = World::new();
    world.process(4242, "python3", 'S', 77, [100, 0, 10, 0], 1);
    let mut acc = world.opened(watching(4242, "decoderd"), 1_000_000_000);
    // 10 ticks of its own, 30 + 5 of children it reaped.
    world.process(4242, "python3", 'S', 77, [110, 0, 40, 5], 1);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row.role, ProcessRole::Watched);
    assert_eq!(row.watch_role, "decoderd");
    assert_eq!(row.user_ns + row.sys_ns, 45 * TICK_NS);
    assert!(
        row.note
            .contains("0.10 s of its own and 0.35 s of the children it reaped"),
        "{}",
        row.note
    );
}

/// A watched server's worker that hit a probe or opened a ring: its CPU is the server's
/// (it reaps it), not a row of the command's beside it; the command's own child is.
#[test]
fn a_worker_forked_by_a_watched_process_is_not_the_commands_child() {
    let mut world = World::new();
    world.process(4242, "postgres", 'S', 77, [100, 0, 0, 0], 1);
    world.process(CMD, "pgbench", 'S', COLLECTOR, [10, 0, 0, 0], 1);
    let mut acc = world.opened(watching(4242, "db"), 1_000_000_000);
    world.process(4300, "postgres", 'R', 4242, [3, 0, 0, 0], 1);
    world.process(4301, "postgres", 'R', 4300, [1, 0, 0, 0], 1);
    world.process(4400, "helper", 'R', CMD, [2, 0, 0, 0], 1);
    for pid in [4300, 4301, 4400] {
        acc.observe_instrumented(pid, 1_500_000_000);
    }
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let names: Vec<(&str, ProcessRole)> = rows.iter().map(|r| (r.name.as_str(), r.role)).collect();
    assert_eq!(
        names,
        [
            ("pgbench", ProcessRole::Command),
            ("helper", ProcessRole::Child),
            ("postgres", ProcessRole::Watched)
        ],
        "{rows:?}"
    );
}

#[test]
fn a_watched_pid_taken_by_another_process_is_not_followed() {
    let mut world = World::new();
    world.process(4242, "decoderd", 'S', 77, [100, 0, 0, 0], 1);
    let mut acc = world.opened(watching(4242, "d"), 1_000_000_000);
    world.process(4242, "decoderd", 'S', 77, [120, 0, 0, 0], 1);
    acc.sample(1_500_000_000, CMD);
    // The daemon ended; a new process got its pid (it started later) and burns far more.
    world.stat(4242, "cc1", 'S', 77, [900, 50, 0, 0], 300);
    acc.sample(2_000_000_000, CMD);
    acc.end_window(3_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(rows.len(), 1, "only the watched process: {rows:?}");
    let row = &rows[0];
    assert_eq!(row.name, "decoderd");
    assert_eq!(row.user_ns + row.sys_ns, 20 * TICK_NS);
    assert!(row.note.contains("ended"), "{}", row.note);
    assert!(
        row.note.contains("taken by another process"),
        "{}",
        row.note
    );
}

#[test]
fn a_watched_pid_without_a_role_counts_under_its_name() {
    let mut world = World::new();
    world.process(4242, "redis-server", 'S', 77, [100, 0, 0, 0], 1);
    let watch = WatchList {
        pids: vec![4242],
        ..WatchList::default()
    };
    let mut acc = world.opened(watch, 1_000_000_000);
    acc.end_window(2_000_000_000, CMD);
    assert_eq!(acc.results()[0].watch_role, "redis-server");
}

/// A fixture /proc read through the supervisor's mock executor: the accounting gets its
/// /proc and its exit records (none) from it, and framelab's reaping of the command too.
struct World {
    proc: tempfile::TempDir,
    exec: crate::session::executor_mock::MockExecutor,
}

/// The command's pid in the mock.
const CMD: u32 = crate::session::executor_mock::COMMAND_PID;
const MIB: u64 = 1024 * 1024;

impl World {
    fn new() -> World {
        let proc = tempfile::tempdir().unwrap();
        let exec = crate::session::executor_mock::MockExecutor {
            proc_root: Some(proc.path().to_owned()),
            ..Default::default()
        };
        World { proc, exec }
    }

    /// `/proc/PID/stat` (times in ticks: own user, own sys, children's user, children's sys)
    /// and `/proc/PID/status` with its peak RSS.
    fn process(&self, pid: u32, name: &str, state: char, ppid: u32, times: [i64; 4], hwm_mib: u64) {
        self.stat(pid, name, state, ppid, times, 5);
        std::fs::write(
            self.proc.path().join(pid.to_string()).join("status"),
            format!("Name:\t{name}\nVmHWM:\t{} kB\n", hwm_mib * 1024),
        )
        .unwrap();
    }

    /// `/proc/PID/stat` alone, the process started `start` ticks after boot.
    fn stat(&self, pid: u32, name: &str, state: char, ppid: u32, times: [i64; 4], start: i64) {
        let dir = self.proc.path().join(pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let [utime, stime, cutime, cstime] = times;
        std::fs::write(
            dir.join("stat"),
            format!("{pid} ({name}) {state} {ppid} 0 0 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0 {start} 1000 10 0"),
        )
        .unwrap();
    }

    /// The kernel's record of a process's exit (with `with_exit_records`).
    fn exit(&self, exit: Exit) {
        self.exec.exit(exit);
    }

    fn gone(&self, pid: u32) {
        std::fs::remove_dir_all(self.proc.path().join(pid.to_string())).unwrap();
    }

    fn accounting(&mut self, watch: WatchList) -> Accounting {
        use crate::session::executor::Executor;
        let exit_records = self.exec.exit_records();
        Accounting::new(
            self.exec.procfs(),
            0,
            COLLECTOR,
            50_000_000,
            watch,
            exit_records,
        )
    }

    /// The accounting, its first reading taken and its window opened at `start_ns`.
    fn opened(&mut self, watch: WatchList, start_ns: i64) -> Accounting {
        let mut acc = self.accounting(watch);
        acc.sample(0, CMD);
        acc.start_window(start_ns, CMD, false);
        acc
    }
}

fn row<'a>(rows: &'a [ProcessStats], name: &str) -> &'a ProcessStats {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}: {rows:?}"))
}

fn cpu(row: &ProcessStats) -> i64 {
    row.user_ns + row.sys_ns
}

#[test]
fn rows_per_role_hold_each_process_cpu_and_memory_over_the_window() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [10, 2, 0, 0], 10);
    world.process(101, "worker", 'S', CMD, [5, 0, 0, 0], 20);
    world.process(200, "db", 'S', COLLECTOR, [50, 10, 0, 0], 30);
    let mut acc = world.accounting(WatchList::default());
    acc.set_services(vec![(200, "db".into())]);
    acc.sample(0, CMD);
    acc.start_window(500_000_000, CMD, false);
    // Over the window: the command +20 user +3 sys, its worker +40, the service +30.
    world.process(CMD, "pipeline", 'S', COLLECTOR, [30, 5, 0, 0], 12);
    world.process(101, "worker", 'S', CMD, [45, 0, 0, 0], 25);
    world.process(200, "db", 'S', COLLECTOR, [80, 10, 0, 0], 30);
    acc.sample(1_000_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].role, ProcessRole::Command, "the command first");
    let command = row(&rows, "pipeline");
    assert_eq!(
        (command.user_ns, command.sys_ns),
        (20 * TICK_NS, 3 * TICK_NS)
    );
    assert_eq!(command.cpu_source, CpuSource::Proc);
    assert_eq!(command.cpu_resolution_ns, TICK_NS);
    let worker = row(&rows, "worker");
    assert_eq!((worker.role, worker.ppid), (ProcessRole::Child, CMD));
    assert_eq!(cpu(worker), 40 * TICK_NS);
    let db = row(&rows, "db");
    assert_eq!((db.role, db.service.as_str()), (ProcessRole::Service, "db"));
    assert_eq!(cpu(db), 30 * TICK_NS);
    // The peak RSS is the highest VmHWM read: at first sight, then every 0.5 s.
    assert_eq!(command.peak_rss_bytes, 12 * MIB);
    assert_eq!(worker.peak_rss_bytes, 25 * MIB);
    assert_eq!(db.peak_rss_bytes, 30 * MIB);
    for r in &rows {
        assert_eq!(
            r.wall_ns, 1_500_000_000,
            "alive over the whole window: {r:?}"
        );
    }
}

#[test]
fn a_process_cpu_clock_counts_to_the_nanosecond_where_ticks_would_round() {
    let mut world = World::new();
    let clocks = ScriptedClocks::default();
    world.exec.cpu_clocks = Some(clocks.clone());
    let set = |pid: u32, ns: i64| {
        clocks.lock().unwrap().insert(pid, ns);
    };
    world.process(CMD, "pipeline", 'S', COLLECTOR, [10, 2, 0, 0], 1);
    world.process(101, "worker", 'S', CMD, [0, 0, 0, 0], 1);
    set(CMD, 120_000_000);
    set(101, 0);
    let mut acc = world.opened(WatchList::default(), 500_000_000);
    // Ticks say 23 (0.23 s) and 4 (0.04 s); the clocks say what was really used.
    world.process(CMD, "pipeline", 'S', COLLECTOR, [30, 5, 0, 0], 1);
    world.process(101, "worker", 'S', CMD, [4, 0, 0, 0], 1);
    set(CMD, 120_000_000 + 234_567_891);
    set(101, 43_210_987);
    acc.sample(1_000_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let command = row(&rows, "pipeline");
    assert_eq!(cpu(command), 234_567_891, "{command:?}");
    assert_eq!(
        (command.cpu_source, command.cpu_resolution_ns),
        (CpuSource::Clock, 1)
    );
    let worker = row(&rows, "worker");
    assert_eq!(cpu(worker), 43_210_987, "{worker:?}");
    assert_eq!(worker.cpu_source, CpuSource::Clock);
}

#[test]
fn a_child_that_exits_before_the_end_counts_up_to_its_exit_and_the_rows_add_up() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [10, 0, 0, 0], 1);
    world.process(101, "encode", 'S', CMD, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    world.process(101, "encode", 'S', CMD, [30, 0, 0, 0], 1);
    acc.sample(1_000_000_000, CMD);
    // It used 5 more ticks after that reading, ended, and the command reaped it: the
    // command's reaped-children time grew by its final 35.
    world.gone(101);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [12, 0, 35, 0], 1);
    acc.sample(1_500_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let encode = row(&rows, "encode");
    assert_eq!(
        cpu(encode),
        35 * TICK_NS,
        "up to its exit, from its reaper: {rows:?}"
    );
    assert_eq!(encode.cpu_source, CpuSource::Reaper);
    assert!(
        encode.wall_ns < 2_000_000_000,
        "it ended inside the window: {encode:?}"
    );
    let command = row(&rows, "pipeline");
    assert_eq!(cpu(command), 2 * TICK_NS);
    // The sum of the rows is all the tree used: the command's own and its reaped children's.
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(total, (2 + 35) * TICK_NS, "{rows:?}");
}

#[test]
fn children_never_seen_are_not_charged_to_a_known_child_that_ends_later() {
    let mut world = World::new();
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(101, "encode", 'S', CMD, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    // Short children no sweep saw used 40 ticks and were reaped while encode ran on.
    world.process(101, "encode", 'S', CMD, [30, 0, 0, 0], 1);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 40, 0], 1);
    acc.sample(1_000_000_000, CMD);
    // Then encode ended at 35 ticks and was reaped.
    world.gone(101);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 75, 0], 1);
    acc.sample(1_500_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let encode = row(&rows, "encode");
    assert_eq!(cpu(encode), 35 * TICK_NS, "its own CPU only: {rows:?}");
    assert_eq!(encode.cpu_source, CpuSource::Reaper);
    let exited = row(&rows, "(exited children)");
    assert_eq!(cpu(exited), 40 * TICK_NS, "{rows:?}");
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(
        total,
        75 * TICK_NS,
        "the rows add up to the reaper's growth: {rows:?}"
    );
}

#[test]
fn children_that_end_in_one_interval_share_a_row_and_the_sum_still_holds() {
    let mut world = World::new();
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(101, "job", 'S', CMD, [0, 0, 0, 0], 1);
    world.process(102, "job", 'S', CMD, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    world.process(101, "job", 'S', CMD, [10, 0, 0, 0], 1);
    world.process(102, "job", 'S', CMD, [10, 0, 0, 0], 1);
    acc.sample(1_000_000_000, CMD);
    // Both end before the next reading, at 15 and 18 ticks: which used which part of the
    // 13 ticks after their last readings cannot be told.
    world.gone(101);
    world.gone(102);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 33, 0], 1);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    for pid in [101, 102] {
        let job = rows.iter().find(|r| r.pid == pid).unwrap();
        assert_eq!(cpu(job), 10 * TICK_NS, "up to its last reading: {rows:?}");
        assert_eq!(job.cpu_source, CpuSource::LastReading);
    }
    let exited = row(&rows, "(exited children)");
    assert_eq!(cpu(exited), 13 * TICK_NS);
    assert_eq!(exited.cpu_source, CpuSource::Unattributed);
    assert!(
        exited.note.contains("2 processes (101, 102)"),
        "{}",
        exited.note
    );
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(
        total,
        33 * TICK_NS,
        "the rows add up to the reaper's growth: {rows:?}"
    );
}

#[test]
fn a_process_seen_by_name_counts_under_its_role() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(300, "encoder", 'S', 77, [100, 20, 0, 0], 40);
    world.process(301, "bash", 'S', 77, [500, 0, 0, 0], 1);
    let mut roles = WatchRoles::default();
    roles.names.insert("encoder".into(), "enc".into());
    let mut acc = world.opened(
        WatchList {
            pids: Vec::new(),
            names: vec!["encoder".into(), "ghost".into()],
            roles,
        },
        0,
    );
    world.process(300, "encoder", 'S', 77, [125, 25, 0, 0], 40);
    world.process(301, "bash", 'S', 77, [900, 0, 0, 0], 1);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(
        rows.len(),
        2,
        "the command and the encoder, not bash: {rows:?}"
    );
    let encoder = row(&rows, "encoder");
    assert_eq!(encoder.role, ProcessRole::Watched);
    assert_eq!(encoder.watch_role, "enc");
    assert_eq!(
        (encoder.user_ns, encoder.sys_ns),
        (25 * TICK_NS, 5 * TICK_NS)
    );
    assert_eq!(encoder.peak_rss_bytes, 40 * MIB);
    assert_eq!(acc.unmatched_names(), vec!["ghost".to_owned()]);
}

/// The command (10 ticks of CPU, a 10 MiB VmHWM) stopped with SIGINT: a zombie with its
/// final times (40 + 4 ticks), read then reaped by framelab at 1 s (ru_maxrss 14 MiB), as
/// `CollectorRecording` does it; `meanwhile` runs once it left /proc, before `reaped`.
/// Its row after the window closed at 2 s.
fn command_reaped_by_framelab(meanwhile: impl FnOnce(&mut Accounting)) -> ProcessStats {
    use crate::session::executor::Executor;
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [10, 0, 0, 0], 10);
    world.exec.max_rss_bytes = 14 * MIB;
    let mut acc = world.opened(WatchList::default(), 0);
    world.exec.signal_group(CMD, libc::SIGINT);
    world.process(CMD, "pipeline", 'Z', COLLECTOR, [40, 4, 0, 0], 0);
    let reaped = world
        .exec
        .reap_one(&mut |zombie| {
            acc.set_reaping(true);
            acc.final_reading(zombie, 1_000_000_000);
        })
        .expect("the command ended");
    world.gone(CMD);
    meanwhile(&mut acc);
    acc.reaped(reaped.pid, reaped.cpu, reaped.max_rss_bytes, 1_000_000_000);
    acc.set_reaping(false);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.into_iter().next().unwrap()
}

#[test]
fn the_command_reaped_by_framelab_counts_its_final_reading_and_its_rusage_peak() {
    let command = command_reaped_by_framelab(|_| {});
    assert_eq!(
        (command.user_ns, command.sys_ns),
        (30 * TICK_NS, 4 * TICK_NS)
    );
    assert_eq!(
        command.cpu_source,
        CpuSource::Proc,
        "its final reading, not a guess"
    );
    // It reaped no child: ru_maxrss is its own peak, higher than the VmHWM last read.
    assert_eq!(command.peak_rss_bytes, 14 * MIB);
    assert_eq!(command.wall_ns, 1_000_000_000, "alive up to its reaping");
}

/// The sampler's thread sweeps beside the reaper: between the command's final reading and
/// its reaping a sweep would find it gone from /proc and settle it as reaped by someone
/// else, losing what the reaping says (its rusage peak, its end). The sweep waits.
#[test]
fn a_sweep_between_a_final_reading_and_the_reaping_waits_for_the_next_interval() {
    // The sampler's thread, at its interval, before `reaped` could be told.
    let command = command_reaped_by_framelab(|acc| acc.sweep(1_500_000_000, CMD));
    assert_eq!(
        (command.user_ns, command.sys_ns),
        (30 * TICK_NS, 4 * TICK_NS)
    );
    assert_eq!(
        command.peak_rss_bytes,
        14 * MIB,
        "the reaping's rusage peak"
    );
    assert_eq!(command.wall_ns, 1_000_000_000, "alive up to its reaping");
}

#[test]
fn a_tree_process_reaped_without_a_reading_goes_to_the_exited_children_row() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    // An orphan framelab adopted and reaped before any sweep read it.
    let rusage = CpuTimes {
        user_ns: 70 * TICK_NS,
        sys_ns: 10 * TICK_NS,
        ..CpuTimes::default()
    };
    acc.reaped(555, rusage, 0, 500_000_000);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    let exited = row(&rows, "(exited children)");
    assert_eq!(
        (exited.user_ns, exited.sys_ns),
        (70 * TICK_NS, 10 * TICK_NS)
    );
    assert!(
        exited
            .note
            .contains("reaped by framelab without a final reading (1 process)"),
        "{}",
        exited.note
    );
}

fn exit_record(pid: u32, ppid: u32, comm: &str, cpu_ms: i64, lived_ms: i64, hwm_mib: u64) -> Exit {
    Exit {
        pid,
        ppid,
        comm: comm.into(),
        cpu_ns: cpu_ms * 1_000_000,
        user_us: cpu_ms * 1000,
        sys_us: 0,
        whole: true,
        hiwater_rss_bytes: hwm_mib * MIB,
        lifetime_ns: Some(lived_ms * 1_000_000),
        thread_lifetime_ns: Some(lived_ms * 1_000_000),
        thread: None,
    }
}

fn with_exit_records(world: &mut World) {
    world.exec.exits = Some(Default::default());
}

#[test]
fn a_child_that_ends_between_readings_counts_its_exit_record() {
    let mut world = World::new();
    with_exit_records(&mut world);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(101, "encode", 'S', CMD, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    world.process(101, "encode", 'S', CMD, [30, 0, 0, 0], 1);
    acc.sample(1_000_000_000, CMD);
    // It ends with 350 ms in all, 1.2 s after its start; the command reaps it.
    world.exit(exit_record(101, CMD, "encode", 350, 1200, 6));
    world.gone(101);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 35, 0], 1);
    acc.sample(1_500_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let encode = row(&rows, "encode");
    assert_eq!(encode.cpu_source, CpuSource::Exit, "{rows:?}");
    assert_eq!(cpu(encode), 350_000_000);
    assert_eq!(
        encode.peak_rss_bytes,
        6 * MIB,
        "its record's peak, above what /proc said"
    );
    // Alive up to its exit, 1.2 s after its start at 50 ms (tick 5 since boot): not up to
    // the sweep that found it gone, at 1.5 s.
    assert_eq!(encode.wall_ns, 1_250_000_000);
    assert!(
        rows.iter().all(|r| r.name != "(exited children)"),
        "{rows:?}"
    );
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(
        total,
        35 * TICK_NS,
        "the rows add up to the reaper's growth"
    );
}

/// A child's start is in clock ticks: one started within the launch's tick reads as
/// started before the launch. Its wall is its lifetime from its exit record, not cut short
/// by the truncation; nor by a window that opens at launch but is noticed late (`sh -c` of
/// echo builtins: `seq` at 0 ms of wall for 0.8 ms of CPU, the shell 1.9 ms for 2.6 ms).
#[test]
fn a_child_started_in_the_launchs_tick_lives_its_whole_lifetime() {
    for noticed_ns in [0, 5_000_000] {
        let seq = short_child_row(noticed_ns);
        assert_eq!(seq.cpu_source, CpuSource::Exit, "{seq:?}");
        assert_eq!(seq.wall_ns, 7_000_000, "its lifetime, from the launch");
        assert!(seq.wall_ns >= cpu(&seq), "{seq:?}");
    }
}

/// The row of a child that lived 7 ms from the launch, in a window opened at launch and
/// noticed `noticed_ns` after it.
fn short_child_row(noticed_ns: i64) -> ProcessStats {
    use crate::session::executor::Executor;
    let mut world = World::new();
    with_exit_records(&mut world);
    // Started at tick 5 (50 ms after boot), the launch 5 ms into that tick.
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = Accounting::new(
        world.exec.procfs(),
        55_000_000,
        COLLECTOR,
        50_000_000,
        WatchList::default(),
        world.exec.exit_records(),
    );
    acc.sample(0, CMD);
    if noticed_ns == 0 {
        acc.start_window(0, CMD, true);
    }
    world.process(101, "seq", 'R', CMD, [0, 0, 0, 0], 1);
    acc.sample(2_000_000, CMD);
    world.exit(exit_record(101, CMD, "seq", 6, 7, 1));
    world.gone(101);
    acc.sample(noticed_ns.max(4_000_000), CMD);
    if noticed_ns > 0 {
        acc.start_window(noticed_ns, CMD, true);
    }
    acc.end_window(30_000_000, CMD);
    row(&acc.results(), "seq").clone()
}

/// The exit records drained after a reader's reading can be of children it reaps only
/// later: the growth that holds them then is not counted again as children never seen.
#[test]
fn exit_records_drained_before_their_reaping_are_counted_once() {
    let mut world = World::new();
    with_exit_records(&mut world);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    // 201 was reaped before the reading; 202 had ended (its record sent) but not yet.
    world.exit(exit_record(201, CMD, "burn", 30, 30, 1));
    world.exit(exit_record(202, CMD, "burn", 30, 30, 1));
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 3, 0], 1);
    acc.sample(1_000_000_000, CMD);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 6, 0], 1);
    acc.sample(1_500_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let exited = row(&rows, "(exited children)");
    assert_eq!(cpu(exited), 60_000_000, "{rows:?}");
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(
        total,
        6 * TICK_NS,
        "the rows add up to the reaper's growth: {rows:?}"
    );
}

/// A child that lived less than a reading: its exit record came in the sweep that first
/// listed it, as a zombie (no VmHWM left in its status). The record is its own: its peak
/// is the record's, and its CPU is not counted again as a child no sweep saw (curl under
/// `sh -c 'for …; do curl …; done'`: 4 of 19 rows at 0 B, the shell's rows over its
/// children's time).
#[test]
fn a_child_first_read_as_a_zombie_takes_its_exit_record() {
    let mut world = World::new();
    with_exit_records(&mut world);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    world.exit(exit_record(202, CMD, "curl", 30, 40, 10));
    world.stat(202, "curl", 'Z', CMD, [3, 0, 0, 0], 5);
    acc.sample(1_000_000_000, CMD);
    world.gone(202);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 3, 0], 1);
    acc.sample(1_500_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(row(&rows, "curl").peak_rss_bytes, 10 * MIB, "{rows:?}");
    let total: i64 = rows.iter().map(cpu).sum();
    assert_eq!(total, 3 * TICK_NS, "counted once: {rows:?}");
}

/// A shell's child read between its fork and its exec still had the shell's name; it
/// ran, and ended, as `sleep`. Its row is named as the kernel named it at its exit (a
/// loaded machine made this race common: `sh -c 'sleep 0.1; …'` showed a second `sh`).
#[test]
fn a_child_read_before_its_exec_is_named_as_it_ended() {
    let mut world = World::new();
    with_exit_records(&mut world);
    world.process(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(101, "sh", 'S', CMD, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    world.exit(exit_record(101, CMD, "sleep", 1, 100, 1));
    world.gone(101);
    acc.sample(500_000_000, CMD);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(row(&rows, "sleep").cpu_source, CpuSource::Exit, "{rows:?}");
    assert_eq!(
        rows.iter().filter(|r| r.name == "sh").count(),
        1,
        "{rows:?}"
    );
}

#[test]
fn a_process_of_a_watched_name_that_lived_between_readings_has_a_row_from_its_exit_record() {
    let mut world = World::new();
    with_exit_records(&mut world);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = world.opened(
        WatchList {
            names: vec!["encoder".into()],
            ..WatchList::default()
        },
        0,
    );
    // Started by a daemon outside the tree, never read by a sweep: only its record says.
    world.exit(exit_record(400, 77, "encoder", 120, 200, 8));
    // And one of the command's own children of that name: the tree's, not watched.
    world.exit(exit_record(401, CMD, "encoder", 90, 100, 1));
    acc.sample(500_000_000, CMD);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    let watched: Vec<&ProcessStats> = rows
        .iter()
        .filter(|r| r.role == ProcessRole::Watched)
        .collect();
    assert_eq!(watched.len(), 1, "{rows:?}");
    let encoder = watched[0];
    assert_eq!((encoder.pid, encoder.watch_role.as_str()), (400, "encoder"));
    assert_eq!(encoder.cpu_source, CpuSource::Exit);
    assert_eq!(cpu(encoder), 120_000_000);
    assert_eq!(encoder.peak_rss_bytes, 8 * MIB);
    assert_eq!(encoder.wall_ns, 200_000_000);
    assert!(
        acc.unmatched_names().is_empty(),
        "its record matched the name"
    );
}

#[test]
fn a_window_opened_again_counts_from_its_own_start_and_keeps_the_services() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [10, 0, 0, 0], 1);
    world.process(200, "db", 'S', COLLECTOR, [50, 0, 0, 0], 1);
    let mut first = world.accounting(WatchList::default());
    first.set_services(vec![(200, "db".into())]);
    first.sample(0, CMD);
    first.start_window(0, CMD, false);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [40, 0, 0, 0], 1);
    world.process(200, "db", 'S', COLLECTOR, [70, 0, 0, 0], 1);
    first.end_window(1_000_000_000, CMD);
    // A bench's next window: what was used before it is the first window's.
    let mut again = first.restarted();
    again.sample(1_000_000_000, CMD);
    again.start_window(1_000_000_000, CMD, false);
    world.process(CMD, "pipeline", 'S', COLLECTOR, [45, 0, 0, 0], 1);
    world.process(200, "db", 'S', COLLECTOR, [71, 0, 0, 0], 1);
    again.end_window(2_000_000_000, CMD);
    let rows = again.results();
    assert_eq!(cpu(row(&rows, "pipeline")), 5 * TICK_NS, "{rows:?}");
    let db = row(&rows, "db");
    assert_eq!((db.role, db.service.as_str()), (ProcessRole::Service, "db"));
    assert_eq!(cpu(db), TICK_NS);
    assert_eq!(cpu(row(&first.results(), "pipeline")), 30 * TICK_NS);
}

#[test]
fn a_child_reaped_by_framelab_before_any_reading_counts_its_rusage_unattributed() {
    let mut world = World::new();
    world.process(CMD, "pipeline", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    let mut acc = world.opened(WatchList::default(), 0);
    // A process of the tree framelab never read (it lived between two readings) and reaped.
    let rusage = CpuTimes {
        user_ns: 30 * TICK_NS,
        sys_ns: 10 * TICK_NS,
        ..CpuTimes::default()
    };
    acc.reaped(555, rusage, 4 * MIB, 500_000_000);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    let exited = row(&rows, "(exited children)");
    assert_eq!(
        (exited.user_ns, exited.sys_ns),
        (30 * TICK_NS, 10 * TICK_NS)
    );
    assert_eq!(exited.cpu_source, CpuSource::Unattributed);
    assert_eq!(
        exited.note,
        "0.40 s reaped by framelab without a final reading (1 process)"
    );
    // After the window closed, a reaping is not the run's.
    acc.reaped(556, rusage, 4 * MIB, 1_500_000_000);
    assert_eq!(acc.results(), rows);
}

#[test]
fn cpu_splits_as_the_ticks_do_names_are_cut_as_the_kernel_does_and_intervals_read_well() {
    assert_eq!(split_like(100, 3, 1), (75, 25));
    assert_eq!(split_like(100, 0, 0), (100, 0), "no ticks: all user");
    assert_eq!(
        split_like(100, -5, 10),
        (0, 100),
        "a negative share counts as none"
    );
    assert_eq!(comm_of("a-very-long-process-name"), "a-very-long-pro");
    // Cut at 15 bytes, never inside a character.
    assert_eq!(comm_of("ééééééééé"), "ééééééé");
    assert_eq!(interval_text(50_000_000), "50 ms");
    assert_eq!(interval_text(2_000_000_000), "2 s");
}

#[test]
fn a_service_that_daemonizes_keeps_its_daemon_and_the_daemons_children() {
    // `pg_ctl start`: the service's shell (200) starts pg_ctl (201), which starts the
    // server (202) and exits; the server is reparented to framelab (the subreaper), then
    // forks a backend (203) for the command's connection.
    let mut world = World::new();
    world.process(CMD, "client", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(200, "su", 'S', COLLECTOR, [0, 0, 0, 0], 1);
    world.process(201, "pg_ctl", 'S', 200, [0, 0, 0, 0], 1);
    world.process(202, "postgres", 'S', 201, [0, 0, 0, 0], 1);
    let mut acc = world.accounting(WatchList::default());
    acc.set_services(vec![(200, "db".into())]);
    acc.sample(0, CMD);
    acc.start_window(0, CMD, false);
    world.gone(201);
    world.gone(200);
    world.process(202, "postgres", 'S', COLLECTOR, [1, 0, 0, 0], 1);
    world.process(203, "postgres", 'S', 202, [40, 0, 0, 0], 1);
    acc.sample(1_000_000_000, CMD);
    acc.end_window(2_000_000_000, CMD);
    let rows = acc.results();
    let server: Vec<&ProcessStats> = rows.iter().filter(|r| r.name == "postgres").collect();
    assert_eq!(server.len(), 2, "{rows:?}");
    for process in server {
        assert_eq!(
            (process.role, process.service.as_str()),
            (ProcessRole::Service, "db"),
            "{process:?}"
        );
    }
}

#[test]
fn the_commands_children_are_the_runs_though_it_was_forked_before_the_runs_clock() {
    // The run's clock starts at the command's exec (100 ms); its fork came 20 ms before,
    // while it joined the run's cgroup. Its child, read before it, is the run's.
    let mut world = World::new();
    world.stat(CMD, "sh", 'S', COLLECTOR, [0, 0, 0, 0], 8);
    world.stat(101, "burner", 'R', CMD, [30, 0, 0, 0], 10);
    use crate::session::executor::Executor;
    let exit_records = world.exec.exit_records();
    let mut acc = Accounting::new(
        world.exec.procfs(),
        100_000_000,
        COLLECTOR,
        50_000_000,
        WatchList::default(),
        exit_records,
    );
    acc.set_launch(75_000_000);
    acc.sample(0, CMD);
    acc.start_window(0, CMD, false);
    world.stat(101, "burner", 'R', CMD, [60, 0, 0, 0], 10);
    acc.sample(500_000_000, CMD);
    acc.end_window(1_000_000_000, CMD);
    let rows = acc.results();
    assert_eq!(cpu(row(&rows, "burner")), 30 * TICK_NS, "{rows:?}");
}
