//! The metrics a comparison can judge: what each means, its unit, which way is better,
//! and how a run's value of it is resampled (docs/metrics.md, "Comparing runs").

use serde::{Deserialize, Serialize};

use super::extract::{counts_work, energy_of, per_unit, Keep, RunData};
use crate::analyze::metrics::{RunFigure, RunMetric, RUN_METRICS};
use crate::stats::{Direction, RunValue};

pub use crate::analyze::metrics::Unit;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Kind {
    Fps,
    Wall,
    Cpu,
    Load,
    Cores,
    CpuPerFrame,
    PeakRss,
    Late,
    /// Mean power of one device over the window (`EnergyRow::device`), from telemetry.
    Power {
        device: String,
    },
    /// Energy per frame of one device (`EnergyRow::device`), from telemetry.
    EnergyPerFrame {
        device: String,
    },
    /// A device's energy over the window ÷ a metric from output that counts work
    /// (`energy_per.requests.GPU0`: J per request; `super::extract::counts_work`).
    EnergyPerUnit {
        metric: String,
        device: String,
    },
    /// One role's share of the CPU (`cpu.server`, `cores.decoderd`, ...): the command's
    /// tree, a service or a watched process (`crate::analyze::cpu::role_of`).
    Role {
        role: String,
        figure: RoleFigure,
    },
    /// CPU per unit of a metric from output (`cpu_per.req_s.server`): the whole run's CPU, or
    /// one role's, ÷ the work the metric says was done (a rate such as req/s × the window; a
    /// count as it is).
    CpuPerUnit {
        metric: String,
        role: Option<String>,
    },
    /// A percentile of a stage's span durations, or of frame totals (`stage` None).
    Percentile {
        stage: Option<String>,
        p: f64,
    },
    /// A percentile of a wait between two stages (`convert→encode`) over measured frames:
    /// shown when `--show` asks for it, never by default.
    Wait {
        pair: String,
        p: f64,
    },
    /// A number the command printed or wrote (`--metric NAME...`), one per run.
    Output {
        name: String,
    },
    /// The mean, count or sum of a stage's span durations, of frame totals or of a wait's
    /// (`encode.mean`, `commit→release.count`): shown when `--show` asks for it.
    Aggregate {
        spans: Spans,
        stat: SpanStat,
    },
}

/// Whose durations an aggregate is of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spans {
    Total,
    Stage(String),
    Wait(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanStat {
    Mean,
    Count,
    Sum,
}

/// What a role metric measures of the role's CPU time over the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleFigure {
    Cpu,
    Load,
    Cores,
    CpuPerFrame,
}

impl RoleFigure {
    const ALL: [RoleFigure; 4] = [
        RoleFigure::Cpu,
        RoleFigure::CpuPerFrame,
        RoleFigure::Load,
        RoleFigure::Cores,
    ];

    /// The key's prefix and the label's start, as the whole-run metric of this figure.
    fn names(self) -> (&'static str, &'static str, Unit) {
        match self {
            RoleFigure::Cpu => ("cpu", "CPU", Unit::Seconds),
            RoleFigure::Load => ("load", "load", Unit::Percent),
            RoleFigure::Cores => ("cores", "cores", Unit::Cores),
            RoleFigure::CpuPerFrame => ("cpu_per_frame", "CPU per frame", Unit::Microseconds),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// What `--show` takes: `fps`, `total.p99`, `encode.p50`, `cpu_per_frame`, `req_s`, ...
    pub key: String,
    /// How tables name it: "fps", "total p99", "CPU per frame".
    pub label: String,
    pub unit: Unit,
    pub direction: Direction,
    pub kind: Kind,
}

/// A stage's name in a metric's label is cut shorter than a table cell, so the
/// percentile after it (`p99`) always shows.
const LABEL_NAME_CHARS: usize = 60;

pub(super) const PERCENTILES: [(&str, f64); 3] = [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)];

/// What of each run's sorted values compare keeps: lives here, beside the percentiles it reads.
impl Keep {
    /// The percentiles compare reads of every stage, wait and total (p50, p95, p99), and
    /// those `--show` names (`encode.p90`, `total.p99.9`).
    pub fn for_metrics(names: &[String]) -> Keep {
        let mut ps: Vec<f64> = PERCENTILES.iter().map(|(_, p)| *p).collect();
        for name in names.iter().flat_map(|n| n.split(',')) {
            let Some(at) = name.trim().rfind(".p") else {
                continue;
            };
            if let Ok(p) = name.trim()[at + 2..].parse::<f64>() {
                if p > 0.0 && p < 100.0 {
                    ps.push(p / 100.0);
                }
            }
        }
        Keep::Near(ps)
    }
}

impl Metric {
    pub(super) fn new(
        key: &str,
        label: &str,
        unit: Unit,
        direction: Direction,
        kind: Kind,
    ) -> Metric {
        Metric {
            key: key.into(),
            label: label.into(),
            unit,
            direction,
            kind,
        }
    }

