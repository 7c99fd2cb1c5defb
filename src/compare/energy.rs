//! Power and energy as comparison metrics, per device as the report names it (`GPU0`,
//! `card0`, `package-0`): mean power (`power.DEVICE`, W), energy per frame
//! (`energy_per_frame.DEVICE`, J) and energy per unit of a metric from output that counts
//! work (`energy_per.NAME.DEVICE`, J: J/request). Where a variant has no readings of a
//! device, its metrics are left out with one note rather than shown as zero
//! (docs/metrics.md, "Power and energy in comparisons").

use std::collections::BTreeMap;

use super::extract::{counts_work, energy_of, RunData};
use super::load::Loaded;
use super::metrics::{Kind, Metric};
use crate::experiment::RunStatus;

/// The device a metric is of, for the power and energy metrics.
pub fn device_of(kind: &Kind) -> Option<&str> {
    match kind {
        Kind::Power { device }
        | Kind::EnergyPerFrame { device }
        | Kind::EnergyPerUnit { device, .. } => Some(device),
        _ => None,
    }
}

/// Why `--show NAME` found no energy metric, when NAME asks for energy per unit of a rate.
pub fn refusal(name: &str, runs: &[&RunData]) -> Option<String> {
    let rest = name.strip_prefix("energy_per.")?;
    let (metric, _) = rest.split_once('.')?;
    let m = (runs.iter())
        .flat_map(|r| &r.output_metrics)
        .find(|m| m.name == metric && !counts_work(&m.unit))?;
    Some(format!(
        "no metric '{name}': {metric} is a rate ({}), and energy per unit needs a count of the \
         work done in the run (a `framelab bench --metric` without /s in its unit, e.g. ab's 'Complete \
         requests:\\s+(\\d+)'); its energy is power × the window: --show power.DEVICE",
        m.unit
    ))
}

/// A variant at one set of parameter values: whose runs are compared together.
type GroupKey<'a> = (&'a str, &'a BTreeMap<String, String>);

