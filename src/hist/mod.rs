//! Histograms of durations: bpftrace's power-of-two layout and a linear layout with
//! summary statistics, from a stage, a pair of events, or histograms imported as such.

pub mod bounds;
pub mod figures;
pub mod layout;
pub mod live;
mod passes;
mod streamed;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::analyze::frames::{intervals_ns, measure_run, Frames};
use crate::analyze::pair::{pair_events, PairSpec};
use crate::analyze::stats::Ns;
use crate::model::{Histogram, Run, Span, SpanSource};
use crate::render::document::{self, plain, pretty_json, write, BarChart, Block, Document, Line};
use crate::render::format::HIST;
use crate::render::style::Style;
use crate::render::Format;
pub use layout::LinearSpec;

/// `--by`: one histogram per thread or per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// `--below` and `--above`: shares read from the buckets.
    pub thresholds: figures::Thresholds,
    /// `--unit`: the unit of imported histograms whose name does not say it.
    pub unit: Option<String>,
    /// Text, Markdown or JSON (`render::format::HIST`).
    pub format: Format,
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
            crate::bail_usage!("--linear needs a step above zero, e.g. --linear 100us");
        }
        if let Some(n) = self.buckets {
            if n == 0 || n > layout::MAX_BUCKETS {
                crate::bail_usage!(
                    "--buckets {n}: give 1 to {} buckets, e.g. --buckets 50",
                    layout::MAX_BUCKETS
                );
            }
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min >= max {
                crate::bail_usage!(
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
            .map_err(crate::usage::UsageError)?;
        Ok(HistOptions {
            stage,
            pair,
            linear: linear.spec()?,
            by,
            ..HistOptions::default()
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
    thread_key(run, span.thread, by)
}

/// The group of thread `thread`'s spans under `--by`.
fn thread_key(run: &Run, thread: u32, by: Option<GroupBy>) -> Option<String> {
    let t = run.threads.get(thread as usize)?;
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
    let frame_series = |name: &str, values: Vec<i64>| {
        vec![Series {
            name: format!("@{name}"),
            values_ns: values,
        }]
    };
    match opts.stage.as_deref() {
        Some(name) => match named_stage(run, name, opts.by)? {
            Named::Total => Ok((frame_series("total", totals), Vec::new())),
            Named::Interval => Ok((frame_series("interval", intervals), Vec::new())),
            Named::Stage(id) => {
                let of_stage = spans.iter().copied().filter(|s| usize::from(s.stage) == id);
                Ok((grouped(run, &run.stages[id], of_stage, opts.by), Vec::new()))
            }
        },
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

/// What `--stage` names: one of the run's stages, or its frames' totals or intervals.
pub(crate) enum Named {
    Stage(usize),
    Total,
    Interval,
}

/// The stage `name` names in `run` (`->` for `→`, as `compare --show` takes it). A name
/// that names nothing, or `--by` on the frames' figures, is a usage error; a run without
/// frames (an import with no frame definition) has no totals or intervals to draw, as its
/// report shows none.
pub(crate) fn named_stage(run: &Run, name: &str, by: Option<GroupBy>) -> anyhow::Result<Named> {
    let exact = run.stages.iter().position(|s| s == name);
    let arrowed = || (run.stages.iter()).position(|s| crate::compare::metrics::same_key(s, name));
    if let Some(id) = exact.or_else(arrowed) {
        return Ok(Named::Stage(id));
    }
    let frames = match name {
        "total" => Named::Total,
        "interval" => Named::Interval,
        _ => crate::bail_usage!(
            "the run has no stage {name:?}; it has {}, total and interval{}",
            if run.stages.is_empty() {
                "none".to_string()
            } else {
                (run.stages.iter())
                    .map(|s| crate::display::name(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            imported_names(run)
        ),
    };
    if by.is_some() {
        crate::bail_usage!(
            "--by splits stages by thread or process; `{name}` spans threads, so it has no --by"
        );
    }
    if run.import.as_ref().is_some_and(|i| i.frames_undefined()) {
        anyhow::bail!(
            "--stage {name}: the run has no frames (imported with no frame definition: each \
             slice is counted alone), so no frame {name}s; define them with framelab import \
             --frame-arg ARG or --frame-regex REGEX"
        );
    }
    Ok(frames)
}

/// ", and the imported histograms '@a[x]', '@b'" for the error of an unknown `--stage`.
fn imported_names(run: &Run) -> String {
    if run.histograms.is_empty() {
        return String::new();
    }
    let names: Vec<String> = (run.histograms.iter())
        .map(|h| format!("'{}'", crate::display::name(&h.name)))
        .collect();
    format!(", and the imported histograms {}", names.join(", "))
}

/// One series drawn in the chosen layout, as text (`hist --live`).
pub fn render_series(series: &Series, linear: Option<&LinearSpec>) -> String {
    let chart = chart_of(&series.name, &series.values_ns, linear, None);
    crate::render::chart::text(&chart, &Style::default())
}

/// A series' power-of-two buckets of whole µs, as drawn.
fn span_drawn<T: Ns>(name: &str, values: &[T]) -> figures::Drawn {
    let us = values.iter().map(|&v| v.into().div_euclid(1000));
    drawn_of(name, layout::log2_buckets_of(us))
}

/// A series drawn from its power-of-two buckets of whole µs.
fn drawn_of(name: &str, buckets: Vec<crate::model::Bucket>) -> figures::Drawn {
    figures::Drawn {
        name: name.to_owned(),
        unit: "us".into(),
        unit_from: "",
        buckets,
        imported: false,
    }
}

/// `@name` and what follows it in a chart's title, the name escaped by the writer.
fn title(name: &str, rest: String) -> Line {
    vec![
        document::Span::name(crate::display::name(name)),
        document::Span::plain(rest),
    ]
}

/// A series of either width as a chart in the chosen layout.
/// `thresholds`: `--below`/`--above` given, so the figures read from the buckets go above
/// them (power-of-two layout only: `check_figures` refuses them with the linear one).
fn chart_of<T: Ns>(
    name: &str,
    values: &[T],
    linear: Option<&LinearSpec>,
    thresholds: Option<&figures::Thresholds>,
) -> BarChart {
    match linear {
        None => log2_chart(span_drawn(name, values), thresholds),
        Some(spec) => linear_chart(name, passes::figures_of(values, spec).as_ref(), spec),
    }
}

/// The power-of-two layout of `drawn`, with the figures `thresholds` ask for above it.
fn log2_chart(drawn: figures::Drawn, thresholds: Option<&figures::Thresholds>) -> BarChart {
    let summary = thresholds
        .filter(|t| !t.is_empty())
        .map_or(Vec::new(), |t| {
            figures::summary(&figures::figures(&drawn, t))
        });
    BarChart {
        title: title(&drawn.name, " (µs)".into()),
        summary,
        bars: layout::bars(&drawn.buckets, &layout::label),
    }
}

/// The linear layout: the statistics, what lies outside `--min`/`--max`, a note when the
/// step was widened to keep the bucket count sane, then the buckets.
fn linear_chart(
    name: &str,
    figures: Option<&passes::LinearFigures>,
    spec: &LinearSpec,
) -> BarChart {
    let empty = layout::LinearBuckets::empty(spec);
    let b = figures.map_or(&empty, |f| &f.buckets);
    // Values, but none inside --min/--max: no bucket, whose width would say nothing; the
    // unit is the one the values alone would be drawn in.
    let no_value_inside = figures.filter(|_| b.buckets.is_empty());
    let step_ns = no_value_inside.map_or(b.step_ns, |f| unbounded_step(&f.summary, spec));
    let (unit, per_unit) = layout::unit_for_step(step_ns);
    let show = |ns: i64| layout::show_ns(ns, unit, per_unit);
    let mut summary = layout::Summary::lines(figures.map(|f| &f.summary), unit, per_unit);
    if spec.bounded() {
        let outside = b.below + b.above;
        let mut sides = Vec::new();
        // A side with none outside is said only when neither has any.
        if let Some(min) = spec.min_ns.filter(|_| b.below > 0 || outside == 0) {
            sides.push(format!("{} below {}", b.below, show(min)));
        }
        if let Some(max) = spec.max_ns.filter(|_| b.above > 0 || outside == 0) {
            sides.push(format!("{} at or above {}", b.above, show(max)));
        }
        summary.push(format!(
            "{outside} value{} outside of min/max: {}",
            if outside == 1 { "" } else { "s" },
            sides.join(", ")
        ));
        if no_value_inside.is_some() {
            summary.push("the range from --min to --max holds no value: nothing to draw".into());
        }
    }
    if let Some(c) = b.capped {
        let (asked_unit, asked_per) = layout::unit_for_step(c.asked_step_ns);
        summary.push(format!(
            "capped: {} {asked_unit} buckets would be {} of them, more than {}: drawn {} {unit} \
             wide instead (narrow the range with --min/--max, or ask for up to {} buckets with \
             --buckets N)",
            c.asked_step_ns as f64 / asked_per,
            c.asked_buckets,
            layout::DEFAULT_MAX_BUCKETS,
            b.step_ns as f64 / per_unit,
            layout::MAX_BUCKETS,
        ));
    }
    let label = |b: &crate::model::Bucket| layout::scaled_label(b, per_unit);
    BarChart {
        title: title(
            name,
            match no_value_inside {
                Some(_) => format!(" ({unit})"),
                None => format!(" ({unit}, {} {unit} buckets)", b.step_ns as f64 / per_unit),
            },
        ),
        summary: summary.into_iter().map(plain).collect(),
        bars: if spec.bounded() {
            layout::all_bars(&b.buckets, &label)
        } else {
            layout::bars(&b.buckets, &label)
        },
    }
}

/// The step the linear layout takes for values from `summary`'s least to its greatest,
/// without `--min`/`--max`.
fn unbounded_step(summary: &layout::Summary, spec: &LinearSpec) -> i64 {
    let unbounded = LinearSpec {
        min_ns: None,
        max_ns: None,
        ..*spec
    };
    layout::linear(&[summary.min, summary.max], &unbounded).step_ns
}

/// `--unit` says the unit of imported histograms whose names say none: where only spans
/// or pairs are drawn (in time units of their own) it would be ignored, so it is refused.
fn check_unit(run: &Run, opts: &HistOptions) -> anyhow::Result<()> {
    let Some(unit) = &opts.unit else {
        return Ok(());
    };
    let imported_drawn = opts.pair.is_none()
        && match opts.stage.as_deref() {
            None => !run.histograms.is_empty(),
            Some(name) => pick_imported(run, name)?.is_some(),
        };
    if !imported_drawn {
        crate::bail_usage!(
            "--unit {unit}: it says the unit of imported histograms whose names say none, and \
             none is drawn here (spans and pairs are times, drawn in units of their own): leave \
             it out"
        );
    }
    Ok(())
}

/// `--below`, `--above` and `--format json` read power-of-two buckets (and imported ones):
/// not the linear layout, whose buckets leave out what lies outside `--min`/`--max`.
/// Markdown shows what text shows, the linear layout included.
fn check_figures(opts: &HistOptions) -> anyhow::Result<()> {
    HIST.check(opts.format)?;
    if opts.linear.is_none() {
        return Ok(());
    }
    let asked = if !opts.thresholds.is_empty() {
        "--below and --above read"
    } else if opts.format == Format::Json {
        "--format json shows"
    } else {
        return Ok(());
    };
    crate::bail_usage!(
        "{asked} power-of-two buckets and imported histograms: leave out --linear, --buckets, \
         --min and --max (the linear layout's summary lines give exact figures of spans)"
    )
}

/// The histograms `--format json` shows: spans' and pairs' as power-of-two buckets
/// of µs, then imported ones (or the one `--stage` names). `source`: the spans as columns
/// (`None`: `run` holds them).
fn all_drawn(
    run: &Run,
    source: Option<&dyn SpanSource>,
    opts: &HistOptions,
) -> anyhow::Result<(Vec<figures::Drawn>, Vec<String>)> {
    if let Some(name) = opts.stage.as_deref() {
        if let Some(picked) = pick_imported(run, name)? {
            if opts.by.is_some() {
                crate::bail_usage!("--stage {name} is a histogram imported with its own buckets: --by splits spans and pairs only; leave it out");
            }
            return Ok((vec![drawn_imported(picked, opts)], Vec::new()));
        }
    }
    let (mut drawn, notes): (Vec<figures::Drawn>, Vec<String>) = match source {
        Some(source) if opts.pair.is_none() => (
            streamed::collect_from(run, source, opts)?
                .iter()
                .filter(|s| !s.tally.is_empty())
                .filter_map(|s| s.tally.drawn(&s.name))
                .collect(),
            Vec::new(),
        ),
        _ => {
            let (series, notes) = collect(run, opts)?;
            (
                series
                    .iter()
                    .filter(|s| !s.values_ns.is_empty())
                    .map(|s| span_drawn(&s.name, &s.values_ns))
                    .collect(),
                notes,
            )
        }
    };
    if opts.stage.is_none() && opts.pair.is_none() {
        if opts.by.is_some() && !run.histograms.is_empty() {
            crate::bail_usage!(
                "the run holds imported histograms ({}), drawn with their own buckets: --by \
                 splits spans and pairs only; leave it out, or name a stage with --stage",
                run.histograms.len()
            );
        }
        drawn.extend(run.histograms.iter().map(|h| drawn_imported(h, opts)));
    }
    if drawn.is_empty() {
        anyhow::bail!("the run has nothing to draw: no spans in the measured window and no imported histograms{}", notes.first().map_or(String::new(), |n| format!(" ({n})")));
    }
    Ok((drawn, notes))
}

/// `--format json` as a document: the JSON of every histogram's figures and the notes.
fn json_document(
    run: &Run,
    source: Option<&dyn SpanSource>,
    opts: &HistOptions,
) -> anyhow::Result<Document> {
    let (drawn, notes) = all_drawn(run, source, opts)?;
    let all: Vec<figures::Figures> = (drawn.iter())
        .map(|d| figures::figures(d, &opts.thresholds))
        .collect();
    let json = figures::HistJson {
        schema: figures::JSON_SCHEMA,
        how_bounds: figures::HOW_BOUNDS,
        histograms: &all,
        notes: &notes,
    };
    Ok(Document {
        blocks: Vec::new(),
        json: pretty_json(&json),
    })
}

/// The document of text and Markdown: each histogram as a bar chart (a blank line between
/// two), then the notes. It has no JSON form (`json_document`).
fn charts_document(charts: Vec<BarChart>, notes: Vec<String>, shows_bounds: bool) -> Document {
    let mut blocks = Vec::new();
    for (i, chart) in charts.into_iter().enumerate() {
        if i > 0 {
            blocks.push(Block::Blank);
        }
        blocks.push(Block::Bars(chart));
    }
    blocks.extend(notes.into_iter().map(Block::Aside));
    if shows_bounds {
        blocks.push(Block::Aside(figures::HOW_BOUNDS.to_owned()));
    }
    Document {
        blocks,
        json: String::new(),
    }
}

/// What `framelab hist` prints for `run`.
pub fn render_run(run: &Run, opts: &HistOptions) -> anyhow::Result<String> {
    write(&run_document(run, opts)?, opts.format, &HIST)
}

/// `run`'s histograms as a document in the form `opts.format` asks for.
fn run_document(run: &Run, opts: &HistOptions) -> anyhow::Result<Document> {
    check_figures(opts)?;
    check_unit(run, opts)?;
    if opts.format == Format::Json {
        return json_document(run, None, opts);
    }
    if let Some(document) = imported_by_name(run, opts)? {
        return Ok(document);
    }
    let (series, notes) = collect(run, opts)?;
    let parts: Vec<BarChart> = series
        .iter()
        .filter(|s| !s.values_ns.is_empty())
        .map(|s| {
            chart_of(
                &s.name,
                &s.values_ns,
                opts.linear.as_ref(),
                Some(&opts.thresholds),
            )
        })
        .collect();
    finish(run, opts, parts, notes)
}

/// What `framelab hist` prints for run `run_id` of the run file `path` (`None`: the
/// latest): the run opened, its spans streamed into the histograms ([`render_from`]), its
/// events loaded for `--pair`.
pub fn render_file(
    path: &std::path::Path,
    run_id: Option<i64>,
    opts: &HistOptions,
) -> anyhow::Result<String> {
    let mut run = crate::store::open_run(path, run_id)?;
    if opts.pair.is_some() {
        run.head.events = run.events()?;
    }
    render_from(&run.head, &run, opts)
}

/// What `framelab hist` prints for `head` (a run without its spans) with its spans from
/// `source`, holding them as columns: the same text as [`render_run`]. `--pair` reads
/// events, not spans: `head` must hold them.
pub fn render_from(
    head: &Run,
    source: &dyn SpanSource,
    opts: &HistOptions,
) -> anyhow::Result<String> {
    if opts.pair.is_some() {
        return render_run(head, opts);
    }
    write(&document_from(head, source, opts)?, opts.format, &HIST)
}

/// [`render_from`]'s document.
fn document_from(
    head: &Run,
    source: &dyn SpanSource,
    opts: &HistOptions,
) -> anyhow::Result<Document> {
    check_figures(opts)?;
    check_unit(head, opts)?;
    if opts.format == Format::Json {
        return json_document(head, Some(source), opts);
    }
    if let Some(document) = imported_by_name(head, opts)? {
        return Ok(document);
    }
    let parts: Vec<BarChart> = streamed::collect_from(head, source, opts)?
        .iter()
        .filter(|s| !s.tally.is_empty())
        .map(|s| s.tally.chart(&s.name, Some(&opts.thresholds)))
        .collect();
    finish(head, opts, parts, Vec::new())
}

/// `--stage NAME` naming an imported histogram as the report prints it (`@lat_ns[bpftrace]`),
/// or a map that has one key (`@lat_ns`): that histogram. `None` when NAME is a stage of
/// the run or begins no imported histogram's name. A map of several keys, or a name that
/// only begins some histograms' names, is a usage error listing them.
fn pick_imported<'a>(run: &'a Run, name: &str) -> anyhow::Result<Option<&'a Histogram>> {
    if run.stages.iter().any(|s| s == name) {
        return Ok(None);
    }
    let listed = |several: &[&Histogram]| {
        several
            .iter()
            .map(|h| format!("'{}'", crate::display::name(&h.name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(one) = run.histograms.iter().find(|h| h.name == name) {
        return Ok(Some(one));
    }
    let of_map: Vec<&Histogram> = (run.histograms.iter())
        .filter(|h| h.name.split_once('[').map_or(h.name.as_str(), |m| m.0) == name)
        .collect();
    match of_map.as_slice() {
        [one] => return Ok(Some(*one)),
        [] => {}
        several => {
            return Err(crate::usage::UsageError(format!(
                "--stage {name}: the map has {} keys; give one as the report prints it: {}",
                several.len(),
                listed(several)
            ))
            .into())
        }
    }
    let begun: Vec<&Histogram> = (run.histograms.iter())
        .filter(|h| !name.is_empty() && h.name.starts_with(name))
        .collect();
    if begun.is_empty() {
        return Ok(None);
    }
    Err(crate::usage::UsageError(format!(
        "--stage {name}: no histogram has that name; {} begin{} with it: give one as the report \
         prints it: {}",
        begun.len(),
        if begun.len() == 1 { "s" } else { "" },
        listed(&begun)
    ))
    .into())
}

/// An imported histogram with its unit: from its map's name, else `--unit`.
fn drawn_imported(h: &Histogram, opts: &HistOptions) -> figures::Drawn {
    let (unit, unit_from) = match (h.unit.as_str(), &opts.unit) {
        ("", Some(given)) => (given.clone(), "--unit"),
        ("", None) => (String::new(), ""),
        (unit, _) => (unit.to_owned(), "name"),
    };
    figures::Drawn {
        name: h.name.clone(),
        unit,
        unit_from,
        buckets: h.buckets.clone(),
        imported: true,
    }
}

/// An imported histogram as a chart: its name, its figures, its buckets.
fn imported_chart(h: &Histogram, opts: &HistOptions) -> BarChart {
    let f = figures::figures(&drawn_imported(h, opts), &opts.thresholds);
    BarChart {
        title: title(&h.name, String::new()),
        summary: figures::summary(&f),
        bars: layout::bars(&h.buckets, &layout::label),
    }
}

/// `hist --stage NAME` of one imported histogram: it alone, with its own buckets.
fn imported_by_name(run: &Run, opts: &HistOptions) -> anyhow::Result<Option<Document>> {
    let Some(name) = opts.stage.as_deref() else {
        return Ok(None);
    };
    let Some(picked) = pick_imported(run, name)? else {
        return Ok(None);
    };
    if opts.linear.is_some() || opts.by.is_some() {
        crate::bail_usage!(
            "--stage {name} is a histogram imported with its own buckets: --linear, --buckets, \
             --min, --max and --by lay out spans and pairs only; leave them out"
        );
    }
    Ok(Some(charts_document(
        vec![imported_chart(picked, opts)],
        Vec::new(),
        true,
    )))
}

/// The drawn series, then imported histograms, then notes; or why there is nothing to draw.
fn finish(
    run: &Run,
    opts: &HistOptions,
    mut parts: Vec<BarChart>,
    notes: Vec<String>,
) -> anyhow::Result<Document> {
    let imported = opts.stage.is_none() && opts.pair.is_none();
    let mut notes = notes;
    let relayout = match (opts.linear.is_some(), opts.by) {
        (true, Some(_)) => Some("--linear, --buckets, --min, --max and --by"),
        (true, None) => Some("--linear, --buckets, --min and --max"),
        (false, Some(_)) => Some("--by"),
        (false, None) => None,
    };
    if let Some(options) = relayout.filter(|_| imported && !run.histograms.is_empty()) {
        // Imported histograms are only their buckets: no values to lay out again.
        if parts.is_empty() {
            crate::bail_usage!(
                "the run holds only imported histograms ({}), drawn with their own buckets: \
                 {options} lay out spans and pairs only; leave them out",
                run.histograms.len()
            );
        }
        notes.push(format!(
            "the imported histograms are drawn with their own buckets: {options} lay out spans \
             and pairs only"
        ));
    }
    let shows_bounds = imported && !run.histograms.is_empty();
    if imported {
        parts.extend(run.histograms.iter().map(|h| imported_chart(h, opts)));
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
    Ok(charts_document(
        parts,
        notes,
        shows_bounds || !opts.thresholds.is_empty(),
    ))
}

#[cfg(test)]
mod tests;