    /// The registry's run-level metric, read from a run's [`RunData`] as its [`Kind`] says.
    fn of_run(m: &RunMetric) -> Metric {
        let kind = match m.figure {
            RunFigure::Fps => Kind::Fps,
            RunFigure::Late => Kind::Late,
            RunFigure::CpuPerFrame => Kind::CpuPerFrame,
            RunFigure::Load => Kind::Load,
            RunFigure::Cores => Kind::Cores,
            RunFigure::PeakRss => Kind::PeakRss,
            RunFigure::Wall => Kind::Wall,
            RunFigure::Cpu => Kind::Cpu,
        };
        Metric::new(m.key, m.label, m.unit.clone(), m.direction, kind)
    }

    fn percentile(stage: Option<&str>, name: &str, p: f64) -> Metric {
        let who = stage.unwrap_or("total");
        // The key keeps the stage's whole name (JSON, CSV); the label is for people.
        Metric::new(
            &format!("{who}.{name}"),
            &format!("{} {name}", crate::display::escaped(who, LABEL_NAME_CHARS)),
            Unit::Microseconds,
            Direction::LowerIsBetter,
            Kind::Percentile {
                stage: stage.map(str::to_owned),
                p,
            },
        )
    }

    /// `convert->encode.p99` (an ASCII arrow, to type) for the wait `convert→encode`.
    fn wait(pair: &str, name: &str, p: f64) -> Metric {
        Metric::new(
            &format!("{}.{name}", pair.replace('→', "->")),
            &format!(
                "{} wait {name}",
                crate::display::escaped(pair, LABEL_NAME_CHARS)
            ),
            Unit::Microseconds,
            Direction::LowerIsBetter,
            Kind::Wait {
                pair: pair.to_owned(),
                p,
            },
        )
    }

