//! CPU and memory of the processes over the measured window.

use serde::{Deserialize, Serialize};

use super::{CpuSummary, ProcessRow};
use crate::model::{ProcessRole, ProcessStats};

/// CPU time as a percentage of a window; none for a window of no length (one that closed
/// where it opened: no load, rather than 0%).
pub fn window_load_pct(cpu_ns: i64, window_ns: i64) -> Option<f64> {
    (window_ns > 0).then(|| load_pct(cpu_ns, window_ns))
}

/// CPU time as a percentage of a wall time; 0 when the wall time is not positive.
pub fn load_pct(cpu_ns: i64, wall_ns: i64) -> f64 {
    if wall_ns <= 0 {
        return 0.0;
    }
    cpu_ns as f64 * 100.0 / wall_ns as f64
}

/// One row per process: its load over the time it was alive inside the window.
pub fn process_rows(processes: &[ProcessStats]) -> Vec<ProcessRow> {
    processes
        .iter()
        .map(|p| {
            let load = load_pct(p.user_ns.saturating_add(p.sys_ns), p.wall_ns);
            ProcessRow {
                pid: p.pid,
                name: p.name.clone(),
                role: p.role,
                wall_ns: p.wall_ns,
                user_ns: p.user_ns,
                sys_ns: p.sys_ns,
                load_pct: load,
                cores: load / 100.0,
                peak_rss_bytes: p.peak_rss_bytes,
                cpu_resolution_ns: p.cpu_resolution_ns,
                service: p.service.clone(),
                watch_role: p.watch_role.clone(),
            }
        })
        .collect()
}

/// Everything started or watched, over the window. `work_units` are the frames measured
/// (or `--frames N` for an uninstrumented command); no CPU per frame without them, nor
/// without processes (an imported run).
pub fn cpu_summary(processes: &[ProcessStats], window_ns: i64, work_units: u64) -> CpuSummary {
    let user_ns: i64 = processes
        .iter()
        .map(|p| p.user_ns)
        .fold(0, i64::saturating_add);
    let sys_ns: i64 = processes
        .iter()
        .map(|p| p.sys_ns)
        .fold(0, i64::saturating_add);
    let cpu_ns = user_ns.saturating_add(sys_ns);
    let load = window_load_pct(cpu_ns, window_ns);
    CpuSummary {
        user_ns,
        sys_ns,
        load_pct: load,
        cores: load.map(|l| l / 100.0),
        // An imported run measured no CPU: none a frame, rather than a zero.
        cpu_per_frame_ns: (work_units > 0 && !processes.is_empty())
            .then(|| cpu_ns as f64 / work_units as f64),
        // Each process's own peak, added: an upper bound of the tree's peak.
        peak_rss_bytes: processes
            .iter()
            .map(|p| p.peak_rss_bytes)
            .fold(0, u64::saturating_add),
        collector_load_pct: None,
        cpu_resolution_ns: cpu_resolution_ns(processes),
        work_units,
    }
}

/// The name of the role a process row counts under in comparisons: `command` for the
/// launched tree (the command and its descendants), a service's name for its processes, a
/// watched process's role for the rest (`--watch-pid ROLE=PID`; its own name in runs before
/// schema 7; two watched processes of one role are one role).
pub fn role_of(row: &ProcessRow) -> String {
    match row.role {
        ProcessRole::Command | ProcessRole::Child => COMMAND_ROLE.into(),
        ProcessRole::Watched => {
            let role = if row.watch_role.is_empty() {
                &row.name
            } else {
                &row.watch_role
            };
            // A watched process named like the command's role must not merge into it.
            if role == COMMAND_ROLE {
                format!("{COMMAND_ROLE}-watched")
            } else {
                role.clone()
            }
        }
        ProcessRole::Service => row.service.clone(),
    }
}

/// What a process row is, for the process table's role column: `command`, `child`,
/// `service NAME`, `watched ROLE`; the collector's own line is not a row.
pub fn role_label(row: &ProcessRow) -> String {
    match row.role {
        ProcessRole::Command => COMMAND_ROLE.into(),
        ProcessRole::Child => "child".into(),
        ProcessRole::Service => format!("service {}", row.service),
        ProcessRole::Watched => format!("watched {}", role_of(row)),
    }
}

pub const COMMAND_ROLE: &str = "command";

/// CPU of one role over the measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleCpu {
    pub role: String,
    pub cpu_ns: i64,
    /// CPU ÷ the window, as a % of one core (the role's processes may have lived less);
    /// none for an empty window.
    pub load_pct: Option<f64>,
    /// The coarsest resolution of its processes' CPU figures (0 unknown).
    pub cpu_resolution_ns: i64,
}

/// Each role's CPU, in order of first appearance (the command first when it has rows).
pub fn role_cpu(rows: &[ProcessRow], window_ns: i64) -> Vec<RoleCpu> {
    let mut roles: Vec<RoleCpu> = Vec::new();
    for row in rows {
        let role = role_of(row);
        let at = match roles.iter().position(|r| r.role == role) {
            Some(at) => at,
            None => {
                roles.push(RoleCpu {
                    role,
                    cpu_resolution_ns: row.cpu_resolution_ns,
                    ..RoleCpu::default()
                });
                roles.len() - 1
            }
        };
        let r = &mut roles[at];
        r.cpu_ns = r
            .cpu_ns
            .saturating_add(row.user_ns.saturating_add(row.sys_ns));
        r.cpu_resolution_ns = if r.cpu_resolution_ns <= 0 || row.cpu_resolution_ns <= 0 {
            0
        } else {
            r.cpu_resolution_ns.max(row.cpu_resolution_ns)
        };
    }
    for r in &mut roles {
        r.load_pct = window_load_pct(r.cpu_ns, window_ns);
    }
    roles.sort_by_key(|r| r.role != COMMAND_ROLE);
    roles
}

