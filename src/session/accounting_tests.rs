//! The accounting of watched processes against fixture /proc trees: the children they reap,
//! a pid taken by another process, roles.

use super::*;
use crate::session::watch::WatchRoles;

const TICK_NS: i64 = 10_000_000;
/// framelab's pid in the fixtures: it has no children there.
const COLLECTOR: u32 = 1;
/// The command's pid: absent from the fixtures.
const COMMAND: u32 = 99_999;

/// Writes `/proc/PID/stat` with these times (ticks) and start (ticks since boot).
fn write_stat(root: &std::path::Path, pid: u32, name: &str, times: [i64; 4], start: i64) {
    let dir = root.join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let [utime, stime, cutime, cstime] = times;
    std::fs::write(
        dir.join("stat"),
        format!("{pid} ({name}) S 77 0 0 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0 {start} 1000 10 0"),
    )
    .unwrap();
}

fn watching(root: &std::path::Path, pid: u32, role: &str) -> Accounting {
    let mut roles = WatchRoles::default();
    roles.pids.insert(pid, role.to_owned());
    Accounting::new(
        Procfs::at(root, 100),
        0,
        COLLECTOR,
        50_000_000,
        WatchList {
            pids: vec![pid],
            names: Vec::new(),
            roles,
        },
        Err("not in a fixture".into()),
    )
}

#[test]
fn a_watched_process_counts_the_children_it_reaped_over_the_window() {
    let proc = tempfile::tempdir().unwrap();
    write_stat(proc.path(), 4242, "python3", [100, 0, 10, 0], 5);
    let mut acc = watching(proc.path(), 4242, "decoderd");
    acc.sample(0, COMMAND);
    acc.start_window(1_000_000_000, COMMAND, false);
    // 10 ticks of its own, 30 + 5 of children it reaped.
    write_stat(proc.path(), 4242, "python3", [110, 0, 40, 5], 5);
    acc.end_window(2_000_000_000, COMMAND);
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

#[test]
fn a_watched_pid_taken_by_another_process_is_not_followed() {
    let proc = tempfile::tempdir().unwrap();
    write_stat(proc.path(), 4242, "decoderd", [100, 0, 0, 0], 5);
    let mut acc = watching(proc.path(), 4242, "d");
    acc.sample(0, COMMAND);
    acc.start_window(1_000_000_000, COMMAND, false);
    write_stat(proc.path(), 4242, "decoderd", [120, 0, 0, 0], 5);
    acc.sample(1_500_000_000, COMMAND);
    // The daemon ended; a new process got its pid and burns far more.
    write_stat(proc.path(), 4242, "cc1", [900, 50, 0, 0], 300);
    acc.sample(2_000_000_000, COMMAND);
    acc.end_window(3_000_000_000, COMMAND);
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
    let proc = tempfile::tempdir().unwrap();
    write_stat(proc.path(), 4242, "redis-server", [100, 0, 0, 0], 5);
    let mut acc = Accounting::new(
        Procfs::at(proc.path(), 100),
        0,
        COLLECTOR,
        50_000_000,
        WatchList {
            pids: vec![4242],
            ..WatchList::default()
        },
        Err("not in a fixture".into()),
    );
    acc.sample(0, COMMAND);
    acc.start_window(1_000_000_000, COMMAND, false);
    acc.end_window(2_000_000_000, COMMAND);
    assert_eq!(acc.results()[0].watch_role, "redis-server");
}
