mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};
use framelab::model::EndReason;
use framelab::report::{self, Format};
use framelab::session::{self, RunOptions};
use framelab::{analyze, compare, demo, store, timers};

/// framelab failed (bad input, unreadable file): 1. Usage errors: 2 (clap).
/// The measured command crashed, failed, broke the SDK's limits, or did not print a
/// `--metric` asked for, or the recording is incomplete (its session was removed, the
/// program damaged a ring): 3. Interrupted by Ctrl-C: 130.
const EXIT_COMMAND_FAILED: u8 = 3;
const EXIT_INTERRUPTED: u8 = 130;

/// Said when `-o` named the null device.
const UNKEPT: &str = "framelab: -o is the null device: measured and reported, and no file was kept";

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => code,
        // The reader of the output went away (`| head`): what it wanted it has.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// Writes what a command prints to standard output; an error (a closed pipe) is returned,
/// never a panic as `print!` would.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The whole cause chain on one line: names and text from a file or a program in it
/// have their control characters escaped and a long message is cut (`display`).
fn one_line(error: &anyhow::Error) -> String {
    let text = format!("{error:#}").replace('\n', " ");
    framelab::display::text(&text).into_owned()
}

fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(args) => {
            let opts = RunOptions {
                command: shell_command(args.command, args.from_output.shell),
                metrics: framelab::output::parse_metrics(&args.from_output.metrics)?,
                keep_output: args.from_output.keep_output,
                services: service_specs(&args.services, args.from_output.shell)?,
                ready_timeout: args.services.ready_timeout,
                cpus: command_cpus(&args.services.pins)?,
                fps: args.target.fps,
                budget: args.target.budget,
                warmup: args.warmup,
                warmup_from: args.warmup_mode.warmup_from,
                warmup_frames: args.warmup_mode.warmup_frames,
                duration: args.duration,
                name: args.name,
                output: args.output,
                watch_pids: args.watch_pids,
                watch_names: args.watch_names,
                frames: args.frames,
                grace: args.grace,
                ring_records: args.ring_records,
                session_access: session_access(&args.share_session, &args.session_user)?,
                sampling: sampling_options(&args.sampling),
                profile: profile_options(&args.profile),
                ..RunOptions::default()
            };
            let opts = with_live(opts, &args.live)?;
            let history = framelab::history::cli::HistoryTarget::check(&args.history)?;
            run_and_report(&opts, args.format, &args.html, history.as_ref())
        }
        Command::Profile(args) => {
            framelab::profile::command::run(&framelab::profile::command::ProfileCommand {
                runs: args.runs,
                run_id: args.run_id,
                filters: framelab::profile::summary::Filters {
                    stage: args.stage,
                    thread: args.thread,
                    process: args.process,
                    late_only: args.frame_set == cli::FrameSet::Late,
                },
                format: args.format,
                top: args.top,
                output: args.output,
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Report(args) => report_command(args),
        Command::Bench(args) => bench(args),
        Command::Compare(args) => compare(args),
        Command::Demo(args) => {
            let exe = std::env::current_exe()?.to_string_lossy().into_owned();
            let opts = RunOptions {
                command: vec![
                    exe,
                    "demo-pipeline".into(),
                    "--fps".into(),
                    args.fps.to_string(),
                    "--depth".into(),
                    args.depth.to_string(),
                    "--pacer".into(),
                    args.pacer.name().into(),
                ],
                fps: Some(args.fps),
                warmup: if args.warmup_mode.warmup_frames.is_some() {
                    std::time::Duration::ZERO
                } else {
                    args.warmup
                },
                warmup_from: args.warmup_mode.warmup_from,
                warmup_frames: args.warmup_mode.warmup_frames,
                duration: Some(args.duration),
                name: Some(args.name.unwrap_or_else(|| {
                    format!("demo (depth {}, {} pacer)", args.depth, args.pacer.name())
                })),
                output: args.output,
                grace: std::time::Duration::from_secs(2),
                sampling: sampling_options(&args.sampling),
                profile: profile_options(&args.profile),
                ..RunOptions::default()
            };
            let opts = with_live(opts, &args.live)?;
            demo::DemoOptions {
                fps: args.fps,
                depth: args.depth,
                pacer: args.pacer,
                ..Default::default()
            }
            .validate()?;
            run_and_report(&opts, args.format, &args.html, None)
        }
        Command::Timers(args) => {
            let opts = timers::TimersOptions {
                duration: args.duration,
                intervals: args.interval,
                need: args.need,
            };
            opts.validate()?;
            let plan = timers::Plan::new(&opts, timers::fifo_status());
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
            emit(&timers::render::render(&report, args.format, use_color()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Import(args) => import(args),
        Command::Export(args) => {
            let run = store::load_run(&args.run, args.run_id)?;
            framelab::export::export_to_path(&run, args.format, &args.output, Some(&args.run))?;
            if args.output.as_os_str() != "-" {
                eprintln!(
                    "framelab: wrote {} spans of run {} to {}",
                    run.spans.len(),
                    run.meta.id,
                    args.output.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::History(args) => {
            framelab::history::cli::run(args)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Hist(args) => {
            let mut run = store::open_run(&args.run, args.run_id)?;
            let opts = framelab::hist::HistOptions::from_args(
                args.stage,
                args.pair.as_deref(),
                args.linear.get(),
                args.by,
            )?;
            if opts.pair.is_some() {
                run.head.events = run.events()?;
            }
            emit(&framelab::hist::render_from(&run.head, &run, &opts)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Whatif(args) => {
            let run = store::load_run(&args.run, args.run_id)?;
            let analysis = analyze::analyze(&run);
            let changes = framelab::whatif::Changes {
                depth: args.depth,
                scales: args.stage_scale,
                moves: args.moves,
                unpaced: args.unpaced,
            };
            let prediction = framelab::whatif::whatif(&run, &analysis, &changes)?;
            emit(&framelab::whatif::render(&prediction, args.format))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sources(args) => {
            let opts = sampling_options(&args.sampling);
            let mut pids = args.pids.clone();
            pids.sort_unstable();
            let tree = framelab::sample::ProcessTree::fixed(
                framelab::session::procfs::Procfs::system(),
                pids,
            );
            let count = u32::try_from(args.count).unwrap_or(u32::MAX);
            let (sources, series, samples) = framelab::sample::read_once(&opts, tree, count);
            emit(&report::sources(&sources, &series, &samples, opts.every))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::DemoPipeline(args) => {
            let opts = demo::DemoOptions {
                fps: args.fps,
                depth: args.depth,
                duration: args.duration,
                pacer: args.pacer,
                ..Default::default()
            };
            demo::run_pipeline(&opts)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Once the run file is final, Ctrl-C, SIGTERM and SIGHUP kill framelab again: the report
/// or comparison that follows (seconds for a big run) must stay interruptible, and
/// nothing is left to save.
fn default_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: restores the default disposition; no handler runs.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

fn run_and_report(
    opts: &RunOptions,
    format: Format,
    html: &cli::HtmlArgs,
    history: Option<&framelab::history::cli::HistoryTarget>,
) -> anyhow::Result<ExitCode> {
    // A page that cannot be written is refused now, not after the run.
    if let Some(file) = &html.html {
        framelab::destination::Target::resolve(file)?;
    }
    let outcome = session::run(opts)?;
    default_signals();
    let (analysis, run) = match &html.html {
        Some(file) => {
            let stored = store::open_run(&outcome.path, Some(outcome.run_id))?;
            let (page, analysis) = report::html::run_html(&stored.head, &stored)?;
            report::html::write(file, &page, Some(&outcome.path))?;
            (analysis, stored.head)
        }
        None => analyze_stored(&outcome.path, Some(outcome.run_id))?,
    };
    emit(&report::render(&analysis, format, use_color()))?;
    if let Some(file) = &html.html {
        emit(&html_line(file, format))?;
        written(file, "the HTML report", html.open);
    }
    if outcome.file.kept() {
        eprintln!(
            "framelab: run file {} (framelab report {})",
            outcome.path.display(),
            outcome.path.display()
        );
    } else {
        eprintln!("{UNKEPT}");
    }
    if let (Some(history), true) = (history, outcome.file.kept()) {
        history.add(&outcome.path)?;
    }
    if run.meta.names_refused > 0 {
        eprintln!(
            "framelab: {} names were refused: a process may intern {} names; create Stage/Counter/Event names once, outside the frame loop",
            run.meta.names_refused,
            framelab_probe::wire::MAX_NAMES
        );
    }
    let unread = outcome.metrics.iter().filter(|m| m.value.is_none()).count();
    if unread > 0 {
        eprintln!(
            "framelab: {unread} metric{} could not be read (the report's notes say why)",
            if unread == 1 { "" } else { "s" }
        );
    }
    // A recording the program damaged, or whose session was removed, is incomplete.
    let incomplete =
        run.meta.session.session_lost_ns.is_some() || run.meta.session.corrupt_rings > 0;
    let failed = run.meta.names_refused > 0
        || incomplete
        || unread > 0
        || outcome
            .exit
            .as_ref()
            .is_some_and(|e| e.crashed || e.code.is_some_and(|c| c != 0));
    Ok(if outcome.end_reason == EndReason::Interrupted {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if failed {
        ExitCode::from(EXIT_COMMAND_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

fn import(args: cli::ImportArgs) -> anyhow::Result<ExitCode> {
    use framelab::analyze::pair::PairSpec;
    use framelab::import::{self, ImportOptions};
    let frame_regex = match &args.frame_regex {
        Some(re) => Some(regex::Regex::new(re).map_err(|e| {
            anyhow::anyhow!("--frame-regex {re:?} is not a regular expression: {e}")
        })?),
        None => None,
    };
    let mut pairs = Vec::new();
    for p in &args.pairs {
        pairs.push(PairSpec::parse(p).map_err(anyhow::Error::msg)?);
    }
    let mut map = Vec::new();
    for m in &args.map {
        let Some((field, column)) = m.split_once('=') else {
            anyhow::bail!(
                "--map {m:?} is not FIELD=COLUMN; e.g. --map start=ts_us --map name=stage"
            );
        };
        map.push((field.trim().to_owned(), column.trim().to_owned()));
    }
    let opts = ImportOptions {
        frame_arg: args.frame_arg.clone(),
        frame_regex,
        pairs,
        key: args.key.clone(),
        skip_bad: args.skip_bad,
        map,
        time_unit: args.time_unit,
        process: args.process.clone(),
    };
    let first = &args.files[0];
    let file_name = first.file_name().map_or_else(
        || first.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let given_output = args.output.clone().unwrap_or_else(|| {
        let stem = file_name.trim_end_matches(".gz");
        let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
        std::path::PathBuf::from(format!("{stem}.framelab"))
    });
    // Before reading anything: a long import must not end in a refusal.
    let run_file = framelab::destination::RunFile::resolve(&given_output)?;
    let target = framelab::destination::Target::resolve(&given_output)?;
    for input in &args.files {
        target.refuse_overwriting(&given_output, input)?;
    }
    let meta = framelab::model::RunMeta {
        name: args.name.clone().unwrap_or_else(|| file_name.clone()),
        started_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        framelab_version: env!("CARGO_PKG_VERSION").into(),
        target_fps: args.target.fps,
        budget_ns: args
            .target
            .budget
            .map(|b| b.as_nanos() as i64)
            .or_else(|| args.target.fps.map(|f| (1e9 / f).round() as i64)),
        ..Default::default()
    };
    let (target_fps, budget_ns) = (meta.target_fps, meta.budget_ns);
    let limits = import::InputLimits {
        max_bytes: args.max_input,
        max_ratio: args.max_ratio,
    };
    let mut run = import::import_files(&args.files, args.input_format, opts, meta, limits)?;
    // A framelab export gives back its run's name and target; those given here still win.
    if let Some(name) = &args.name {
        run.meta.name = name.clone();
    }
    if target_fps.is_some() || budget_ns.is_some() {
        (run.meta.target_fps, run.meta.budget_ns) = (target_fps, budget_ns);
    }
    // Ctrl-C while the run is written waits for the write (seconds at most), so the file
    // never holds half an import; the exit status still says it was interrupted.
    session::catch_interrupts();
    // `-o /dev/null` keeps nothing: the report comes from memory, so nothing is written.
    let run_id = if run_file.kept() {
        store::write_run(run_file.path(), &run)?
    } else {
        1
    };
    default_signals();
    let output = given_output;
    if session::interrupts() > 0 {
        eprintln!(
            "framelab: interrupted; the import was written whole to {} (run {run_id})",
            output.display()
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    // The run in memory is what was written: report it without reading it back.
    run.meta.id = run_id;
    emit(&report::render(
        &analyze::analyze(&run),
        args.report_format,
        use_color(),
    ))?;
    let info = run
        .import
        .as_ref()
        .expect("an imported run has its import record");
    let mut what = vec![format!("{} spans", run.spans.len())];
    for (n, label) in [
        (run.events.len(), "events"),
        (run.telemetry.samples.len(), "samples"),
        (run.histograms.len(), "histograms"),
    ] {
        if n > 0 {
            what.push(format!("{n} {label}"));
        }
    }
    if run_file.kept() {
        eprintln!(
            "framelab: imported {} ({}) into {} run {run_id} (framelab report {})",
            what.join(", "),
            info.format,
            output.display(),
            output.display()
        );
    } else {
        eprintln!("framelab: imported {} ({})", what.join(", "), info.format);
        eprintln!("{UNKEPT}");
    }
    if info.skipped > 0 {
        eprintln!(
            "framelab: skipped {} bad records; the first: {}",
            info.skipped,
            framelab::display::text(info.first_skipped.as_deref().unwrap_or("?"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The command as given, or `sh -c 'WORDS'` with `--shell` (the words joined by spaces).
fn shell_command(words: Vec<String>, shell: bool) -> Vec<String> {
    if shell {
        vec!["sh".into(), "-c".into(), words.join(" ")]
    } else {
        words
    }
}

/// `--live` and `--live-linear` set on `opts`; the progress line is left off with them
/// (the live histograms and the progress line would overwrite each other).
fn with_live(mut opts: RunOptions, args: &cli::LiveArgs) -> anyhow::Result<RunOptions> {
    opts.live = args.live;
    opts.live_linear = framelab::hist::LinearArgs {
        step: args.live_linear,
        ..Default::default()
    }
    .spec()
    .map_err(|e| anyhow::anyhow!("{}", e.to_string().replace("--linear", "--live-linear")))?;
    opts.progress = std::io::stderr().is_terminal() && opts.live.is_none();
    Ok(opts)
}

/// Who may use the session: `--share-session GROUP`, `--session-user USER`, or only us.
fn session_access(
    group: &Option<String>,
    user: &Option<String>,
) -> anyhow::Result<session::SessionAccess> {
    Ok(match (group, user) {
        (Some(group), _) => session::SessionAccess::group(group)?,
        (None, Some(user)) => session::SessionAccess::user(user)?,
        (None, None) => session::SessionAccess::Private,
    })
}

fn sampling_options(args: &cli::SamplingArgs) -> framelab::sample::SamplingOptions {
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

/// `framelab report`: the run's report in a format, printed or written to `-o`.
fn report_command(args: cli::ReportArgs) -> anyhow::Result<ExitCode> {
    use cli::ReportFormat;
    let format = match args.format {
        ReportFormat::Text => Some(Format::Text),
        ReportFormat::Markdown => Some(Format::Markdown),
        ReportFormat::Json => Some(Format::Json),
        ReportFormat::Html => None,
    };
    let several = args.run_id.is_none() && store::list_runs(&args.run)?.len() > 1;
    let text = match format {
        Some(format) if several => report_runs(&args.run, format)?,
        Some(format) => {
            let color = use_color() && args.output.is_none();
            report::render(&analyze_stored(&args.run, args.run_id)?.0, format, color)
        }
        None if several => anyhow::bail!(
            "{} holds {} runs: give --run-id N for the HTML report of one (framelab report {} lists them)",
            args.run.display(),
            store::list_runs(&args.run)?.len(),
            args.run.display()
        ),
        None => {
            let stored = store::open_run(&args.run, args.run_id)?;
            report::html::run_html(&stored.head, &stored)?.0
        }
    };
    match &args.output {
        Some(file) => {
            report::html::write(file, &text, Some(&args.run))?;
            let what = if format.is_none() {
                "the HTML report"
            } else {
                "the report"
            };
            written(file, what, args.open);
        }
        // A page through `destination`: a closed pipe is an error line, not a panic.
        None if format.is_none() => report::html::write(std::path::Path::new("-"), &text, None)?,
        None => emit(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The report's line saying where the HTML page is.
fn html_line(file: &std::path::Path, format: Format) -> String {
    let shown = framelab::display::text(&file.display().to_string()).into_owned();
    match format {
        Format::Text => format!("\n  html      {shown}\n"),
        Format::Markdown => format!("\n- **html** {}\n", framelab::display::markdown(&shown)),
        // JSON stays one document; standard error says where the page is.
        Format::Json => String::new(),
    }
}

/// Says on standard error that `what` was written to `file`, and opens it if asked.
fn written(file: &std::path::Path, what: &str, open: bool) {
    let shown = framelab::display::text(&file.display().to_string()).into_owned();
    eprintln!("framelab: wrote {what} to {shown}");
    if open {
        match report::html::open(file) {
            Ok(()) => eprintln!("framelab: opened {shown} in the browser"),
            Err(why) => eprintln!("framelab: could not open it: {why}"),
        }
    }
}

/// One line per run of a file that holds several: which runs there are and how to see one.
fn report_runs(path: &std::path::Path, format: Format) -> anyhow::Result<String> {
    let experiment = store::load_experiment(path)?;
    let lines = store::list_runs(path)?
        .iter()
        .map(|meta| {
            let (analysis, _) = analyze_stored(path, Some(meta.id))?;
            Ok(report::runs::RunLine::new(&analysis, experiment.as_ref()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(report::runs::render(path, &lines, format, use_color()))
}

/// The analysis of a run of a file, its spans streamed into columns rather than loaded
/// (a third of the memory), and the run without its spans.
fn analyze_stored(
    path: &std::path::Path,
    run_id: Option<i64>,
) -> anyhow::Result<(analyze::Analysis, framelab::model::Run)> {
    let run = store::open_run(path, run_id)?;
    let analysis = analyze::compact::analyze_from(&run.head, &run)?;
    Ok((analysis, run.head))
}

/// The `--pin`s as (role, CPUs), each list checked.
fn pins(texts: &[String]) -> anyhow::Result<Vec<(String, Vec<usize>)>> {
    texts
        .iter()
        .map(|text| {
            let (role, cpus) = framelab::services::split_pin(text);
            Ok((role, framelab::bench::cpus::parse_cpu_list(cpus)?))
        })
        .collect()
}

/// The CPUs `--pin` gives the command (`--pin CPUS` or `--pin command=CPUS`).
fn command_cpus(texts: &[String]) -> anyhow::Result<Vec<usize>> {
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
fn command_pin(texts: &[String]) -> anyhow::Result<Option<String>> {
    command_cpus(texts)?;
    Ok(texts
        .iter()
        .map(|t| framelab::services::split_pin(t))
        .find(|(role, _)| role == framelab::services::spec::COMMAND_ROLE)
        .map(|(_, cpus)| cpus.to_owned()))
}

fn service_specs(
    args: &cli::ServiceArgs,
    shell: bool,
) -> anyhow::Result<Vec<framelab::services::ServiceSpec>> {
    framelab::services::parse_services(&args.services, &args.ready, &pins(&args.pins)?, shell)
}

/// Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn compare_options(settings: &cli::CompareSettings, show: &[String]) -> compare::CompareOptions {
    compare::CompareOptions {
        baseline: settings.baseline.clone(),
        baseline_values: settings.baseline_values.clone(),
        metrics: show.to_vec(),
        noise: settings.noise,
        resamples: settings.resamples,
        ..compare::CompareOptions::default()
    }
}

fn compare(args: cli::CompareArgs) -> anyhow::Result<ExitCode> {
    let mut sources = Vec::new();
    for file in &args.files {
        sources.push(compare::parse_source(file)?);
    }
    for named in &args.variants {
        sources.push(compare::parse_named_source(named)?);
    }
    let mut show = args.settings.show.clone();
    show.extend(args.metric_alias.iter().cloned());
    if let Some(definition) = args.metric_alias.iter().find(|m| m.contains('=')) {
        anyhow::bail!(
            "--metric {definition}: compare reads the metrics the runs recorded; define one when \
             running (framelab run/bench --metric NAME:higher=REGEX), and pick what to show with --show NAME"
        );
    }
    check_export_paths(&args.settings)?;
    let options = compare_options(&args.settings, &show);
    let comparison = show_comparison(
        &sources,
        &options,
        args.settings.format,
        args.output.as_deref(),
        args.open,
    )?;
    export_comparison(&comparison, &args.settings)?;
    Ok(
        if args.fail_on_regression && compare::any_regression(&comparison) {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// Compares and shows the comparison in `format`: printed, or written to `output`.
fn show_comparison(
    sources: &[compare::Source],
    options: &compare::CompareOptions,
    format: compare::CompareFormat,
    output: Option<&std::path::Path>,
    open: bool,
) -> anyhow::Result<compare::Comparison> {
    let (comparison, text) = if format == compare::CompareFormat::Html {
        compare::compare_html(sources, options)?
    } else {
        let comparison = compare::compare(sources, options)?;
        let text = compare::render(&comparison, format);
        (comparison, text)
    };
    match output {
        Some(file) => {
            report::html::write(file, &text, None)?;
            written(file, "the comparison", open);
        }
        None if format == compare::CompareFormat::Html => {
            report::html::write(std::path::Path::new("-"), &text, None)?
        }
        None => emit(&text)?,
    }
    Ok(comparison)
}

/// `--export-json/-csv/-markdown FILE`: the comparison in each format asked, to files.
fn export_comparison(
    comparison: &compare::Comparison,
    settings: &cli::CompareSettings,
) -> anyhow::Result<()> {
    use compare::CompareFormat;
    for (file, format) in [
        (&settings.export_json, CompareFormat::Json),
        (&settings.export_csv, CompareFormat::Csv),
        (&settings.export_markdown, CompareFormat::Markdown),
    ] {
        let Some(file) = file else { continue };
        std::fs::write(file, compare::render(comparison, format)).map_err(|e| {
            anyhow::anyhow!(
                "cannot write the comparison to {}: {e}; choose a writable path",
                file.display()
            )
        })?;
        eprintln!("framelab: wrote the comparison to {}", file.display());
    }
    Ok(())
}

fn bench(args: Box<cli::BenchArgs>) -> anyhow::Result<ExitCode> {
    let spec_given =
        !args.variants.is_empty() || !args.command.is_empty() || !args.params.is_empty();
    let spec = if spec_given || !args.resume {
        Some(bench_spec(&args)?)
    } else {
        None
    };
    // Refused before the first run, not after the last.
    check_export_paths(&args.compare)?;
    let history = framelab::history::cli::HistoryTarget::check(&args.history)?;
    let outcome = framelab::bench::run(&framelab::bench::BenchOptions {
        spec,
        output: args.output.clone(),
        resume: args.resume,
        progress: std::io::stderr().is_terminal(),
    })?;
    default_signals();
    let path = outcome.path.display();
    for failure in &outcome.cleanup_failures {
        eprintln!("error: {failure}");
    }
    if outcome.stopped && !outcome.file.kept() {
        eprintln!(
            "framelab: stopped after {} of {} runs; -o /dev/null kept no experiment file to resume",
            outcome.finished_runs, outcome.total_runs
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    if outcome.stopped {
        eprintln!(
            "framelab: stopped after {} of {} runs; every finished run is in {path}: continue with framelab bench --resume -o {path}",
            outcome.finished_runs, outcome.total_runs
        );
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    // Before the comparison, which may refuse (one variant) yet the runs are good.
    if let (Some(history), true) = (&history, outcome.file.kept()) {
        history.add(&outcome.path)?;
    }
    let sources = [compare::parse_source(&outcome.path.to_string_lossy())?];
    let options = compare_options(&args.compare, &args.compare.show);
    let comparison = show_comparison(&sources, &options, args.compare.format, None, false)?;
    export_comparison(&comparison, &args.compare)?;
    if outcome.file.kept() {
        eprintln!("framelab: experiment file {path} (framelab compare {path} --format markdown)");
    } else {
        eprintln!("{UNKEPT}");
    }
    if outcome.warmup_runs > 0 {
        eprintln!(
            "framelab: {} warmup run{} done first (kept in the file as warmup, never compared)",
            outcome.warmup_runs,
            if outcome.warmup_runs == 1 { "" } else { "s" }
        );
    }
    if outcome.unread_metrics > 0 {
        eprintln!(
            "framelab: a --metric could not be read in {} run{} (kept; excluded from that metric; the comparison lists why)",
            outcome.unread_metrics,
            if outcome.unread_metrics == 1 { "" } else { "s" }
        );
    }
    if outcome.failed_runs > 0 {
        eprintln!(
            "framelab: {} run{} failed (kept in the file, excluded from the statistics)",
            outcome.failed_runs,
            if outcome.failed_runs == 1 { "" } else { "s" }
        );
    }
    Ok(if outcome.failed_runs > 0 || outcome.unread_metrics > 0 {
        ExitCode::from(EXIT_COMMAND_FAILED)
    } else if !outcome.cleanup_failures.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Export files must be writable where they are asked: their folder exists.
fn check_export_paths(settings: &cli::CompareSettings) -> anyhow::Result<()> {
    for file in [
        &settings.export_json,
        &settings.export_csv,
        &settings.export_markdown,
    ]
    .into_iter()
    .flatten()
    {
        let parent = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => std::path::Path::new("."),
        };
        if !parent.is_dir() {
            anyhow::bail!(
                "cannot export to {}: {} is not a directory; create it or choose another path",
                file.display(),
                parent.display()
            );
        }
        if file.is_dir() {
            anyhow::bail!(
                "cannot export to {}: it is a directory; name a file inside it",
                file.display()
            );
        }
    }
    Ok(())
}

/// The experiment the command line describes.
fn bench_spec(args: &cli::BenchArgs) -> anyhow::Result<framelab::bench::ExperimentSpec> {
    use framelab::bench::{
        parse_param, parse_shell_variant, parse_variant, shell_argv, ExperimentSpec, RunSettings,
        ServiceSettings, VariantSpec,
    };
    // Checked before the first run: a mistyped service fails now, not at run 1.
    service_specs(&args.services, args.from_output.shell)?;
    let shell = args.from_output.shell;
    let Some(runs) = args.runs else {
        anyhow::bail!("-n RUNS is required: how many runs of each variant (6 or more for verdicts you can trust)");
    };
    let mut variants = Vec::new();
    for v in &args.variants {
        variants.push(if shell {
            parse_shell_variant(v)?
        } else {
            parse_variant(v)?
        });
    }
    if !args.command.is_empty() {
        if !variants.is_empty() {
            anyhow::bail!("give each variant its full command with --variant NAME=CMD, or one command after --, not both");
        }
        let name = std::path::Path::new(&args.command[0])
            .file_name()
            .map_or_else(
                || args.command[0].clone(),
                |n| n.to_string_lossy().into_owned(),
            );
        // With --shell the variant is named after the first program of the script.
        let name = match shell {
            true => shlex::split(&args.command.join(" "))
                .and_then(|words| words.into_iter().next())
                .and_then(|w| {
                    std::path::Path::new(&w)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "sh".to_owned()),
            false => name,
        };
        variants.push(VariantSpec {
            name,
            command: if shell {
                shell_argv(&args.command.join(" "))
            } else {
                args.command.clone()
            },
        });
    }
    let mut params = Vec::new();
    for p in &args.params {
        params.push(parse_param(p)?);
    }
    let ns = |d: std::time::Duration| d.as_nanos() as i64;
    Ok(ExperimentSpec {
        variants,
        params,
        runs,
        order: args.order,
        seed: args.seed,
        pin: command_pin(&args.services.pins)?,
        prepare: args.prepare.clone(),
        warmup_runs: match args.warmup_runs {
            None => 0,
            Some(n) => u32::try_from(n).map_err(|_| {
                anyhow::anyhow!("--warmup-runs {n} is too many; one or a few are enough")
            })?,
        },
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        run: RunSettings {
            fps: args.target.fps,
            budget_ns: args.target.budget.map(ns),
            warmup_ns: ns(args.warmup),
            warmup_from: args.warmup_mode.warmup_from,
            warmup_frames: args.warmup_mode.warmup_frames,
            duration_ns: args.duration.map(ns),
            frames: args.frames,
            watch_pids: args.watch_pids.clone(),
            watch_names: args.watch_names.clone(),
            grace_ns: ns(args.grace),
            ring_records: args.ring_records,
            metrics: framelab::output::parse_metrics(&args.from_output.metrics)?,
            keep_output: args.from_output.keep_output,
            services: ServiceSettings {
                services: args.services.services.clone(),
                ready: args.services.ready.clone(),
                ready_timeout_ns: ns(args.services.ready_timeout),
                pins: args.services.pins.clone(),
                shell,
            },
            profile: profile_options(&args.profile),
        },
    })
}

fn profile_options(flag: &cli::ProfileFlag) -> Option<framelab::profile::ProfileOptions> {
    flag.profile.map(|hz| framelab::profile::ProfileOptions {
        hz,
        call_graph: flag.call_graph,
    })
}
