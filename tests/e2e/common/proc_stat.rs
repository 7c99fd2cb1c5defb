//! The CPU time `/proc/stat` counts as taken from the tasks (interrupts, soft interrupts,
//! stolen by the hypervisor), read here with no framelab code: what framelab says of it is
//! checked against these readings.

use std::collections::BTreeMap;

/// Per CPU: its (irq, softirq, steal) ticks since boot.
pub fn taken_ticks() -> BTreeMap<u32, [i64; 3]> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    stat.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
            // cpuN user nice system idle iowait irq softirq steal
            let n: Vec<i64> = fields.map(|f| f.parse().unwrap()).collect();
            Some((cpu, [n[5], n[6], n[7]]))
        })
        .collect()
}

/// The length of the clock tick `/proc/stat` counts in.
pub fn tick_ns() -> i64 {
    1_000_000_000 / framelab::session::procfs::system_ticks_per_second()
}
