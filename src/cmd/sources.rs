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
    /// Also read the threads of this process (not with --no-sample threads)
    #[arg(long = "pid", value_name = "PID", value_parser = limits::pid)]
    pub pids: Vec<u32>,
}

pub(super) fn run(args: SourcesArgs) -> anyhow::Result<Outcome> {
    if !args.pids.is_empty()
        && (args.sampling.no_sample).contains(&framelab::sample::SourceKind::Threads)
    {
        anyhow::bail!(
            "--pid reads a process's threads, which --no-sample threads switches off: leave one \
             of them out"
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
    let opts = sampling_options(&args.sampling);
    let mut pids = args.pids.clone();
    pids.sort_unstable();
    let tree = ProcessTree::fixed(Procfs::system(), pids);
    let count = u32::try_from(args.count).unwrap_or(u32::MAX);
    let (sources, series, samples) = sample::read_once(&opts, tree, count);
    emit(&framelab::report::sources(
        &sources, &series, &samples, opts.every,
    ))?;
    Ok(Outcome::Done)
}
