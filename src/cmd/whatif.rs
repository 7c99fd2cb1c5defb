//! `framelab whatif`: the run's stage durations replayed at another depth or schedule.

use std::path::PathBuf;

use clap::Args;
use framelab::render::Format;
use framelab::whatif;

use super::format::WhatifFormat;
use super::output::emit;
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct WhatifArgs {
    /// The run file
    pub run: PathBuf,
    /// Which run of a file holding several (default: the latest)
    #[arg(long = "run-id", value_parser = limits::run_id)]
    pub run_id: Option<i64>,
    /// Frames in flight, the stages split over this many threads (1 to 64)
    #[arg(long, value_parser = limits::whatif_depth)]
    pub depth: Option<usize>,
    /// Multiply a stage's recorded durations: encode=0.5 (repeat for more)
    #[arg(long = "stage-scale", value_parser = limits::stage_scale, value_name = "STAGE=FACTOR")]
    pub stage_scale: Vec<(String, f64)>,
    /// Run a stage on another thread (one of the run's, or a new one by that name)
    #[arg(long = "move", value_parser = limits::stage_move, value_name = "STAGE=THREAD")]
    pub moves: Vec<(String, String)>,
    /// Leave the pacer out: frames start as soon as they can (the throughput ceiling)
    #[arg(long)]
    pub unpaced: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: WhatifFormat,
}

/// A prediction as asked: each value was checked as it was parsed (`limits`); whether the
/// stages and threads named exist is the run's to say.
pub(super) struct WhatifPlan {
    run: PathBuf,
    run_id: Option<i64>,
    changes: whatif::Changes,
    format: Format,
}

impl TryFrom<WhatifArgs> for WhatifPlan {
    type Error = anyhow::Error;

    fn try_from(args: WhatifArgs) -> anyhow::Result<WhatifPlan> {
        Ok(WhatifPlan {
            run: args.run,
            run_id: args.run_id,
            changes: whatif::Changes {
                depth: args.depth,
                scales: args.stage_scale,
                moves: args.moves,
                unpaced: args.unpaced,
            },
            format: args.format.into(),
        })
    }
}

pub(super) fn run(args: WhatifArgs) -> anyhow::Result<Outcome> {
    let plan = WhatifPlan::try_from(args)?;
    let prediction = whatif::whatif_file(&plan.run, plan.run_id, &plan.changes)?;
    emit(&whatif::render(&prediction, plan.format)?)?;
    Ok(Outcome::Done)
}