    /// This run's value, and how it is resampled; `None` when the run lacks it.
    pub fn value<'a>(&self, run: &'a RunData) -> Option<RunValue<'a>> {
        let whole = |v: f64| v.is_finite().then_some(RunValue::Whole(v));
        match &self.kind {
            Kind::Fps => run.observed_fps.and_then(whole),
            Kind::Wall => whole(run.wall_ns as f64 / 1e9),
            Kind::Cpu | Kind::Load | Kind::Cores if !run.cpu_measured => None,
            Kind::Cpu => whole(run.cpu_ns as f64 / 1e9),
            Kind::Load => run.load_pct.and_then(whole),
            Kind::Cores => run.load_pct.map(|l| l / 100.0).and_then(whole),
            Kind::Role { role, figure } => {
                let r = run.roles.iter().find(|r| &r.role == role)?;
                match figure {
                    RoleFigure::Cpu => whole(r.cpu_ns as f64 / 1e9),
                    RoleFigure::Load => r.load_pct.and_then(whole),
                    RoleFigure::Cores => r.load_pct.map(|l| l / 100.0).and_then(whole),
                    RoleFigure::CpuPerFrame => (run.work_units > 0)
                        .then(|| r.cpu_ns as f64 / run.work_units as f64 / 1e3)
                        .and_then(whole),
                }
            }
            Kind::CpuPerFrame => run.cpu_per_frame_ns.map(|ns| ns / 1e3).and_then(whole),
            Kind::PeakRss => {
                (run.peak_rss_bytes > 0).then_some(RunValue::Whole(run.peak_rss_bytes as f64))
            }
            Kind::Late => run.late.map(|(hits, of)| RunValue::Share { hits, of }),
            Kind::Power { device } => whole(energy_of(run, device)?.avg_power_w),
            Kind::EnergyPerFrame { device } => {
                energy_of(run, device)?.joules_per_frame.and_then(whole)
            }
            Kind::EnergyPerUnit { metric, device } => per_unit(run, metric, device).and_then(whole),
            Kind::CpuPerUnit { metric, role } => {
                let m = run.output_metrics.iter().find(|m| &m.name == metric)?;
                let seconds = run.wall_ns as f64 / 1e9;
                // A rate's units done are rate × window (a note says so: `rate_notes`).
                let units = if counts_work(&m.unit) {
                    m.value?
                } else {
                    m.value? * seconds
                };
                let cpu_ns = match role {
                    None => run.cpu_ns,
                    Some(role) => run.roles.iter().find(|r| &r.role == role)?.cpu_ns,
                };
                (units > 0.0)
                    .then(|| cpu_ns as f64 / 1e3 / units)
                    .and_then(whole)
            }
            Kind::Output { name } => run
                .output_metrics
                .iter()
                .find(|m| &m.name == name)
                .and_then(|m| m.value)
                .and_then(whole),
            Kind::Percentile { stage, p } => {
                let sorted = match stage {
                    None => &run.totals,
                    Some(name) => &run.stages.iter().find(|(n, _)| n == name)?.1,
                };
                (!sorted.is_empty()).then_some(RunValue::Ranked { sorted, p: *p })
            }
            Kind::Wait { pair, p } => {
                let sorted = &run.waits.iter().find(|(n, _)| n == pair)?.1;
                (!sorted.is_empty()).then_some(RunValue::Ranked { sorted, p: *p })
            }
            Kind::Aggregate { spans, stat } => {
                let durations = match spans {
                    Spans::Total => &run.totals,
                    Spans::Stage(name) => &run.stages.iter().find(|(n, _)| n == name)?.1,
                    Spans::Wait(pair) => &run.waits.iter().find(|(n, _)| n == pair)?.1,
                };
                let sum = durations.sum();
                match stat {
                    SpanStat::Count => Some(RunValue::Whole(durations.len() as f64)),
                    SpanStat::Sum => whole(sum),
                    SpanStat::Mean if durations.is_empty() => None,
                    SpanStat::Mean => whole(sum / durations.len() as f64),
                }
            }
        }
    }

    /// How fine this run's value is, in the unit a table prints (CPU time, load and CPU
    /// per frame come from CPU times of a known resolution); `None` when unknown or not a
    /// CPU figure.
    pub fn resolution(&self, run: &RunData) -> Option<f64> {
        let (ns, figure) = match &self.kind {
            Kind::Cpu => (run.cpu_resolution_ns, RoleFigure::Cpu),
            Kind::Load => (run.cpu_resolution_ns, RoleFigure::Load),
            Kind::Cores => (run.cpu_resolution_ns, RoleFigure::Cores),
            Kind::CpuPerFrame => (run.cpu_resolution_ns, RoleFigure::CpuPerFrame),
            Kind::Role { role, figure } => (
                run.roles
                    .iter()
                    .find(|r| &r.role == role)?
                    .cpu_resolution_ns,
                *figure,
            ),
            _ => return None,
        };
        if ns <= 0 {
            return None;
        }
        let load =
            || (run.wall_ns > 0).then(|| crate::analyze::cpu::load_resolution_pct(ns, run.wall_ns));
        match figure {
            RoleFigure::Cpu => Some(ns as f64 / 1e9),
            RoleFigure::Load => load(),
            RoleFigure::Cores => load().map(|pct| pct / 100.0),
            RoleFigure::CpuPerFrame => {
                (run.work_units > 0).then(|| ns as f64 / run.work_units as f64 / 1e3)
            }
        }
    }

    /// A value of this metric as a table prints it (its unit: µs for times).
    pub fn display_value(&self, value: f64) -> f64 {
        match (&self.kind, &self.unit) {
            (Kind::Percentile { .. } | Kind::Wait { .. }, _) => value / 1e3,
            (Kind::Aggregate { stat, .. }, _) => match stat {
                SpanStat::Mean => value / 1e3,
                SpanStat::Sum => value / 1e9,
                SpanStat::Count => value,
            },
            _ => value,
        }
    }
}