/// The chosen metrics without the power and energy metrics of devices that some variant
/// (at some parameter values) has no readings of, when they were chosen by default;
/// named by `--show`, they stay and show no value there. Either way one note per device
/// says which variants lack it, and another counts runs without it in a variant that has
/// it in others.
pub fn left_out(loaded: &Loaded, chosen: Vec<Metric>, asked: bool) -> (Vec<Metric>, Vec<String>) {
    let mut groups: Vec<(GroupKey, Vec<&RunData>)> = Vec::new();
    for r in loaded.runs.iter().filter(|r| r.status == RunStatus::Ok) {
        let Some(data) = &r.data else { continue };
        let key = (r.variant.as_str(), &r.params);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => runs.push(data),
            None => groups.push((key, vec![data])),
        }
    }
    let mut devices: Vec<&str> = Vec::new();
    for m in &chosen {
        if let Some(d) = device_of(&m.kind).filter(|d| !devices.contains(d)) {
            devices.push(d);
        }
    }
    let name_of = |(variant, params): GroupKey| match super::comparison::describe_params(params) {
        p if p.is_empty() => variant.to_owned(),
        p => format!("{variant} at {p}"),
    };
    let mut notes = Vec::new();
    let mut absent: Vec<String> = Vec::new();
    for device in devices {
        let mut lacking = Vec::new();
        let mut partly = Vec::new();
        for (key, runs) in &groups {
            let with = runs
                .iter()
                .filter(|r| energy_of(r, device).is_some())
                .count();
            if with == 0 {
                lacking.push(name_of(*key));
            } else if with < runs.len() {
                partly.push(format!(
                    "{} of {} runs of {}",
                    runs.len() - with,
                    runs.len(),
                    name_of(*key)
                ));
            }
        }
        let source = (groups.iter())
            .flat_map(|(_, runs)| runs.iter().filter_map(|r| energy_of(r, device)))
            .map(|e| e.source.clone())
            .next()
            .unwrap_or_default();
        let device_name = crate::display::name(device);
        if !partly.is_empty() {
            notes.push(format!(
                "{device_name}: {} had no {source} readings of it; its power and energy \
                 there are of the other runs",
                partly.join(", ")
            ));
        }
        if lacking.is_empty() {
            continue;
        }
        let keys: Vec<&str> = (chosen.iter())
            .filter(|m| device_of(&m.kind) == Some(device))
            .map(|m| m.key.as_str())
            .collect();
        notes.push(format!(
            "{device_name}: {} {} no {source} readings of it (telemetry off or absent there), \
             so {} {}",
            lacking.join(", "),
            if lacking.len() == 1 { "has" } else { "have" },
            keys.join(", "),
            if asked {
                "show no value there, not zero"
            } else {
                "are left out, not shown as zero"
            }
        ));
        absent.push(device.to_owned());
    }
    let kept = if asked {
        chosen
    } else {
        (chosen.into_iter())
            .filter(|m| device_of(&m.kind).is_none_or(|d| !absent.iter().any(|a| a == d)))
            .collect()
    };
    (kept, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::telemetry::EnergyRow;
    use crate::compare::metrics::Unit;
    use crate::output::MetricValue;
    use crate::stats::Direction;

    fn gpu(watts: f64, joules: f64, frames: u64) -> EnergyRow {
        EnergyRow {
            source: "nvml".into(),
            entity: "0".into(),
            label: "NVIDIA H200".into(),
            device: "GPU0".into(),
            method: "energy counter".into(),
            joules,
            avg_power_w: watts,
            joules_per_frame: (frames > 0).then(|| joules / frames as f64),
            covered_pct: 100.0,
        }
    }

    fn output(name: &str, unit: &str, value: f64) -> MetricValue {
        MetricValue {
            name: name.into(),
            unit: unit.into(),
            value: Some(value),
            ..MetricValue::default()
        }
    }

    #[test]
    fn power_energy_per_frame_and_per_request_of_each_device() {
        // 2 s at 300 W: 600 J; 120 frames; 1,500 requests counted, 750 req/s.
        let run = RunData {
            energy: vec![gpu(300.0, 600.0, 120)],
            output_metrics: vec![
                output("requests", "", 1500.0),
                output("req_s", "req/s", 750.0),
            ],
            ..RunData::default()
        };
        let all = super::super::metrics::catalogue(&[&run]);
        let value = |key: &str| {
            let m = all.iter().find(|m| m.key == key).unwrap_or_else(|| {
                panic!(
                    "{key} in {:?}",
                    all.iter().map(|m| &m.key).collect::<Vec<_>>()
                )
            });
            m.value(&run).unwrap().value()
        };
        assert_eq!(value("power.GPU0"), 300.0);
        assert_eq!(value("energy_per_frame.GPU0"), 5.0);
        assert_eq!(value("energy_per.requests.GPU0"), 0.4);
        // A rate is not a count of work: no energy per req/s.
        assert!(all.iter().all(|m| m.key != "energy_per.req_s.GPU0"));
        let per_request = all
            .iter()
            .find(|m| m.key == "energy_per.requests.GPU0")
            .unwrap();
        assert_eq!(per_request.label, "energy per requests, GPU0");
        assert_eq!(per_request.unit, Unit::Joules);
        let power = all.iter().find(|m| m.key == "power.GPU0").unwrap();
        assert_eq!(
            (power.unit.key(), power.direction),
            ("watts", Direction::LowerIsBetter)
        );
        // Power and energy per frame by default; per unit of a metric when asked.
        let defaults: Vec<String> = super::super::metrics::defaults(&all)
            .into_iter()
            .map(|m| m.key)
            .filter(|k| k.contains("GPU0"))
            .collect();
        assert_eq!(defaults, ["power.GPU0", "energy_per_frame.GPU0"]);
        let refused = refusal("energy_per.req_s.GPU0", &[&run]).unwrap();
        assert!(refused.contains("req_s is a rate (req/s)"), "{refused}");
    }

    #[test]
    fn a_run_without_readings_has_no_value_not_zero() {
        let without = RunData::default();
        let with = RunData {
            energy: vec![gpu(300.0, 600.0, 0)],
            ..RunData::default()
        };
        let all = super::super::metrics::catalogue(&[&with, &without]);
        let power = all.iter().find(|m| m.key == "power.GPU0").unwrap();
        assert!(power.value(&without).is_none());
        // No frames: no energy per frame, and so no such metric.
        assert!(all.iter().all(|m| m.key != "energy_per_frame.GPU0"));
    }
}
