//! Plots in a document: what the HTML page draws, each kind with its data already
//! decimated (a long run's series as minimum/maximum pairs, bounded whatever its length),
//! its axes' units and its labels. A feature computes them; the writers for terminals and
//! pull requests leave them out, and `render::html_writer` gives each to the page's script
//! under the key that draws its kind.

use serde::Serialize;

/// What a plot shows.
pub enum Plot {
    /// The frame times over the run (seconds after launch) with the budget's line and the
    /// measured window: the page's `budget_us`, `window_start_s`, `window_end_s`, `frames`.
    FrameTimes(Box<FrameTimes>),
    /// Each stage's durations as a quantile function (`stages`).
    Stages(QuantileCurves),
    /// The fps at each percentile of frames (`fps`; none without intervals).
    Fps(Option<FpsCurve>),
    /// The worst frames' spans, stage by stage on their threads (`gantt`).
    Timelines(Vec<GanttFrame>),
    /// Telemetry series over the run, and how many were not plotted (`telemetry`,
    /// `telemetry_left_out`).
    Telemetry {
        series: Vec<Series>,
        left_out: usize,
    },
    /// Imported histograms as their tool counted them (`histograms`).
    Histograms(Vec<Histogram>),
    /// A comparison's variants, whose colours tell them apart in every plot after it
    /// (`baseline`, `variants`).
    Variants {
        baseline: String,
        variants: Vec<String>,
    },
    /// Per metric, each variant's change of the median against the baseline with its
    /// interval and every run as a dot, over the noise band (`noise_pct`, `forests`).
    Forests {
        noise_pct: f64,
        forests: Vec<Forest>,
    },
    /// Sweep tables as lines over the parameter values (`sweeps`).
    Sweeps(Vec<SweepLines>),
    /// Each stage's durations per variant, overlaid (`stages`).
    StageOverlays(Vec<StageOverlay>),
    /// Metrics over commits, a line per machine (`trends`).
    Trends(Vec<Trend>),
}

/// The frame-time plots of a run: end-to-end totals and intervals between ends.
pub struct FrameTimes {
    /// The frame budget's line, µs.
    pub budget_us: Option<f64>,
    /// Seconds after launch: where the measured window begins and ends (the rest shaded).
    pub window_start_s: f64,
    pub window_end_s: f64,
    pub frames: FrameSeries,
}

/// A series as plotted: x in seconds after launch, y in `unit`.
#[derive(Serialize)]
pub struct Series {
    pub label: String,
    pub unit: String,
    /// How many points the series had, and how many consecutive points each plotted
    /// minimum/maximum pair stands for (1: all are drawn).
    pub points: usize,
    pub bucket: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// The bucket of the finest of `detail`, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finest_bucket: Option<usize>,
    /// Finer levels of the same points, coarsest first, for a zoomed view (frame plots
    /// only; none when every point is drawn). In the page apart from the rest
    /// (`render::html_writer::detail`): it is read on the first zoom, not before the first paint.
    #[serde(skip)]
    pub detail: Vec<Level>,
}

