//! `framelab hist`: a stage's (or a pair's) distribution as a histogram.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use framelab::hist::{self, HistOptions};

use super::format::HistFormat;
use super::output::emit;
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct HistArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Durations of this stage (`total` and `interval` work too); default: every stage
    #[arg(long, conflicts_with = "pair")]
    pub stage: Option<String>,
    /// Durations from event START to event END of the same key
    #[arg(long, value_name = "START:END")]
    pub pair: Option<String>,
    /// Power-of-two buckets, bpftrace's layout (the default)
    #[arg(long, conflicts_with_all = ["linear", "buckets", "min", "max"])]
    pub log2: bool,
    #[command(flatten)]
    pub linear: LinearArgs,
    /// One histogram per thread or per process
    #[arg(long, value_enum)]
    pub by: Option<crate::cli::choices::GroupBy>,
    /// Share of values below VALUE (a time such as 1ms, or a size such as 4KiB), read from
    /// the buckets: a range when VALUE splits a bucket (repeatable)
    #[arg(long, value_parser = hist::bounds::parse_threshold, value_name = "VALUE")]
    pub below: Vec<hist::bounds::Threshold>,
    /// Share of values at or above VALUE, as --below (repeatable)
    #[arg(long, value_parser = hist::bounds::parse_threshold, value_name = "VALUE")]
    pub above: Vec<hist::bounds::Threshold>,
    /// The unit of imported histograms whose map name does not say it (ns, us, ms, s, bytes)
    #[arg(long, value_parser = hist::bounds::parse_unit, value_name = "UNIT")]
    pub unit: Option<String>,
    /// text, markdown or json (the last two: power-of-two buckets and imported histograms,
    /// each with its figures)
    #[arg(long, value_enum, default_value = "text")]
    pub format: HistFormat,
}

/// The linear histogram layout (`hist`, and `run --live` with `--live-linear`).
#[derive(Args, Debug)]
pub struct LinearArgs {
    /// Linear buckets STEP wide (e.g. 100us), under NumSamples, Min, Max, Mean, Variance, SD
    /// and Median; at most 400 buckets (a finer step is widened, and the output says so)
    #[arg(long, value_parser = limits::step, value_name = "STEP")]
    pub linear: Option<Duration>,
    /// Linear layout in about N buckets from --min to --max (default: the smallest and
    /// largest value), each ⌈range/N⌉ wide rounded up to a whole µs or ms once 10 of them
    /// or more (so fewer than N may be drawn; the last ends at --max); at most 10000
    #[arg(long, value_parser = limits::buckets, value_name = "N", conflicts_with = "linear")]
    pub buckets: Option<u64>,
    /// Linear layout from DUR: smaller values are counted as outside, not drawn
    #[arg(long, value_parser = limits::hist_bound, value_name = "DUR")]
    pub min: Option<Duration>,
    /// Linear layout up to DUR: values at or above it are counted as outside, not drawn
    #[arg(long, value_parser = limits::hist_bound, value_name = "DUR")]
    pub max: Option<Duration>,
}

impl LinearArgs {
    pub fn get(&self) -> framelab::hist::LinearArgs {
        framelab::hist::LinearArgs {
            step: self.linear,
            buckets: self.buckets,
            min: self.min,
            max: self.max,
        }
    }
}

/// Histograms as asked, checked: the layout, stage or pair, and figures.
pub(super) struct HistPlan {
    run: PathBuf,
    run_id: Option<i64>,
    options: HistOptions,
}

impl TryFrom<HistArgs> for HistPlan {
    type Error = anyhow::Error;

    fn try_from(args: HistArgs) -> anyhow::Result<HistPlan> {
        let by = args.by.map(Into::into);
        let layout = args.linear.get();
        let options = HistOptions {
            thresholds: hist::figures::Thresholds {
                below: args.below,
                above: args.above,
            },
            unit: args.unit,
            format: args.format.into(),
            ..HistOptions::from_args(args.stage, args.pair.as_deref(), layout, by)?
        };
        Ok(HistPlan {
            run: args.run,
            run_id: args.run_id,
            options,
        })
    }
}

pub(super) fn run(args: HistArgs) -> anyhow::Result<Outcome> {
    let HistPlan {
        run,
        run_id,
        options: opts,
    } = HistPlan::try_from(args)?;
    emit(&hist::render_file(&run, run_id, &opts)?)?;
    Ok(Outcome::Done)
}
