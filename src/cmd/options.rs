//! Arguments several subcommands share, turned into the library's options.

use std::io::IsTerminal;

use framelab::session::{self, ProgressLine, RunOptions};

use super::run_progress::TerminalProgress;
use crate::cli::{LiveArgs, ProfileFlag, SamplingArgs, ServiceArgs};

/// The command as given, or `sh -c 'WORDS'` with `--shell` (the words joined by spaces).
pub(super) fn shell_command(words: Vec<String>, shell: bool) -> Vec<String> {
    if shell {
        vec!["sh".into(), "-c".into(), words.join(" ")]
    } else {
        words
    }
}

/// `--live` and `--live-linear` set on `opts`; the progress line is left off with them
/// (the live histograms and the progress line would overwrite each other).
pub(super) fn with_live(mut opts: RunOptions, args: &LiveArgs) -> anyhow::Result<RunOptions> {
    opts.live.every = args.live;
    opts.live.out = framelab::hist::live::LiveOut::new(std::io::stderr());
    opts.live.linear = framelab::hist::LinearArgs {
        step: args.live_linear,
        ..Default::default()
    }
    .spec()
    .map_err(|e| anyhow::anyhow!("{}", e.to_string().replace("--linear", "--live-linear")))?;
    if std::io::stderr().is_terminal() && opts.live.every.is_none() {
        opts.live.progress = ProgressLine::new(TerminalProgress::default());
    }
    Ok(opts)
}

/// Who may use the session: `--share-session GROUP`, `--session-user USER`, or only us.
pub(super) fn session_access(
    group: &Option<String>,
    user: &Option<String>,
) -> anyhow::Result<session::SessionAccess> {
    Ok(match (group, user) {
        (Some(group), _) => session::SessionAccess::group(group)?,
        (None, Some(user)) => session::SessionAccess::user(user)?,
        (None, None) => session::SessionAccess::Private,
    })
}

pub(super) fn sampling_options(args: &SamplingArgs) -> framelab::sample::SamplingOptions {
    let mut options = framelab::sample::SamplingOptions {
        every: args.sample_every,
        disabled: args.no_sample.clone(),
        ..Default::default()
    };
    if let Some(root) = &args.sysfs_root {
        options.roots.sys = root.clone();
    }
    options
}

/// The `--pin`s as (role, CPUs), each list checked.
pub(super) fn pins(texts: &[String]) -> anyhow::Result<Vec<(String, Vec<usize>)>> {
    texts
        .iter()
        .map(|text| {
            let (role, cpus) = framelab::services::split_pin(text);
            Ok((role, framelab::bench::cpus::parse_cpu_list(cpus)?))
        })
        .collect()
}

/// The CPUs `--pin` gives the command (`--pin CPUS` or `--pin command=CPUS`).
pub(super) fn command_cpus(texts: &[String]) -> anyhow::Result<Vec<usize>> {
    let pins = pins(texts)?;
    let mut command = pins
        .iter()
        .filter(|(role, _)| role == framelab::services::spec::COMMAND_ROLE);
    let cpus = command.next().map(|(_, c)| c.clone()).unwrap_or_default();
    if command.next().is_some() {
        anyhow::bail!("--pin: the command is pinned twice; give one --pin CPUS");
    }
    Ok(cpus)
}

/// `--pin` of the command as given (`--pin CPUS` or `--pin command=CPUS`), for the bench.
pub(super) fn command_pin(texts: &[String]) -> anyhow::Result<Option<String>> {
    // A variant's own (`--pin v2:CPUS`) is the bench's to pick, run by run.
    let texts: Vec<String> = (texts.iter())
        .filter(|t| framelab::services::split_variant(t).is_none())
        .cloned()
        .collect();
    command_cpus(&texts)?;
    Ok(texts
        .iter()
        .map(|t| framelab::services::split_pin(t))
        .find(|(role, _)| role == framelab::services::spec::COMMAND_ROLE)
        .map(|(_, cpus)| cpus.to_owned()))
}