/// A level of detail: each bucket of `bucket` consecutive points as its smallest and
/// largest (every point when 1). The page draws the finest level that has no more points
/// in the visible range than the whole run's view has.
#[derive(Serialize)]
pub struct Level {
    pub bucket: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// Points marked on a plot (late frames, stutters): all `of` of them, or the worst
/// the feature keeps when there are more.
#[derive(Serialize, Default)]
pub struct Markers {
    pub of: usize,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

#[derive(Serialize)]
pub struct FrameSeries {
    /// Every frame, measured or not, ordered by end: end-to-end total, µs.
    pub total: Series,
    /// Between consecutive frame ends, µs.
    pub interval: Series,
    /// Measured frames over the budget.
    pub late: Markers,
    /// Measured intervals that are stutters (docs/metrics.md).
    pub stutters: Markers,
}

/// Durations per stage as quantile functions on one grid of percentiles (a CDF with its
/// axes swapped, so every stage shares the x values).
#[derive(Serialize, Default)]
pub struct QuantileCurves {
    /// Percentiles, 0 to 100.
    pub p: Vec<f64>,
    pub series: Vec<NamedValues>,
}

#[derive(Serialize)]
pub struct NamedValues {
    pub name: String,
    pub count: usize,
    pub us: Vec<f64>,
}

/// FPS at each percentile of frames (fps_p = 1e6 / Q(1 − p) of the interval, µs), and
/// the named 1% and 0.1% lows of the report.
#[derive(Serialize)]
pub struct FpsCurve {
    pub p: Vec<f64>,
    pub fps: Vec<f64>,
    pub named: Vec<(String, f64)>,
}

/// One worst frame's spans, each on the row of its thread, µs from the frame's start.
#[derive(Serialize)]
pub struct GanttFrame {
    pub frame: u64,
    pub t_s: f64,
    pub total_us: f64,
    pub threads: Vec<String>,
    /// (stage index into `stage_names` order of the page, thread row, start µs, µs).
    pub spans: Vec<(usize, usize, f64, f64)>,
    pub stage_names: Vec<String>,
}

#[derive(Serialize)]
pub struct Histogram {
    pub name: String,
    pub unit: String,
    /// (lo, hi, count); `None` is unbounded on that side.
    pub buckets: Vec<(Option<i64>, Option<i64>, u64)>,
}

/// One metric: a row per variant (and group of parameter values) on a ratio axis.
#[derive(Serialize)]
pub struct Forest {
    pub metric: String,
    pub label: String,
    pub unit: String,
    /// Whether a higher value is better.
    pub higher_is_better: bool,
    pub rows: Vec<ForestRow>,
}

#[derive(Serialize)]
pub struct ForestRow {
    /// `variant` or `variant [params]`.
    pub label: String,
    /// The variant's name alone: its colour on the page, the same in every plot.
    pub variant: String,
    pub baseline: bool,
    /// Median across runs in the metric's unit, and the baseline's it is divided by.
    pub median: Option<f64>,
    pub baseline_median: Option<f64>,
    /// median ÷ baseline median with its 95% interval (1 for the baseline itself).
    pub ratio: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
    pub verdict: String,
    /// Every measured run's value ÷ the baseline median.
    pub runs: Vec<f64>,
}

/// A sweep table as lines: x the parameter values in order, one line per variant.
#[derive(Serialize)]
pub struct SweepLines {
    pub label: String,
    pub unit: String,
    pub params: Vec<String>,
    pub lines: Vec<(String, Vec<Option<f64>>)>,
}

/// One stage's durations per variant (spans of all measured runs of the first group of
/// parameter values pooled), as quantile functions on one percentile grid.
#[derive(Serialize)]
pub struct StageOverlay {
    pub stage: String,
    pub group: String,
    pub p: Vec<f64>,
    /// (variant, µs at each percentile).
    pub variants: Vec<(String, Vec<f64>)>,
}

/// One metric over commits: x the commits in the order first recorded, a line per machine
/// (machines are never averaged together).
#[derive(Serialize)]
pub struct Trend {
    pub metric: String,
    /// As the store names it (`microseconds`): the page shows its symbol.
    pub unit: String,
    /// Whole commit ids.
    pub commits: Vec<String>,
    /// (the machine as the legend names it, its median at each commit: none where it has
    /// no run of that commit).
    pub lines: Vec<(String, Vec<Option<f64>>)>,
}

impl Plot {
    /// The page's keys and values of this plot, in the order the page's data holds them.
    pub fn entries<M: serde::ser::SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        match self {
            Plot::FrameTimes(f) => {
                map.serialize_entry("budget_us", &f.budget_us)?;
                map.serialize_entry("window_start_s", &f.window_start_s)?;
                map.serialize_entry("window_end_s", &f.window_end_s)?;
                map.serialize_entry("frames", &f.frames)
            }
            Plot::Stages(curves) => map.serialize_entry("stages", curves),
            Plot::Fps(curve) => map.serialize_entry("fps", curve),
            Plot::Timelines(frames) => map.serialize_entry("gantt", frames),
            Plot::Telemetry { series, left_out } => {
                map.serialize_entry("telemetry", series)?;
                map.serialize_entry("telemetry_left_out", left_out)
            }
            Plot::Histograms(histograms) => map.serialize_entry("histograms", histograms),
            Plot::Variants { baseline, variants } => {
                map.serialize_entry("baseline", baseline)?;
                map.serialize_entry("variants", variants)
            }
            Plot::Forests { noise_pct, forests } => {
                map.serialize_entry("noise_pct", noise_pct)?;
                map.serialize_entry("forests", forests)
            }
            Plot::Sweeps(sweeps) => map.serialize_entry("sweeps", sweeps),
            Plot::StageOverlays(stages) => map.serialize_entry("stages", stages),
            Plot::Trends(trends) => map.serialize_entry("trends", trends),
        }
    }
}
