//! The run group's CPU over the window against the process rows: what no row holds is
//! shown as a `(not seen by name)` row, not dropped.

use super::cgroup::GroupCpu;
use crate::model::{CpuSource, ProcessRole, ProcessStats, RunGroupFacts};

/// Below this, a difference between the group and the rows is not shown: the group counts
/// µs, and a reading of a running process lags the group's by a fraction of a tick.
const SHOWN_FROM_NS: i64 = 1_000_000;

/// Fills in `facts`' CPU figures and returns the `(not seen by name)` row when the group
/// counted more than the rows of its processes (every role but watched: those live outside
/// it) by more than their rounding. `window_ns` is the row's wall time.
pub fn not_seen_row(
    rows: &[ProcessStats],
    cpu: GroupCpu,
    window_ns: i64,
    resolution_ns: i64,
    facts: &mut RunGroupFacts,
) -> Option<ProcessStats> {
    let of_the_run: Vec<&ProcessStats> = rows
        .iter()
        .filter(|r| r.role != ProcessRole::Watched)
        .collect();
    let seen_ns: i64 = of_the_run.iter().map(|r| r.user_ns + r.sys_ns).sum();
    facts.cpu_ns = Some(cpu.usage_ns);
    facts.user_ns = Some(cpu.user_ns);
    facts.sys_ns = Some(cpu.sys_ns);
    facts.rows_cpu_ns = Some(seen_ns);
    let missing = cpu.usage_ns - seen_ns;
    if missing <= SHOWN_FROM_NS {
        return None;
    }
    let seen_user: i64 = of_the_run.iter().map(|r| r.user_ns).sum();
    let seen_sys: i64 = of_the_run.iter().map(|r| r.sys_ns).sum();
    // The group's own split of what is missing, as near as its figures give it.
    let (user, sys) = split(missing, cpu.user_ns - seen_user, cpu.sys_ns - seen_sys);
    Some(ProcessStats {
        pid: 0,
        ppid: 0,
        name: NOT_SEEN.into(),
        role: ProcessRole::Child,
        user_ns: user,
        sys_ns: sys,
        wall_ns: window_ns,
        peak_rss_bytes: 0,
        cpu_resolution_ns: resolution_ns,
        cpu_source: CpuSource::Unattributed,
        note: format!(
            "the run's cgroup counted {:.3} s of CPU over the window, the rows of its processes {:.3} s: the rest is what processes used after their last reading or exit record (a record is written before its process has finished exiting), what processes that lived between two readings used where no record names them, and what rows read in clock ticks rounded off",
            cpu.usage_ns as f64 / 1e9,
            seen_ns as f64 / 1e9
        ),
        service: String::new(),
        watch_role: String::new(),
    })
}

pub const NOT_SEEN: &str = "(not seen by name)";

fn split(total: i64, user: i64, sys: i64) -> (i64, i64) {
    let (user, sys) = (user.max(0), sys.max(0));
    if user + sys == 0 {
        return (total, 0);
    }
    let sys_ns = (total as i128 * sys as i128 / (user + sys) as i128) as i64;
    (total - sys_ns, sys_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, role: ProcessRole, user_ms: i64, sys_ms: i64) -> ProcessStats {
        ProcessStats {
            name: name.into(),
            role,
            user_ns: user_ms * 1_000_000,
            sys_ns: sys_ms * 1_000_000,
            cpu_resolution_ns: 1,
            ..ProcessStats::default()
        }
    }

    #[test]
    fn what_the_rows_miss_is_a_row_of_its_own() {
        let rows = vec![
            row("sh", ProcessRole::Command, 100, 20),
            row("burner", ProcessRole::Child, 500, 0),
            // Outside the group: not part of the comparison.
            row("daemon", ProcessRole::Watched, 900, 0),
        ];
        let cpu = GroupCpu {
            usage_ns: 1_000_000_000,
            user_ns: 950_000_000,
            sys_ns: 50_000_000,
        };
        let mut facts = RunGroupFacts::default();
        let extra = not_seen_row(&rows, cpu, 2_000_000_000, 1000, &mut facts).unwrap();
        assert_eq!(extra.name, NOT_SEEN);
        assert_eq!(extra.user_ns + extra.sys_ns, 380_000_000);
        assert_eq!(extra.cpu_source, CpuSource::Unattributed);
        assert_eq!(facts.rows_cpu_ns, Some(620_000_000));
        assert_eq!(facts.cpu_ns, Some(1_000_000_000));
    }

    #[test]
    fn rounding_is_no_row() {
        let rows = vec![row("sh", ProcessRole::Command, 100, 0)];
        let cpu = GroupCpu {
            usage_ns: 100_400_000,
            user_ns: 100_400_000,
            sys_ns: 0,
        };
        let mut facts = RunGroupFacts::default();
        assert!(not_seen_row(&rows, cpu, 1, 1000, &mut facts).is_none());
        assert_eq!(facts.cpu_ns, Some(100_400_000));
    }
}