/// The services of `run` and `demo` (one command: no `VARIANT:` prefixes).
pub(super) fn service_specs(
    args: &ServiceArgs,
    shell: bool,
) -> anyhow::Result<Vec<framelab::services::ServiceSpec>> {
    use framelab::services::refuse_variant_prefix;
    refuse_variant_prefix("--service", &args.services)?;
    refuse_variant_prefix("--ready", &args.ready)?;
    refuse_variant_prefix("--pin", &args.pins)?;
    framelab::services::parse_services(&args.services, &args.ready, &pins(&args.pins)?, shell)
}

/// The services of one variant of a bench: those for all, with its own
/// (`--service VARIANT:NAME=CMD`, `--ready`, `--pin` likewise) in their place.
pub(super) fn variant_service_specs(
    args: &ServiceArgs,
    variant: &str,
    shell: bool,
) -> anyhow::Result<Vec<framelab::services::ServiceSpec>> {
    use framelab::services::for_variant;
    let pin_texts = for_variant(&args.pins, variant, true);
    framelab::services::parse_services(
        &for_variant(&args.services, variant, false),
        &for_variant(&args.ready, variant, false),
        &pins(&pin_texts)?,
        shell,
    )
    .map_err(|e| anyhow::anyhow!("variant {variant}: {e:#}"))
}

pub(super) fn profile_options(flag: &ProfileFlag) -> Option<framelab::profile::ProfileOptions> {
    flag.profile.map(|hz| framelab::profile::ProfileOptions {
        hz,
        call_graph: flag.call_graph.into(),
    })
}

/// `--history STORE` adds the finished run file's runs to the store: with `-o /dev/null`
/// no file is kept, so the run would be measured and silently left out of the history.
pub(super) fn refuse_history_without_file(
    history: &super::history::HistoryFlag,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if let (Some(store), Some(file)) = (&history.history, output) {
        // A store named as the run file was created there, and the run then refused.
        let store_path = std::path::Path::new(store);
        if std::path::absolute(store_path).ok() == std::path::absolute(file).ok() {
            anyhow::bail!(
                "--history {} is the run file (-o): a history store is a file of its own",
                framelab::display::text(store)
            );
        }
        let what = format!(
            "--history {} adds the run file's runs to the store",
            framelab::display::text(store)
        );
        refuse_with_no_file(file, &what, "--history")?;
    }
    Ok(())
}

/// `--profile` stores the sampled stacks in the run file, where `framelab profile` reads
/// them: with `-o /dev/null` they would be taken, symbolized and thrown away.
pub(super) fn refuse_profile_without_file(
    flag: &ProfileFlag,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    match (flag.profile, output) {
        (Some(_), Some(file)) => refuse_with_no_file(
            file,
            "--profile stores the sampled stacks in the run file (framelab profile reads them \
             there)",
            "--profile",
        ),
        _ => Ok(()),
    }
}

/// `--keep-output` keeps the command's output in the run file, and nowhere else: with
/// `-o /dev/null` it would be captured and thrown away.
pub(super) fn refuse_keep_output_without_file(
    keep_output: bool,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    match (keep_output, output) {
        (true, Some(file)) => refuse_with_no_file(
            file,
            "--keep-output keeps the command's output in the run file",
            "--keep-output",
        ),
        _ => Ok(()),
    }
}

/// Refuses `flag`, which needs the run file (`what` it keeps there), where `-o FILE` keeps
/// no file (/dev/null).
fn refuse_with_no_file(file: &std::path::Path, what: &str, flag: &str) -> anyhow::Result<()> {
    if let Ok(framelab::destination::Target::Null(_)) = framelab::destination::Target::resolve(file)
    {
        return Err(framelab::usage::UsageError(format!(
            "{what}, and -o {} keeps no file: give -o FILE, or drop {flag}",
            file.display()
        ))
        .into());
    }
    Ok(())
}

/// `run`/`demo -o FILE` where FILE is a bench's experiment: the run would join no variant
/// and never be compared (compare called it "a bench stopped mid-run").
pub(super) fn refuse_experiment_file(output: Option<&std::path::Path>) -> anyhow::Result<()> {
    let Some(file) = output.filter(|f| f.is_file()) else {
        return Ok(());
    };
    if let Ok(Some(_)) = framelab::store::load_experiment(file) {
        anyhow::bail!(
            "{} holds a bench's experiment: a run added to it would belong to no variant and \
             never be compared; choose another -o (or add runs with framelab bench --resume)",
            file.display()
        );
    }
    Ok(())
}