/// /proc's clock tick (USER_HZ, 100 on every Linux): the resolution of utime and stime, so
/// of the user/sys split even where the total is finer.
pub const CLOCK_TICK_NS: i64 = 10_000_000;

/// Whether `extra_ns` of CPU beside `of_ns` is news: at least a clock tick (rows counted in
/// ticks round off that much) and at least 1% of `of_ns` (less moves no printed load or CPU
/// figure by its last digit).
pub fn beyond_tick_rounding(extra_ns: i64, of_ns: i64) -> bool {
    extra_ns >= CLOCK_TICK_NS && extra_ns as f64 >= 0.01 * of_ns as f64
}

/// The coarsest resolution among `processes` (0 when any is unknown: older or imported runs).
pub fn cpu_resolution_ns(processes: &[ProcessStats]) -> i64 {
    if processes.iter().any(|p| p.cpu_resolution_ns <= 0) {
        return 0;
    }
    processes
        .iter()
        .map(|p| p.cpu_resolution_ns)
        .max()
        .unwrap_or(0)
}

/// The resolution of a load % (or, ÷ 100, of cores) from CPU of `resolution_ns` over
/// `wall_ns`; 0 when unknown.
pub fn load_resolution_pct(resolution_ns: i64, wall_ns: i64) -> f64 {
    if resolution_ns <= 0 || wall_ns <= 0 {
        return 0.0;
    }
    resolution_ns as f64 * 100.0 / wall_ns as f64
}

/// The resolution of a cores figure beside a load % of `load_resolution_pct` shown with at
/// most `load_decimals`: the load's shown step over 100, so the two agree (a load of `10`
/// beside cores `0.1`, not `0`); 0 when unknown.
pub fn cores_resolution(load_resolution_pct: f64, load_decimals: usize) -> f64 {
    if load_resolution_pct <= 0.0 {
        return 0.0;
    }
    crate::units::shown_step(load_resolution_pct, load_decimals) / 100.0
}

/// The resolution of user or sys alone: the split is in clock ticks; 0 when unknown.
pub fn split_resolution_ns(resolution_ns: i64) -> i64 {
    if resolution_ns <= 0 {
        0
    } else {
        resolution_ns.max(CLOCK_TICK_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, user_ns: i64, sys_ns: i64, wall_ns: i64, rss: u64) -> ProcessStats {
        ProcessStats {
            pid,
            ppid: 1,
            name: format!("p{pid}"),
            role: ProcessRole::Child,
            user_ns,
            sys_ns,
            wall_ns,
            peak_rss_bytes: rss,
            ..ProcessStats::default()
        }
    }

    #[test]
    fn load_and_cores_per_process_by_hand() {
        // 1.5 s user + 0.5 s sys over 1 s alive = 200% = 2 cores.
        // 0.25 s over 2 s = 12.5%.
        let rows = process_rows(&[
            process(10, 1_500_000_000, 500_000_000, 1_000_000_000, 1 << 20),
            process(11, 200_000_000, 50_000_000, 2_000_000_000, 0),
        ]);
        assert_eq!(rows[0].load_pct, 200.0);
        assert_eq!(rows[0].cores, 2.0);
        assert_eq!(rows[1].load_pct, 12.5);
        assert_eq!(rows[1].cores, 0.125);
        assert_eq!(rows[1].role, ProcessRole::Child);
    }

    #[test]
    fn summary_is_over_the_window_and_per_frame() {
        // 2.25 s of CPU over a 2 s window = 112.5%; over 900 frames = 2.5 ms per frame.
        let ps = [
            process(10, 1_500_000_000, 500_000_000, 1_000_000_000, 3 << 20),
            process(11, 200_000_000, 50_000_000, 2_000_000_000, 1 << 20),
        ];
        let c = cpu_summary(&ps, 2_000_000_000, 900);
        assert_eq!(c.user_ns, 1_700_000_000);
        assert_eq!(c.sys_ns, 550_000_000);
        assert_eq!(c.load_pct, Some(112.5));
        assert_eq!(c.cores, Some(1.125));
        assert_eq!(c.cpu_per_frame_ns, Some(2_500_000.0));
        assert_eq!(c.peak_rss_bytes, 4 << 20);
    }

    #[test]
    fn zero_window_and_no_frames_give_no_nan() {
        let ps = [process(10, 5, 5, 0, 0)];
        assert_eq!(process_rows(&ps)[0].load_pct, 0.0);
        // An empty window has no load at all (it said 0%).
        let c = cpu_summary(&ps, 0, 0);
        assert_eq!((c.load_pct, c.cores), (None, None));
        assert_eq!(c.cpu_per_frame_ns, None);
        // No process measured (an imported trace): no CPU per frame, not zero.
        let c = cpu_summary(&[], 1_000, 10);
        assert_eq!(c.cpu_per_frame_ns, None);
    }
}
