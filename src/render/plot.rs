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
    FrameTimes(FrameTimes),
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
        }
    }
}
