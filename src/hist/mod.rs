//! Histograms of durations: bpftrace's power-of-two layout and a linear layout with
//! summary statistics, from a stage, a pair of events, or histograms imported as such.

pub mod layout;
pub mod live;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::analyze::frames::{intervals_ns, measure_run, Frames};
use crate::analyze::pair::{pair_events, PairSpec};
use crate::model::{Run, Span};
pub use layout::LinearSpec;

/// `--by`: one histogram per thread or per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupBy {
    Thread,
    Process,
}

#[derive(Clone, Debug, Default)]
pub struct HistOptions {
    pub stage: Option<String>,
    pub pair: Option<PairSpec>,
    /// The linear layout asked for; `None`: power-of-two buckets.
    pub linear: Option<LinearSpec>,
    pub by: Option<GroupBy>,
}

/// `--linear`, `--buckets`, `--min` and `--max` as given (any of them asks for the linear
/// layout).
#[derive(Clone, Copy, Debug, Default)]
pub struct LinearArgs {
    pub step: Option<Duration>,
    pub buckets: Option<u64>,
    pub min: Option<Duration>,
    pub max: Option<Duration>,
}

impl LinearArgs {
    /// The layout they ask for (`None`: none of them given), or what is wrong with them.
    pub fn spec(&self) -> anyhow::Result<Option<LinearSpec>> {
        let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        if self.step.is_none() && self.buckets.is_none() && self.min.is_none() && self.max.is_none()
        {
            return Ok(None);
        }
        if self.step.is_some_and(|s| s.is_zero()) {
            anyhow::bail!("--linear needs a step above zero, e.g. --linear 100us");
        }
        if let Some(n) = self.buckets {
            if n == 0 || n > layout::MAX_BUCKETS {
                anyhow::bail!(
                    "--buckets {n}: give 1 to {} buckets, e.g. --buckets 50",
                    layout::MAX_BUCKETS
                );
            }
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min >= max {
                anyhow::bail!(
                    "--min ({}) must be below --max ({}): they bound the range drawn",
                    humantime::format_duration(min),
                    humantime::format_duration(max)
                );
            }
        }
        Ok(Some(LinearSpec {
            step_ns: self.step.map(ns),
            buckets: self.buckets,
            min_ns: self.min.map(ns),
            max_ns: self.max.map(ns),
        }))
    }
}

impl HistOptions {
    pub fn from_args(
        stage: Option<String>,
        pair: Option<&str>,
        linear: LinearArgs,
        by: Option<GroupBy>,
    ) -> anyhow::Result<HistOptions> {
        let pair = pair
            .map(PairSpec::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        Ok(HistOptions {
            stage,
            pair,
            linear: linear.spec()?,
            by,
        })
    }
}

/// One set of durations to draw: `@encode`, `@encode[render 4312]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub values_ns: Vec<i64>,
}

/// A run's spans of the measured window (frames ending inside it), as the report counts them.
fn measured_spans(run: &Run) -> (Vec<&Span>, Vec<i64>, Vec<i64>) {
    let frames = Frames::from_spans(&run.spans);
    let (_, measured) = measure_run(run, &frames);
    let spans = run
        .spans
        .iter()
        .zip(&frames.span_frame)
        .filter(|(s, &f)| s.dur_ns >= 0 && measured.in_window.get(f as usize) == Some(&true))
        .map(|(s, _)| s)
        .collect();
    let totals = measured.totals_ns(&frames);
    let intervals = intervals_ns(&measured.ends_ns(&frames));
    (spans, totals, intervals)
}

/// The group a span belongs to under `--by`, as a bpftrace map key.
fn group_key(run: &Run, span: &Span, by: Option<GroupBy>) -> Option<String> {
    let t = run.threads.get(span.thread as usize)?;
    let name = |n: &str, id: u32| {
        if n.is_empty() {
            id.to_string()
        } else {
            format!("{n} {id}")
        }
    };
    match by? {
        GroupBy::Thread => Some(name(&t.name, t.tid)),
        GroupBy::Process => {
            let process = run.processes.iter().find(|p| p.pid == t.pid);
            Some(name(process.map_or("", |p| p.name.as_str()), t.pid))
        }
    }
}

/// Spans grouped under `--by` into named series.
fn grouped<'a>(
    run: &Run,
    name: &str,
    spans: impl Iterator<Item = &'a Span>,
    by: Option<GroupBy>,
) -> Vec<Series> {
    let mut groups: BTreeMap<Option<String>, Vec<i64>> = BTreeMap::new();
    for s in spans {
        groups
            .entry(group_key(run, s, by))
            .or_default()
            .push(s.dur_ns);
    }
    groups
        .into_iter()
        .map(|(key, values_ns)| Series {
            name: match key {
                Some(k) => format!("@{name}[{k}]"),
                None => format!("@{name}"),
            },
            values_ns,
        })
        .collect()
}

