//! Runs missing from a role's metrics: a run whose service or watched process was not seen
//! in that role (it took its name after the run's first reading, or never started) has no
//! `cpu.ROLE` value, and its variant's median is then of fewer runs. Said, never silent.

use super::load::Loaded;
use super::metrics::{Kind, Metric};
use crate::experiment::RunStatus;

/// One note per role that some measured runs of a variant (at one set of parameter values)
/// lack while others of it have it, naming those runs and the metrics they are missing from.
pub fn missing_runs(loaded: &Loaded, chosen: &[Metric]) -> Vec<String> {
    let mut roles: Vec<&str> = Vec::new();
    for role in chosen.iter().filter_map(|m| role_of(&m.kind)) {
        if !roles.contains(&role) {
            roles.push(role);
        }
    }
    let measured: Vec<_> = (loaded.runs.iter())
        .filter(|r| r.status == RunStatus::Ok)
        .filter_map(|r| Some((r, r.data.as_ref()?)))
        .collect();
    let mut notes = Vec::new();
    for role in roles {
        let has = |data: &super::extract::RunData| data.roles.iter().any(|r| r.role == role);
        let mut missing: Vec<String> = Vec::new();
        for &(run, data) in &measured {
            let same_group = |(o, _): &&(&super::load::LoadedRun, _)| {
                o.variant == run.variant && o.params == run.params
            };
            if !has(data) && measured.iter().filter(same_group).any(|(_, d)| has(d)) {
                missing.push(format!("{} run {}", run.variant, run.run_id));
            }
        }
        if missing.is_empty() {
            continue;
        }
        let keys: Vec<&str> = (chosen.iter())
            .filter(|m| role_of(&m.kind) == Some(role))
            .map(|m| m.key.as_str())
            .collect();
        notes.push(format!(
            "{}: {} had no process in that role (named after the run's first reading, or \
             never started?), so {} there are of the other runs of {}",
            crate::display::name(role),
            missing.join(", "),
            keys.join(", "),
            if missing.len() == 1 {
                "its variant"
            } else {
                "their variants"
            }
        ));
    }
    notes
}

/// The role a metric is of (`cpu.ROLE`, `cpu_per.NAME.ROLE`, ...), if any.
fn role_of(kind: &Kind) -> Option<&str> {
    match kind {
        Kind::Role { role, .. }
        | Kind::CpuPerUnit {
            role: Some(role), ..
        } => Some(role),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::cpu::RoleCpu;
    use crate::compare::extract::RunData;
    use crate::compare::load::LoadedRun;

    fn run(variant: &str, run_id: i64, roles: &[&str]) -> LoadedRun {
        let roles = (roles.iter())
            .map(|r| RoleCpu {
                role: (*r).to_owned(),
                cpu_ns: 1_000_000,
                ..Default::default()
            })
            .collect();
        LoadedRun {
            path: "codecs.framelab".into(),
            run_id,
            variant: variant.to_owned(),
            params: Default::default(),
            status: RunStatus::Ok,
            failure: None,
            command: Vec::new(),
            fingerprint: Default::default(),
            data: Some(RunData {
                roles,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_run_without_a_role_its_variant_has_elsewhere_is_named() {
        let loaded = Loaded {
            runs: vec![
                run("cpu", 1, &["command", "decoderd"]),
                run("cpu", 2, &["command", "decoderd"]),
                // Read before the daemon renamed itself: no decoderd.
                run("daemon", 3, &["command", "bash"]),
                run("daemon", 4, &["command", "decoderd"]),
            ],
            variants: vec!["cpu".into(), "daemon".into()],
            param_keys: Vec::new(),
            param_values: Default::default(),
            templates: Default::default(),
            notes: Vec::new(),
        };
        let data: Vec<&RunData> = loaded.runs.iter().filter_map(|r| r.data.as_ref()).collect();
        let chosen = crate::compare::metrics::catalogue(&data);
        let notes = missing_runs(&loaded, &chosen);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("decoderd: daemon run 3 had no process in that role")
                && notes[0].contains("cpu.decoderd"),
            "{}",
            notes[0]
        );
        // The name it had instead is a role of that one run: the variant's other run lacks
        // it. The cpu variant, which never had it, is not named.
        assert!(
            notes[1].starts_with("bash: daemon run 4 had"),
            "{}",
            notes[1]
        );
    }
}
