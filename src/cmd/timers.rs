//! `framelab timers`: how precisely this machine can wake at each interval.

use std::io::IsTerminal;
use std::time::Duration;

use clap::Args;
use framelab::render::Format;
use framelab::timers;

use super::format::TimersFormat;
use super::output::{emit, use_color};
use super::Outcome;
use crate::cli::limits;

#[derive(Args, Debug)]
pub struct TimersArgs {
    /// Measuring time of each cell (one strategy, slack and scheduling class at one interval)
    #[arg(long, value_parser = limits::timers_duration, default_value = timers::DEFAULT_DURATION)]
    pub duration: Duration,
    /// Intervals to wait, comma-separated, each once, 1us to 10s (5714us is 175 fps)
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = limits::timers_interval,
        default_value = timers::DEFAULT_INTERVALS,
        allow_hyphen_values = true
    )]
    pub interval: Vec<Duration>,
    /// Precision wanted: the table ends with the cheapest strategy whose p99 lateness is at most this
    #[arg(long, value_parser = limits::timers_need, default_value = timers::DEFAULT_NEED, allow_hyphen_values = true)]
    pub need: Duration,
    #[arg(long, value_enum, default_value = "text")]
    pub format: TimersFormat,
}

/// A timer survey as asked, checked, and what it will measure on this machine.
pub(super) struct TimersPlan {
    options: timers::TimersOptions,
    plan: timers::Plan,
    format: Format,
}

impl TryFrom<TimersArgs> for TimersPlan {
    type Error = anyhow::Error;

    fn try_from(args: TimersArgs) -> anyhow::Result<TimersPlan> {
        let options = timers::TimersOptions {
            duration: args.duration,
            intervals: args.interval,
            need: args.need,
        };
        options.validate()?;
        Ok(TimersPlan {
            plan: timers::Plan::new(&options, timers::fifo_status()),
            options,
            format: args.format.into(),
        })
    }
}

pub(super) fn run(args: TimersArgs) -> anyhow::Result<Outcome> {
    let TimersPlan {
        options: opts,
        plan,
        format,
    } = TimersPlan::try_from(args)?;
    eprintln!("framelab timers: {}", plan.summary(opts.intervals.len()));
    let live = std::io::stderr().is_terminal();
    let report = timers::run(&opts, &plan, |done, total, cell| {
        if live {
            eprint!(
                "\r\x1b[K  {}/{total} every {} µs: {}",
                done + 1,
                cell.interval_ns as f64 / 1e3,
                cell.strategy.name()
            );
        }
    });
    if live {
        eprint!("\r\x1b[K");
    }
    emit(&timers::render::render(&report, format, use_color())?)?;
    Ok(Outcome::Done)
}
