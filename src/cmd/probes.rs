//! The probe options of `framelab run` and `bench` (`--probe`, `--usdt`, `--usdt-event`,
//! `--tracepoint`, `--frame-arg`, `--frame-probe`, `--pair`), and `framelab probes BINARY
//! [PATTERN]`: the functions of a binary that can be probed.

use clap::Args;
use framelab::probes::listing::{listing, ListingRequest};
use framelab::probes::{ProbeOptions, ProbeText};
use framelab::render::{self, format::PROBES, Format};

use super::output::emit;
use super::Outcome;

/// Stages from an unmodified program, through uprobes (docs/probes.md).
#[derive(Args, Debug, Default)]
pub struct ProbeArgs {
    /// Record a span of stage STAGE for each call of FUNCTION in BINARY (a path, a program
    /// on PATH or a library's soname), from entry to return; FUNCTION may be 0xOFFSET.
    /// Needs root or CAP_SYS_ADMIN (repeat for more)
    #[arg(long = "probe", value_name = "STAGE=BINARY:FUNCTION")]
    pub probes: Vec<String>,
    /// Record a span of stage STAGE from each hit of USDT probe PROVIDER:BEGIN in BINARY to
    /// the same thread's next hit of PROVIDER:END (repeat for more)
    #[arg(long = "usdt", value_name = "STAGE=BINARY:PROVIDER:BEGIN,END")]
    pub usdt: Vec<String>,
    /// Record an event NAME at each hit of USDT probe PROVIDER:PROBE, keyed by its first
    /// argument (pair two into spans with --pair STAGE=START:END; repeat for more)
    #[arg(long = "usdt-event", value_name = "NAME=BINARY:PROVIDER:PROBE")]
    pub usdt_events: Vec<String>,
    /// Record an event NAME at each hit of kernel tracepoint SUBSYSTEM:EVENT, on any task,
    /// keyed by its integer field FIELD (default: its first field after the common ones;
    /// repeat for more)
    #[arg(long = "tracepoint", value_name = "NAME=SUBSYSTEM:EVENT[:FIELD]")]
    pub tracepoints: Vec<String>,
    /// Take a probe stage's frame id from an integer argument of the probed call
    /// (arg1 = rdi … arg6 = r9)
    #[arg(long = "frame-arg", value_name = "STAGE=argN")]
    pub frame_args: Vec<String>,
    /// Start frame N+1 at each call of this function: probe stages without --frame-arg take
    /// the frame started last
    #[arg(long, value_name = "BINARY:FUNCTION")]
    pub frame_probe: Option<String>,
    /// Make each event START and the next END of the same KEY (key: the events' key, the
    /// default; tid: their thread) a span of stage STAGE, e.g. --pair
    /// sleep=enter:exit:tid with two --tracepoint or --usdt-event events (repeatable)
    #[arg(long = "pair", value_name = "STAGE=START:END[:KEY]")]
    pub pairs: Vec<String>,
}

impl ProbeArgs {
    /// The options as given, for a bench to keep and give every run.
    pub fn text(&self) -> ProbeText {
        ProbeText {
            functions: self.probes.clone(),
            usdt: self.usdt.clone(),
            usdt_events: self.usdt_events.clone(),
            tracepoints: self.tracepoints.clone(),
            frame_args: self.frame_args.clone(),
            frame_probe: self.frame_probe.clone(),
            pairs: self.pairs.clone(),
        }
    }

    /// Checked as given (forms, names, a stage or a point twice): a refusal is a usage
    /// error, exit 2. What the binaries hold is checked later, at the probes' placing.
    pub fn options(&self) -> anyhow::Result<ProbeOptions> {
        self.text()
            .parse()
            .map_err(|why| framelab::usage::UsageError(why).into())
    }
}

#[derive(Args, Debug)]
pub struct ProbesArgs {
    /// The executable or library (a path, a program on PATH, or a soname)
    #[arg(required_unless_present = "cost")]
    pub binary: Option<String>,
    /// Only functions whose name contains this
    pub pattern: Option<String>,
    /// Measure what a probed call (entry + return) costs on this machine, by the probed
    /// function's first instruction; needs root or CAP_SYS_ADMIN
    #[arg(long)]
    pub cost: bool,
}

/// What `framelab probes` was asked: the costs, a binary's functions, or both.
pub(super) struct ProbesPlan {
    request: ListingRequest,
}

impl TryFrom<ProbesArgs> for ProbesPlan {
    type Error = anyhow::Error;

    /// Nothing to refuse: clap requires a binary unless `--cost` is given.
    fn try_from(args: ProbesArgs) -> anyhow::Result<ProbesPlan> {
        Ok(ProbesPlan {
            request: ListingRequest {
                cost: args.cost,
                binary: args.binary,
                pattern: args.pattern.unwrap_or_default(),
            },
        })
    }
}

pub(super) fn run(args: ProbesArgs) -> anyhow::Result<Outcome> {
    let plan = ProbesPlan::try_from(args)?;
    let listing = listing(&plan.request).map_err(anyhow::Error::msg)?;
    emit(&render::document::write(&listing, Format::Text, &PROBES)?)?;
    Ok(Outcome::Done)
}
