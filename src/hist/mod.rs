//! Histograms of durations: bpftrace's power-of-two layout and a linear layout with
//! summary statistics, from a stage, a pair of events, or histograms imported as such.

use std::time::Duration;

use crate::analyze::pair::PairSpec;
use crate::model::Run;

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
    /// Linear buckets this many ns wide; `None`: power-of-two buckets.
    pub linear_ns: Option<i64>,
    pub by: Option<GroupBy>,
}

impl HistOptions {
    pub fn from_args(
        stage: Option<String>,
        pair: Option<&str>,
        linear: Option<Duration>,
        by: Option<GroupBy>,
    ) -> anyhow::Result<HistOptions> {
        let pair = pair
            .map(PairSpec::parse)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let linear_ns = match linear {
            Some(step) if step.is_zero() => {
                anyhow::bail!("--linear needs a step above zero, e.g. --linear 100us")
            }
            Some(step) => Some(i64::try_from(step.as_nanos()).unwrap_or(i64::MAX)),
            None => None,
        };
        Ok(HistOptions {
            stage,
            pair,
            linear_ns,
            by,
        })
    }
}

pub fn render_run(_run: &Run, _opts: &HistOptions) -> anyhow::Result<String> {
    anyhow::bail!("framelab hist is not written yet")
}