/// The series `opts` asks for, and notes (unpaired events) to print under them.
pub fn collect(run: &Run, opts: &HistOptions) -> anyhow::Result<(Vec<Series>, Vec<String>)> {
    if let Some(spec) = &opts.pair {
        let paired = pair_events(run, spec);
        let (start, end) = (run.meta.window_start_ns, run.meta.window_end_ns);
        let inside = paired.spans.iter().filter(|s| {
            s.dur_ns >= 0 && (end <= start || (s.end_ns() >= start && s.end_ns() <= end))
        });
        return Ok((
            grouped(run, &spec.name(), inside, opts.by),
            paired.notes(spec),
        ));
    }
    let (spans, totals, intervals) = measured_spans(run);
    let frame_series = |name: &str, values: Vec<i64>| -> anyhow::Result<Vec<Series>> {
        if opts.by.is_some() {
            anyhow::bail!("--by splits stages by thread or process; `{name}` spans threads, so it has no --by");
        }
        Ok(vec![Series {
            name: format!("@{name}"),
            values_ns: values,
        }])
    };
    match opts.stage.as_deref() {
        Some("total") if !run.stages.iter().any(|s| s == "total") => {
            Ok((frame_series("total", totals)?, Vec::new()))
        }
        Some("interval") if !run.stages.iter().any(|s| s == "interval") => {
            Ok((frame_series("interval", intervals)?, Vec::new()))
        }
        Some(stage) => {
            let Some(id) = run.stages.iter().position(|s| s == stage) else {
                anyhow::bail!(
                    "the run has no stage {stage:?}; it has {}, total and interval",
                    if run.stages.is_empty() {
                        "none".to_string()
                    } else {
                        run.stages
                            .iter()
                            .map(|s| crate::display::name(s))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                );
            };
            let of_stage = spans.iter().copied().filter(|s| usize::from(s.stage) == id);
            Ok((grouped(run, stage, of_stage, opts.by), Vec::new()))
        }
        None => {
            let mut all = Vec::new();
            for (id, stage) in run.stages.iter().enumerate() {
                let of_stage = spans.iter().copied().filter(|s| usize::from(s.stage) == id);
                all.extend(grouped(run, stage, of_stage, opts.by));
            }
            Ok((all, Vec::new()))
        }
    }
}

/// One series drawn in the chosen layout.
pub fn render_series(series: &Series, linear: Option<&LinearSpec>) -> String {
    match linear {
        None => {
            let us: Vec<i64> = series
                .values_ns
                .iter()
                .map(|v| v.div_euclid(1000))
                .collect();
            let buckets = layout::log2_buckets(&us);
            format!(
                "{} (µs):\n{}",
                crate::display::name(&series.name),
                layout::bars(&buckets, &layout::label)
            )
        }
        Some(spec) => render_linear(series, spec),
    }
}

/// The linear layout: the statistics, what lies outside `--min`/`--max`, a note when the
/// step was widened to keep the bucket count sane, then the buckets.
fn render_linear(series: &Series, spec: &LinearSpec) -> String {
    let values = &series.values_ns;
    let b = layout::linear(values, spec);
    let (unit, per_unit) = layout::unit_for_step(b.step_ns);
    let show = |ns: i64| layout::show_ns(ns, unit, per_unit);
    let mut out = format!(
        "{} ({unit}, {} {unit} buckets):\n",
        crate::display::name(&series.name),
        b.step_ns as f64 / per_unit
    );
    out.push_str(&layout::summary_lines(values, unit, per_unit));
    if spec.bounded() {
        let outside = b.below + b.above;
        let mut sides = Vec::new();
        if let Some(min) = spec.min_ns {
            sides.push(format!("{} below {}", b.below, show(min)));
        }
        if let Some(max) = spec.max_ns {
            sides.push(format!("{} at or above {}", b.above, show(max)));
        }
        out.push_str(&format!(
            "# {outside} value{} outside of min/max: {}\n",
            if outside == 1 { "" } else { "s" },
            sides.join(", ")
        ));
    }
    if let Some(c) = b.capped {
        let (asked_unit, asked_per) = layout::unit_for_step(c.asked_step_ns);
        out.push_str(&format!(
            "# capped: {} {asked_unit} buckets would be {} of them, more than {}: drawn {} {unit} \
             wide instead (narrow the range with --min/--max, or ask for up to {} buckets with \
             --buckets N)\n",
            c.asked_step_ns as f64 / asked_per,
            c.asked_buckets,
            layout::DEFAULT_MAX_BUCKETS,
            b.step_ns as f64 / per_unit,
            layout::MAX_BUCKETS,
        ));
    }
    let label = |b: &crate::model::Bucket| layout::scaled_label(b, per_unit);
    out.push_str(&if spec.bounded() {
        layout::all_bars(&b.buckets, &label)
    } else {
        layout::bars(&b.buckets, &label)
    });
    out
}

/// What `framelab hist` prints for `run`.
pub fn render_run(run: &Run, opts: &HistOptions) -> anyhow::Result<String> {
    let (series, notes) = collect(run, opts)?;
    let imported = opts.stage.is_none() && opts.pair.is_none();
    let mut parts: Vec<String> = series
        .iter()
        .filter(|s| !s.values_ns.is_empty())
        .map(|s| render_series(s, opts.linear.as_ref()))
        .collect();
    if imported {
        parts.extend(run.histograms.iter().map(|h| {
            format!(
                "{}:\n{}",
                crate::display::name(&h.name),
                layout::bars(&h.buckets, &layout::label)
            )
        }));
    }
    if parts.is_empty() {
        let what = match (&opts.pair, &opts.stage) {
            (Some(p), _) => format!("no {} pairs", p.name()),
            (None, Some(s)) => format!("no {s} spans in the measured window"),
            (None, None) => "no spans and no imported histograms".into(),
        };
        let mut message = format!("the run has {what}");
        if let Some(note) = notes.first() {
            message.push_str(&format!(" ({note})"));
        }
        anyhow::bail!(message);
    }
    let mut out = parts.join("\n");
    for note in notes {
        out.push_str(&format!("note: {}\n", crate::display::text(&note)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
