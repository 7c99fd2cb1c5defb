//! Time the machine's CPUs spent outside every task over the window: stolen by the
//! hypervisor (a VM's virtual CPU waiting for a real one) and spent in interrupts, hard and
//! soft. The scheduler sees neither: a thread on a CPU that loses such time looks on CPU
//! throughout, so its frame stretches with no preemption to name. `/proc/stat` counts both,
//! per CPU, in clock ticks.

use crate::model::CpuTakenFacts;

/// One reading of `/proc/stat`: each CPU's ticks in interrupts and stolen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    cpus: Vec<CpuTicks>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CpuTicks {
    cpu: u32,
    irq: u64,
    softirq: u64,
    steal: u64,
}

impl CpuTicks {
    fn taken(&self) -> u64 {
        self.irq + self.softirq + self.steal
    }
}

impl CpuTimes {
    /// This machine's, now; `None` where `/proc/stat` cannot be read.
    pub fn read() -> Option<CpuTimes> {
        CpuTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The `cpuN` lines of `/proc/stat` (`cpuN user nice system idle iowait irq softirq
    /// steal …`); `None` when there is none. A line too short for `steal` (kernels before
    /// 2.6.11) counts none stolen.
    pub fn parse(text: &str) -> Option<CpuTimes> {
        let cpus: Vec<CpuTicks> = text.lines().filter_map(cpu_line).collect();
        (!cpus.is_empty()).then_some(CpuTimes { cpus })
    }

    /// What was taken between `start` and this reading, `wall_ns` apart, in ticks of
    /// `tick_ns`. Only CPUs in both readings count: one taken offline meanwhile has no
    /// line to end on.
    pub fn since(&self, start: &CpuTimes, wall_ns: i64, tick_ns: i64) -> CpuTakenFacts {
        let mut facts = CpuTakenFacts {
            wall_ns,
            tick_ns,
            ..CpuTakenFacts::default()
        };
        let ns = |ticks: u64| (ticks as i64).saturating_mul(tick_ns);
        let mut most: Option<(u64, u32)> = None;
        for end in &self.cpus {
            let Some(began) = start.cpus.iter().find(|c| c.cpu == end.cpu) else {
                continue;
            };
            let delta = CpuTicks {
                cpu: end.cpu,
                irq: end.irq.saturating_sub(began.irq),
                softirq: end.softirq.saturating_sub(began.softirq),
                steal: end.steal.saturating_sub(began.steal),
            };
            facts.cpus += 1;
            facts.irq_ns += ns(delta.irq);
            facts.softirq_ns += ns(delta.softirq);
            facts.steal_ns += ns(delta.steal);
            if most.is_none_or(|(taken, _)| delta.taken() > taken) {
                most = Some((delta.taken(), delta.cpu));
            }
        }
        if let Some((taken, cpu)) = most {
            (facts.most_taken_cpu, facts.most_taken_ns) = (cpu, ns(taken));
        }
        facts
    }
}

fn cpu_line(line: &str) -> Option<CpuTicks> {
    let mut fields = line.split_whitespace();
    let cpu = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
    // user nice system idle iowait, then irq softirq steal
    let mut rest = fields.skip(5).map(|f| f.parse::<u64>().ok());
    let irq = rest.next()??;
    let softirq = rest.next()??;
    let steal = rest.next().flatten().unwrap_or(0);
    Some(CpuTicks {
        cpu,
        irq,
        softirq,
        steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const START: &str = "cpu  300 0 30 900 5 7 20 9 0 0\n\
        cpu0 100 0 10 450 2 3 10 4 0 0\n\
        cpu1 200 0 20 450 3 4 10 5 0 0\n\
        intr 1141188 0 0\n";

    #[test]
    fn each_cpus_interrupt_and_stolen_ticks_are_read_and_the_total_line_is_not() {
        let times = CpuTimes::parse(START).unwrap();
        assert_eq!(
            times.cpus,
            [
                CpuTicks {
                    cpu: 0,
                    irq: 3,
                    softirq: 10,
                    steal: 4
                },
                CpuTicks {
                    cpu: 1,
                    irq: 4,
                    softirq: 10,
                    steal: 5
                },
            ]
        );
        assert_eq!(CpuTimes::parse("intr 1 2 3\n"), None);
    }

    #[test]
    fn what_was_taken_is_the_difference_per_cpu_in_ns_and_the_cpu_that_lost_most() {
        let start = CpuTimes::parse(START).unwrap();
        let end = CpuTimes::parse(
            "cpu0 150 0 12 500 2 4 11 4 0 0\n\
             cpu1 250 0 22 480 3 6 15 25 0 0\n",
        )
        .unwrap();
        let facts = end.since(&start, 1_000_000_000, 10_000_000);
        assert_eq!(
            facts,
            CpuTakenFacts {
                cpus: 2,
                wall_ns: 1_000_000_000,
                tick_ns: 10_000_000,
                irq_ns: 30_000_000,
                softirq_ns: 60_000_000,
                steal_ns: 200_000_000,
                most_taken_cpu: 1,
                most_taken_ns: 270_000_000,
            }
        );
    }

    #[test]
    fn a_cpu_missing_from_either_reading_is_left_out_and_a_short_line_steals_nothing() {
        let start = CpuTimes::parse(START).unwrap();
        // CPU 1 went offline; CPU 2 came online; an old kernel's lines stop before steal.
        let end = CpuTimes::parse("cpu0 150 0 12 500 2 5 12\ncpu2 1 0 1 1 0 9 9 9\n").unwrap();
        let facts = end.since(&start, 1_000_000_000, 10_000_000);
        assert_eq!(facts.cpus, 1);
        assert_eq!(
            (facts.irq_ns, facts.softirq_ns, facts.steal_ns),
            (20_000_000, 20_000_000, 0)
        );
        assert_eq!((facts.most_taken_cpu, facts.most_taken_ns), (0, 40_000_000));
    }
}
