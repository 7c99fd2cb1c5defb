//! The machine's CPU time that no task had over the window (stolen by the hypervisor, in
//! interrupts): what the run file and the report say lies within what `/proc/stat` counted
//! between this test's own readings just before and just after the run.

use crate::common;

use common::proc_stat::{taken_ticks, tick_ns};
use common::*;

#[test]
fn cpu_time_no_task_had_is_within_what_proc_stat_counted_around_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let tick_ns = tick_ns();
    let (before, started) = (taken_ticks(), std::time::Instant::now());
    let (out, file) = run_testprog(&dir, "taken", &[], &["rate", "2000", "2"]);
    let (after, elapsed_ns) = (taken_ticks(), started.elapsed().as_nanos() as i64);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = report_json(&file);
    let taken = &report["cpu_taken"];
    let field = |name: &str| {
        taken[name]
            .as_i64()
            .unwrap_or_else(|| panic!("{name}: {taken}"))
    };
    // Every CPU of the machine, in its ticks, between two readings inside the run.
    assert_eq!(field("cpus") as usize, after.len(), "{taken}");
    assert_eq!(field("tick_ns"), tick_ns);
    assert!(
        (1..=elapsed_ns).contains(&field("wall_ns")),
        "{taken}: the run took {elapsed_ns} ns"
    );
    // Each figure at most what the kernel counted around the whole run, category by
    // category and for the CPU that lost most: a wrong column or unit overshoots.
    let around = |cpu: &u32, i: usize| (after[cpu][i] - before[cpu][i]) * tick_ns;
    let total = |i: usize| after.keys().map(|cpu| around(cpu, i)).sum::<i64>();
    for (i, name) in ["irq_ns", "softirq_ns", "steal_ns"].into_iter().enumerate() {
        assert!(
            (0..=total(i)).contains(&field(name)),
            "{name}: {taken}, /proc/stat counted {} around the run",
            total(i)
        );
    }
    let most = field("most_taken_cpu") as u32;
    let most_around: i64 = (0..3).map(|i| around(&most, i)).sum();
    assert!(
        field("most_taken_ns") <= most_around,
        "{taken}: {most_around}"
    );
    let all_taken = field("irq_ns") + field("softirq_ns") + field("steal_ns");
    assert!(field("most_taken_ns") <= all_taken, "{taken}");
    // The report says it in one line.
    assert!(
        stdout(&out).contains("cpu taken ") && stdout(&out).contains("(/proc/stat, "),
        "{}",
        stdout(&out)
    );
}
