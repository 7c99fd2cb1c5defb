//! Runs whose environment differs are not silently mixed: every difference in the
//! fingerprints of the runs compared becomes a note, and so does a busy machine, and CPU
//! time that no task had (a hypervisor's steal, interrupts) enough to stretch frames.

use std::collections::BTreeMap;

use super::load::LoadedRun;

/// One note per fingerprint field whose value differs between runs, naming which
/// variants had which value; and one when runs started on a loaded machine.
pub fn differences(runs: &[LoadedRun]) -> Vec<String> {
    let mut notes = Vec::new();
    if runs.is_empty() {
        return notes;
    }
    let fields = runs[0].fingerprint.identity().len();
    for f in 0..fields {
        // value → variant → runs
        let mut seen: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        let mut name = "";
        for r in runs {
            let identity = r.fingerprint.identity();
            name = identity[f].0;
            *seen
                .entry(identity[f].1.clone())
                .or_default()
                .entry(r.variant.clone())
                .or_insert(0) += 1;
        }
        // A plain run has no governor etc.: an empty value next to a real one is "unknown".
        if seen.len() > 1 {
            let described: Vec<String> = seen
                .iter()
                .map(|(value, variants)| {
                    let who: Vec<String> =
                        variants.iter().map(|(v, n)| format!("{v} ×{n}")).collect();
                    let value = if value.is_empty() {
                        "(not recorded)"
                    } else {
                        value
                    };
                    format!("{value} ({})", who.join(", "))
                })
                .collect();
            notes.push(format!(
                "fingerprints differ in {name}: {}; part of any difference may come from that",
                described.join(" vs ")
            ));
        }
    }
    let busy: Vec<(i64, f64)> = runs
        .iter()
        .filter_map(|r| {
            let load = r.fingerprint.load_avg_1m?;
            let cores = r.fingerprint.cores.max(1) as f64;
            (load > cores * 0.5).then_some((r.run_id, load))
        })
        .collect();
    if !busy.is_empty() {
        let worst = busy.iter().map(|b| b.1).fold(0.0, f64::max);
        notes.push(format!(
            "the machine was busy before {} run{} (1-minute load average up to {worst:.2} on {} cores): other work may have slowed them",
            busy.len(),
            if busy.len() == 1 { "" } else { "s" },
            runs[0].fingerprint.cores
        ));
    }
    notes.extend(cpu_taken(runs));
    notes
}

/// Runs whose CPUs lost enough time to no task to stretch frames (`CpuTakenFacts::notable`),
/// by variant, with the largest share of one CPU's time.
fn cpu_taken(runs: &[LoadedRun]) -> Option<String> {
    let mut by_variant: BTreeMap<&str, usize> = BTreeMap::new();
    let mut worst: f64 = 0.0;
    for r in runs {
        let taken = r.data.as_ref().and_then(|d| d.cpu_taken.as_ref());
        if let Some(t) = taken.filter(|t| t.notable()) {
            *by_variant.entry(&r.variant).or_insert(0) += 1;
            worst = worst.max(t.most_share());
        }
    }
    if by_variant.is_empty() {
        return None;
    }
    let who: Vec<String> = (by_variant.iter())
        .map(|(v, n)| format!("{v} ×{n}"))
        .collect();
    Some(format!(
        "the CPUs lost time to no task (stolen by the hypervisor, in interrupts) in {} (up to {:.1}% of one CPU's time; each run's report says how much): their frames were stretched by it, so part of any difference may come from that",
        who.join(", "),
        100.0 * worst
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Fingerprint, RunStatus};

    fn run(variant: &str, kernel: &str, load: f64) -> LoadedRun {
        LoadedRun {
            path: "x.framelab".into(),
            run_id: 1,
            variant: variant.into(),
            params: Default::default(),
            status: RunStatus::Ok,
            failure: None,
            command: vec![],
            fingerprint: Fingerprint {
                kernel: kernel.into(),
                cores: 2,
                load_avg_1m: Some(load),
                ..Fingerprint::default()
            },
            data: None,
        }
    }

    #[test]
    fn runs_whose_cpus_lost_time_to_no_task_are_named_by_variant() {
        let taken = |steal_ms: i64| crate::model::CpuTakenFacts {
            cpus: 2,
            wall_ns: 10_000_000_000,
            tick_ns: 10_000_000,
            steal_ns: steal_ms * 1_000_000,
            most_taken_cpu: 0,
            most_taken_ns: steal_ms * 1_000_000,
            ..Default::default()
        };
        let with = |variant: &str, steal_ms: i64| LoadedRun {
            data: Some(super::super::extract::RunData {
                cpu_taken: Some(taken(steal_ms)),
                ..Default::default()
            }),
            ..run(variant, "6.1", 0.1)
        };
        let notes = differences(&[with("a", 10), with("b", 600), with("b", 800), with("a", 0)]);
        assert_eq!(
            notes,
            [
                "the CPUs lost time to no task (stolen by the hypervisor, in interrupts) in b ×2 \
              (up to 8.0% of one CPU's time; each run's report says how much): their frames \
              were stretched by it, so part of any difference may come from that"
            ]
        );
        assert!(differences(&[with("a", 10), with("b", 20)]).is_empty());
    }

    #[test]
    fn differences_name_the_field_and_who_had_which_value() {
        let notes = differences(&[
            run("a", "6.1", 0.1),
            run("a", "6.1", 0.2),
            run("b", "6.2", 0.1),
        ]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("kernel: 6.1 (a ×2) vs 6.2 (b ×1)"),
            "{notes:?}"
        );
        let busy = differences(&[run("a", "6.1", 3.0), run("b", "6.1", 0.1)]);
        assert!(busy[0].contains("busy before 1 run"), "{busy:?}");
        assert!(differences(&[run("a", "6.1", 0.1), run("b", "6.1", 0.1)]).is_empty());
    }
}