/// Every metric the runs have, in table order: the metrics from the command's output
/// first (the program's own figures), then the built-in ones. Whole-process metrics (wall,
/// CPU) only where some run was not cut by --duration (otherwise wall is the duration
/// asked). A metric from output is listed even when no run could read it: its rows then
/// say so, rather than the metric vanishing.
pub fn catalogue(runs: &[&RunData]) -> Vec<Metric> {
    let mut all = output_metrics(runs);
    let [fps, rest @ ..] = RUN_METRICS.each_ref().map(Metric::of_run);
    all.push(fps);
    let mut stage_names: Vec<&str> = Vec::new();
    for run in runs {
        for (name, _) in &run.stages {
            if !stage_names.contains(&name.as_str()) {
                stage_names.push(name);
            }
        }
    }
    for name in stage_names {
        for (label, p) in PERCENTILES {
            all.push(Metric::percentile(Some(name), label, p));
        }
    }
    let mut wait_pairs: Vec<&str> = Vec::new();
    for run in runs {
        for (pair, _) in &run.waits {
            if !wait_pairs.contains(&pair.as_str()) {
                wait_pairs.push(pair);
            }
        }
    }
    for pair in wait_pairs {
        for (label, p) in PERCENTILES {
            all.push(Metric::wait(pair, label, p));
        }
    }
    for (label, p) in PERCENTILES {
        all.push(Metric::percentile(None, label, p));
    }
    all.extend(rest);
    all.extend(energy_metrics(runs, &output_metrics(runs)));
    all.extend(role_metrics(runs));
    all.extend(cpu_per_unit_metrics(runs));
    let exists = |m: &Metric| match m.kind {
        Kind::Wall
        | Kind::Cpu
        | Kind::Role {
            figure: RoleFigure::Cpu,
            ..
        } => runs
            .iter()
            .any(|r| !r.fixed_duration && m.value(r).is_some()),
        Kind::Output { .. } => true,
        _ => runs.iter().any(|r| m.value(r).is_some()),
    };
    all.into_iter().filter(exists).collect()
}

/// Each role's CPU, CPU per frame, load and cores, where some run has more than one role
/// (with one, they repeat the whole-run figures).
fn role_metrics(runs: &[&RunData]) -> Vec<Metric> {
    if runs.iter().all(|r| r.roles.len() < 2) {
        return Vec::new();
    }
    let mut roles: Vec<&str> = Vec::new();
    for run in runs {
        for r in &run.roles {
            if !roles.contains(&r.role.as_str()) {
                roles.push(&r.role);
            }
        }
    }
    let mut metrics = Vec::new();
    for role in roles {
        for figure in RoleFigure::ALL {
            let (key, label, unit) = figure.names();
            metrics.push(Metric::new(
                &format!("{key}.{}", key_part(role)),
                &format!("{label}, {role}"),
                unit,
                Direction::LowerIsBetter,
                Kind::Role {
                    role: role.to_owned(),
                    figure,
                },
            ));
        }
    }
    metrics
}

