//! `framelab sources`: which telemetry sources this machine has, read once.

use clap::Args;
use framelab::sample::{self, ProcessTree};
use framelab::session::procfs::Procfs;

use super::options::sampling_options;
use super::output::emit;
use super::Outcome;
use crate::cli::{limits, SamplingArgs};

#[derive(Args, Debug)]
pub struct SourcesArgs {
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Readings to take, --sample-every apart (at most 100000)
    #[arg(long, value_parser = limits::readings, default_value = "3")]
    pub count: u64,
    /// Also read the threads of this process, and its GPU use where NVML reports it (not
    /// with both --no-sample threads and nvml)
    #[arg(long = "pid", value_name = "PID", value_parser = limits::pid)]
    pub pids: Vec<u32>,
}

/// A reading of the sources as asked, checked: some source is on to read.
pub(super) struct SourcesPlan {
    sampling: framelab::sample::SamplingOptions,
    /// The processes `--pid` names (sorted), read through /proc.
    tree: ProcessTree,
    count: u32,
}

impl TryFrom<SourcesArgs> for SourcesPlan {
    type Error = anyhow::Error;

    fn try_from(args: SourcesArgs) -> anyhow::Result<SourcesPlan> {
        checked(args)
    }
}

pub(super) fn run(args: SourcesArgs) -> anyhow::Result<Outcome> {
    let SourcesPlan {
        sampling,
        tree,
        count,
    } = SourcesPlan::try_from(args)?;
    let (sources, series, samples) = sample::read_once(&sampling, tree, count);
    emit(&framelab::report::sources(
        &sources,
        &series,
        &samples,
        sampling.every,
    ))?;
    Ok(Outcome::Done)
}

/// `SourcesPlan::try_from`.
fn checked(args: SourcesArgs) -> anyhow::Result<SourcesPlan> {
    // --pid is read by two sources: the threads one and NVML's per-process utilisation.
    let off = |kind| args.sampling.no_sample.contains(&kind);
    if !args.pids.is_empty()
        && off(framelab::sample::SourceKind::Threads)
        && off(framelab::sample::SourceKind::Nvml)
    {
        anyhow::bail!(
            "--pid is read by the threads and nvml sources, which --no-sample switches off: \
             leave one of them on, or leave out --pid"
        );
    }
    if framelab::sample::SourceKind::ALL
        .iter()
        .all(|k| args.sampling.no_sample.contains(k))
    {
        anyhow::bail!(
            "--no-sample switches every source off: sources would read nothing; leave out the \
             ones to see"
        );
    }
    let mut pids = args.pids.clone();
    pids.sort_unstable();
    Ok(SourcesPlan {
        sampling: sampling_options(&args.sampling),
        tree: ProcessTree::fixed(Procfs::system(), pids),
        count: u32::try_from(args.count).unwrap_or(u32::MAX),
    })
}
