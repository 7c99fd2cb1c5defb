//! The probe options of `framelab run` and `bench` (`--probe`, `--usdt`, `--usdt-event`,
//! `--tracepoint`, `--frame-arg`, `--frame-probe`, `--pair`), and `framelab probes BINARY
//! [PATTERN]`: the functions of a binary that can be probed.

use clap::Args;
use framelab::probes::{self, cost::InstructionClass, elf::Binary, ProbeOptions, ProbeText};

use super::Outcome;

/// Stages from an unmodified program, through uprobes (docs/probes.md).
#[derive(Args, Debug, Default)]
pub struct ProbeArgs {
    /// Record a span of stage STAGE for each call of FUNCTION in BINARY (a path, a program
    /// on PATH or a library's soname), from entry to return; FUNCTION may be 0xOFFSET.
    /// Needs root or CAP_PERFMON (repeat for more)
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

    pub fn options(&self) -> anyhow::Result<ProbeOptions> {
        self.text().parse().map_err(anyhow::Error::msg)
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
    /// function's first instruction; needs root or CAP_PERFMON
    #[arg(long)]
    pub cost: bool,
}

/// What `framelab probes` was asked: the costs, a binary's functions, or both.
pub(super) struct ProbesPlan {
    cost: bool,
    binary: Option<String>,
    /// Part of a function's name; empty: every function.
    pattern: String,
}

impl TryFrom<ProbesArgs> for ProbesPlan {
    type Error = anyhow::Error;

    /// Nothing to refuse: clap requires a binary unless `--cost` is given.
    fn try_from(args: ProbesArgs) -> anyhow::Result<ProbesPlan> {
        Ok(ProbesPlan {
            cost: args.cost,
            binary: args.binary,
            pattern: args.pattern.unwrap_or_default(),
        })
    }
}

pub(super) fn run(args: ProbesArgs) -> anyhow::Result<Outcome> {
    let plan = ProbesPlan::try_from(args)?;
    if plan.cost {
        print_costs()?;
    }
    let Some(binary) = &plan.binary else {
        return Ok(Outcome::Done);
    };
    list(binary, &plan.pattern)
}

/// `--cost`: each class measured here and now, and what of a call's cost lies inside the
/// span the probes record (what a run subtracts from each).
fn print_costs() -> anyhow::Result<()> {
    use probes::cost::{measure, Shape};
    let pmu = probes::uprobe::Pmu::find().map_err(anyhow::Error::msg)?;
    let us = |ns: i64| format!("{:.1}", ns as f64 / 1e3);
    println!("what a probe costs the probed thread, by the first instruction probed:");
    println!("  first instruction        entry  entry + return  in the span  µs");
    for class in InstructionClass::ALL {
        let entry = measure(&pmu, class, Shape::Entry).map_err(anyhow::Error::msg)?;
        let call = measure(&pmu, class, Shape::Call).map_err(anyhow::Error::msg)?;
        println!(
            "  {:<23} {:>6}  {:>14}  {:>11}",
            class.describe(),
            us(entry.per_call_ns),
            us(call.per_call_ns),
            call.in_span_ns.map_or("?".to_owned(), us)
        );
    }
    let pair = measure(&pmu, InstructionClass::Nop1, Shape::Pair).map_err(anyhow::Error::msg)?;
    println!(
        "  USDT begin + end (nop)          {:>14}  {:>11}",
        us(pair.per_call_ns),
        pair.in_span_ns.map_or("?".to_owned(), us)
    );
    println!("(\"in the span\": the part of a call's cost between its span's two timestamps, taken off each span)");
    Ok(())
}

fn list(binary: &str, pattern: &str) -> anyhow::Result<Outcome> {
    let args_binary = binary;
    let path = probes::find_binary(args_binary).map_err(anyhow::Error::msg)?;
    let binary = Binary::read(&path).map_err(anyhow::Error::msg)?;
    let matching: Vec<_> = binary
        .functions
        .iter()
        .filter(|f| f.name.contains(pattern))
        .collect();
    let mut out = format!(
        "{} · {}{}\n",
        path.display(),
        framelab::units::plural(matching.len() as u64, "function", "functions"),
        if pattern.is_empty() {
            String::new()
        } else {
            format!(" matching {pattern:?} (of {})", binary.functions.len())
        }
    );
    if !matching.is_empty() {
        out.push_str("  offset      size  first instruction        function\n");
    }
    for f in &matching {
        let class = InstructionClass::of(binary.bytes_at(f.file_offset));
        out.push_str(&format!(
            "  {:#08x} {:>7}  {:<23}  {}\n",
            f.file_offset,
            f.size,
            class.describe(),
            f.name
        ));
    }
    if matching.is_empty() && !pattern.is_empty() {
        let near = binary.near(pattern, 5);
        if !near.is_empty() {
            out.push_str(&format!("  near matches: {}\n", near.join(", ")));
        }
    }
    let usdt: Vec<_> = probes::usdt::probes(&path)
        .map_err(anyhow::Error::msg)?
        .into_iter()
        .filter(|p| p.name.contains(pattern) || p.provider.contains(pattern))
        .collect();
    if !usdt.is_empty() {
        out.push_str(&format!(
            "{} USDT probe sites (--usdt, --usdt-event)\n",
            usdt.len()
        ));
        out.push_str("  offset    semaphore  probe                         arguments\n");
        for p in &usdt {
            let semaphore = match p.semaphore_offset {
                0 => "-".to_owned(),
                s => format!("{s:#x}"),
            };
            out.push_str(&format!(
                "  {:#08x} {:>10}  {:<28}  {}\n",
                p.file_offset,
                semaphore,
                format!("{}:{}", p.provider, p.name),
                p.arguments
            ));
        }
    }
    print!("{out}");
    Ok(Outcome::Done)
}