/// A role's or device's name as a metric key takes it: no spaces, no commas (`--show`
/// splits on them).
pub(super) fn key_part(role: &str) -> String {
    role.chars()
        .map(|c| {
            if c.is_whitespace() || c == ',' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// CPU per unit of each metric from output, for the whole run and each role (when there are
/// several): `cpu_per.NAME` and `cpu_per.NAME.ROLE`, in µs per unit. Shown when asked for.
fn cpu_per_unit_metrics(runs: &[&RunData]) -> Vec<Metric> {
    let mut roles: Vec<Option<&str>> = vec![None];
    if runs.iter().any(|r| r.roles.len() > 1) {
        for run in runs {
            for r in &run.roles {
                if !roles.contains(&Some(r.role.as_str())) {
                    roles.push(Some(&r.role));
                }
            }
        }
    }
    let mut metrics = Vec::new();
    for output in output_metrics(runs) {
        let name = &output.key;
        let per = match &output.unit {
            Unit::Custom(u) if u.ends_with("/s") => u.trim_end_matches("/s").to_owned(),
            Unit::Custom(u) if !u.is_empty() => u.clone(),
            _ => name.clone(),
        };
        for role in &roles {
            let (key, label) = match role {
                None => (format!("cpu_per.{name}"), format!("CPU per {per}")),
                Some(r) => (
                    format!("cpu_per.{name}.{}", key_part(r)),
                    format!("CPU per {per}, {r}"),
                ),
            };
            metrics.push(Metric::new(
                &key,
                &label,
                Unit::Microseconds,
                Direction::LowerIsBetter,
                Kind::CpuPerUnit {
                    metric: name.clone(),
                    role: role.map(str::to_owned),
                },
            ));
        }
    }
    metrics
}

/// A note for each CPU per unit of a rate shown (`cpu_per.req_s`): the rate times the window
/// is taken as the units done, which counts units never served where the program timed its
/// rate over less than the window (its start-up, a warmup): a Python server's CPU per
/// request read 0.45-0.62 of its CPU ÷ the requests it served.
pub fn rate_notes(chosen: &[Metric], runs: &[&RunData]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for m in chosen {
        let Kind::CpuPerUnit { metric, role: None } = &m.kind else {
            continue;
        };
        let rate = (runs.iter().flat_map(|r| &r.output_metrics))
            .find(|o| &o.name == metric)
            .filter(|o| !counts_work(&o.unit));
        if let Some(rate) = rate {
            let unit = rate.unit.trim_end().trim_end_matches("/s");
            notes.push(format!(
                "{}: {metric} ({}) × each run's window is taken as the {unit} done; where the \
                 program timed its rate over less of the window (its start-up, a warmup), {unit} \
                 never done are counted and the figure is too low: a metric from output that \
                 counts the {unit} done gives it exactly",
                m.label, rate.unit
            ));
        }
    }
    notes
}

/// The metrics from output the runs recorded, in the order first seen; unit and direction
/// as the first run that has the metric defined them (`disagreements` tells of others).
fn output_metrics(runs: &[&RunData]) -> Vec<Metric> {
    let mut seen: Vec<&crate::output::MetricValue> = Vec::new();
    for run in runs {
        for m in &run.output_metrics {
            if !seen.iter().any(|s| s.name == m.name) {
                seen.push(m);
            }
        }
    }
    seen.into_iter()
        .map(|m| {
            Metric::new(
                &m.name,
                &m.name,
                Unit::Custom(m.unit.clone()),
                m.direction.unwrap_or(Direction::Unstated),
                Kind::Output {
                    name: m.name.clone(),
                },
            )
        })
        .collect()
}

/// For each device some run measured, in the order first seen: its mean power and energy
/// per frame, and its energy per unit of each metric from output in `outputs` that counts
/// work (shown when asked for, as CPU per unit is).
fn energy_metrics(runs: &[&RunData], outputs: &[Metric]) -> Vec<Metric> {
    let mut devices: Vec<&str> = Vec::new();
    for run in runs {
        for e in &run.energy {
            if !devices.contains(&e.device.as_str()) {
                devices.push(&e.device);
            }
        }
    }
    let mut all = Vec::new();
    for device in devices {
        let (key, name) = (key_part(device), crate::display::name(device));
        all.push(Metric::new(
            &format!("power.{key}"),
            &format!("mean power, {name}"),
            Unit::Watts,
            Direction::LowerIsBetter,
            Kind::Power {
                device: device.to_owned(),
            },
        ));
        all.push(Metric::new(
            &format!("energy_per_frame.{key}"),
            &format!("energy per frame, {name}"),
            Unit::Joules,
            Direction::LowerIsBetter,
            Kind::EnergyPerFrame {
                device: device.to_owned(),
            },
        ));
        for output in outputs {
            let Unit::Custom(unit) = &output.unit else {
                continue;
            };
            if !counts_work(unit) {
                continue;
            }
            let per = if unit.is_empty() { &output.key } else { unit };
            all.push(Metric::new(
                &format!("energy_per.{}.{key}", output.key),
                &format!("energy per {per}, {name}"),
                Unit::Joules,
                Direction::LowerIsBetter,
                Kind::EnergyPerUnit {
                    metric: output.key.clone(),
                    device: device.to_owned(),
                },
            ));
        }
    }
    all
}

/// Notes on metrics from output whose runs do not agree (a unit or direction changed
/// between recordings), and on those whose direction was never said.
pub fn disagreements(runs: &[&RunData], chosen: &[Metric]) -> Vec<String> {
    let mut notes = Vec::new();
    for metric in chosen {
        let Kind::Output { name } = &metric.kind else {
            continue;
        };
        let definitions: Vec<&crate::output::MetricValue> = runs
            .iter()
            .flat_map(|r| r.output_metrics.iter().filter(|m| &m.name == name))
            .collect();
        let mut texts: Vec<&str> = definitions.iter().map(|m| m.definition.as_str()).collect();
        texts.dedup();
        let units_differ = definitions
            .iter()
            .any(|m| Unit::Custom(m.unit.clone()) != metric.unit);
        let directions_differ = definitions
            .iter()
            .any(|m| m.direction.unwrap_or(Direction::Unstated) != metric.direction);
        if units_differ || directions_differ {
            notes.push(format!(
                "{name} was defined differently across the runs ({}): the first definition's \
                 unit and direction are used",
                texts.join(" / ")
            ));
        }
        if metric.direction == Direction::Unstated {
            notes.push(format!(
                "{name}: which way is better was not stated when it was recorded (--metric \
                 {name}:higher=... or :lower=...), so a change in it is never called improved \
                 or regressed"
            ));
        }
    }
    notes
}

/// Without `--show`: the metrics from output, fps, each stage's p50/p95/p99, total p50/p99,
/// late frames, CPU per frame, load, peak RSS, and wall and CPU time for commands that end
/// by themselves; each role's CPU, CPU per frame and load; each measured device's mean
/// power and energy per frame. Cores are load ÷ 100: one test with it (`identical`), a
/// second row saying the same, so they are shown only when asked for; so are CPU and
/// energy per unit of a metric from output.
pub fn defaults(catalogue: &[Metric]) -> Vec<Metric> {
    catalogue
        .iter()
        .filter(|m| m.key != "total.p95")
        .filter(|m| {
            !matches!(
                m.kind,
                Kind::Cores
                    | Kind::CpuPerUnit { .. }
                    | Kind::EnergyPerUnit { .. }
                    | Kind::Wait { .. }
                    | Kind::Role {
                        figure: RoleFigure::Cores,
                        ..
                    }
            )
        })
        .cloned()
        .collect()
}

/// `cpu_per_req_s.server` for `cpu_per.req_s.server` (CPU per unit of a metric from
/// output, per role), the way `cpu_per_frame.ROLE` is spelt; `None` for other names.
fn cpu_per_spelling(name: &str) -> Option<String> {
    let rest = name.strip_prefix("cpu_per_")?;
    let per_frame = rest == "frame" || rest.starts_with("frame.");
    (!per_frame && !rest.is_empty()).then(|| format!("cpu_per.{rest}"))
}

/// The metrics named by `--show` (each may list several, comma-separated), in the order
/// given; an unknown name is an error that lists the ones these runs have.
pub fn select(catalogue: &[Metric], names: &[String]) -> anyhow::Result<Vec<Metric>> {
    let mut chosen: Vec<Metric> = Vec::new();
    for name in names
        .iter()
        .flat_map(|n| n.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        let found = (catalogue.iter())
            .find(|m| same_key(&m.key, name))
            .or_else(|| {
                let spelled = cpu_per_spelling(name)?;
                catalogue.iter().find(|m| m.key == spelled)
            })
            .cloned()
            .or_else(|| statistic_of(catalogue, name));
        let Some(metric) = found else {
            let known: Vec<&str> = catalogue.iter().map(|m| m.key.as_str()).collect();
            crate::bail_usage!(
                "no metric '{name}' in these runs; they have: {}{}",
                known.join(", "),
                if catalogue.iter().any(|m| m.key.ends_with(".p50")) {
                    " (and, for each name with .p50, .mean, .count, .sum and any .pNN)"
                } else {
                    ""
                }
            );
        };
        if !chosen.iter().any(|m| m.key == metric.key) {
            chosen.push(metric);
        }
    }
    Ok(chosen)
}

/// Whether `--show`'s `name` is `key`, with `->` and `→` the same arrow.
pub(crate) fn same_key(key: &str, name: &str) -> bool {
    key.replace('→', "->") == name.replace('→', "->")
}

/// A statistic of a stage, wait or frame totals the catalogue lists by its p50: `.mean`,
/// `.count`, `.sum` or any `.pNN` (`encode.p90`, `commit->release.p99.9`).
fn statistic_of(catalogue: &[Metric], name: &str) -> Option<Metric> {
    // `.p99.9` holds a dot of its own.
    let decimal = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit() || c == '.');
    let (subject, stat) = match name.rfind(".p") {
        Some(i) if decimal(&name[i + 2..]) => (&name[..i], &name[i + 1..]),
        _ => name.rsplit_once('.')?,
    };
    let listed = (catalogue.iter()).find(|m| same_key(&m.key, &format!("{subject}.p50")))?;
    let percentile = stat
        .strip_prefix('p')
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|p| *p > 0.0 && *p < 100.0 && p.is_finite());
    let spans = match &listed.kind {
        Kind::Percentile { stage: None, .. } => Spans::Total,
        Kind::Percentile {
            stage: Some(stage), ..
        } => Spans::Stage(stage.clone()),
        Kind::Wait { pair, .. } => Spans::Wait(pair.clone()),
        _ => return None,
    };
    if let Some(p) = percentile {
        return Some(match spans {
            Spans::Total => Metric::percentile(None, stat, p / 100.0),
            Spans::Stage(stage) => Metric::percentile(Some(&stage), stat, p / 100.0),
            Spans::Wait(pair) => Metric::wait(&pair, stat, p / 100.0),
        });
    }
    let stat = match stat {
        "mean" => SpanStat::Mean,
        "count" => SpanStat::Count,
        "sum" => SpanStat::Sum,
        _ => return None,
    };
    let who = match &spans {
        Spans::Total => "total".to_owned(),
        Spans::Stage(stage) => crate::display::escaped(stage, LABEL_NAME_CHARS).into_owned(),
        Spans::Wait(pair) => format!("{} wait", crate::display::escaped(pair, LABEL_NAME_CHARS)),
    };
    let key_subject = match &spans {
        Spans::Total => "total".to_owned(),
        Spans::Stage(stage) => stage.clone(),
        Spans::Wait(pair) => pair.replace('→', "->"),
    };
    let (word, unit, direction) = match stat {
        SpanStat::Mean => ("mean", Unit::Microseconds, Direction::LowerIsBetter),
        SpanStat::Sum => ("sum", Unit::Seconds, Direction::LowerIsBetter),
        // More spans is neither better nor worse in itself.
        SpanStat::Count => ("count", Unit::Custom("spans".into()), Direction::Unstated),
    };
    Some(Metric::new(
        &format!("{key_subject}.{word}"),
        &format!("{who} {word}"),
        unit,
        direction,
        Kind::Aggregate { spans, stat },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry's reader of each run-level metric (what the report's numbers give) and
    /// compare's value of it (from the run's reduced data) agree on every fixture run.
    #[test]
    fn each_run_metric_reads_as_the_registry_says() {
        use crate::analyze::analyze;
        use crate::analyze::fixtures::{
            crashed_run, degenerate_runs, metrics_run, reference_run, uninstrumented_run,
        };
        let mut runs = vec![
            reference_run(),
            crashed_run(),
            uninstrumented_run(),
            metrics_run(),
        ];
        runs.extend(degenerate_runs());
        let mut read = std::collections::BTreeSet::new();
        for run in &runs {
            let (analysis, data) = (analyze(run), super::super::extract(run));
            for m in &RUN_METRICS {
                let compared = Metric::of_run(m).value(&data).map(|v| v.value());
                assert_eq!(
                    compared,
                    (m.read)(&analysis),
                    "{} of {}",
                    m.key,
                    run.meta.name
                );
                if compared.is_some() {
                    read.insert(m.key);
                }
            }
        }
        // Every metric had a value somewhere: the agreement is not only of `None`s.
        assert_eq!(read.len(), RUN_METRICS.len(), "{read:?}");
    }

    #[test]
    fn cpu_per_a_metric_may_be_spelt_like_cpu_per_frame() {
        assert_eq!(
            cpu_per_spelling("cpu_per_req_s.server").as_deref(),
            Some("cpu_per.req_s.server")
        );
        assert_eq!(cpu_per_spelling("cpu_per_frame.decoderd"), None);
        assert_eq!(cpu_per_spelling("cpu.server"), None);
    }

    #[test]
    fn energy_per_frame_is_a_metric_where_a_run_measured_energy() {
        let with = RunData {
            energy: vec![crate::analyze::telemetry::EnergyRow {
                device: "GPU0".into(),
                joules_per_frame: Some(6.99),
                ..Default::default()
            }],
            ..RunData::default()
        };
        let without = RunData::default();
        let metrics = catalogue(&[&with, &without]);
        let energy = metrics
            .iter()
            .find(|m| m.key == "energy_per_frame.GPU0")
            .expect("an energy metric");
        assert_eq!(energy.direction, Direction::LowerIsBetter);
        assert_eq!(energy.unit, Unit::Joules);
        assert!(matches!(energy.value(&with), Some(RunValue::Whole(v)) if v == 6.99));
        assert!(energy.value(&without).is_none());
        assert!(catalogue(&[&without])
            .iter()
            .all(|m| !m.key.starts_with("energy")));
    }

    #[test]
    fn waits_are_metrics_to_show_never_judged_by_default() {
        let run = RunData {
            waits: vec![(
                "convert→encode".into(),
                crate::stats::SortedValues::all(&[1_000i64, 2_000, 3_000]),
            )],
            ..RunData::default()
        };
        let all = catalogue(&[&run]);
        let p50 = (all.iter())
            .find(|m| m.key == "convert->encode.p50")
            .expect("a wait metric");
        assert_eq!(p50.label, "convert→encode wait p50");
        assert!(matches!(
            p50.value(&run),
            Some(RunValue::Ranked { sorted, p }) if sorted.len() == 3 && p == 0.5
        ));
        assert_eq!(p50.display_value(2_000.0), 2.0);
        assert!(defaults(&all).iter().all(|m| !m.key.contains("->")));
        assert_eq!(
            select(&all, &["convert->encode.p99".into()]).unwrap().len(),
            1
        );
        // Either arrow, and any statistic of the waits.
        let picked = select(
            &all,
            &["convert→encode.p99,convert->encode.mean,convert->encode.count,convert->encode.sum,convert→encode.p90".into()],
        )
        .unwrap();
        let keys: Vec<&str> = picked.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "convert->encode.p99",
                "convert->encode.mean",
                "convert->encode.count",
                "convert->encode.sum",
                "convert->encode.p90"
            ]
        );
        let value = |m: &Metric| m.display_value(m.value(&run).unwrap().value());
        assert_eq!(value(&picked[1]), 2.0); // µs
        assert_eq!(value(&picked[2]), 3.0);
        assert_eq!(value(&picked[3]), 6e-6); // s
        assert!(select(&all, &["convert->encode.p100".into()]).is_err());
        assert!(select(&all, &["convert->encode.median".into()]).is_err());
    }
}
