//! `framelab import`: another tool's trace or log into a run file, then its report.

use std::path::PathBuf;

use clap::Args;
use framelab::import::write::{import_into_file, ImportRequest, Imported};
use framelab::render::Format;
use framelab::{analyze, report, session};

use super::format::RunReportFormat;
use super::output::{emit, use_color, UNKEPT};
use super::{default_signals, Outcome};
use crate::cli::{limits, TargetArgs};

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Files to read (gzip-compressed is fine); several make one run
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The files' format (default: told from the content)
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub input_format: Option<crate::cli::choices::ImportFormat>,
    /// Run file to write (default: the first file's name with .framelab)
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Name of the run, shown in reports (default: the first file's name)
    #[arg(long)]
    pub name: Option<String>,
    /// A piece of the run's configuration, KEY=VALUE (repeatable): kept in the run file,
    /// shown in the report's header, carried into history
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The argument holding each slice's frame id (Chrome args, Perfetto debug annotations)
    #[arg(long, value_name = "ARG", conflicts_with = "frame_regex")]
    pub frame_arg: Option<String>,
    /// Regular expression on slice names: its first group is the frame id (a group named `stage` the stage)
    #[arg(long, value_name = "REGEX")]
    pub frame_regex: Option<String>,
    /// Pair instant events START and END with the same key into spans (stage START:END); repeatable
    #[arg(long = "pair", value_name = "START:END")]
    pub pairs: Vec<String>,
    /// The argument or column holding an event's key, for --pair
    #[arg(long, value_name = "FIELD")]
    pub key: Option<String>,
    /// Count malformed lines or records and go on, instead of stopping at the first
    #[arg(long)]
    pub skip_bad: bool,
    /// Generic CSV/JSONL columns: FIELD=COLUMN, FIELD one of start, end, dur, time, name, frame, thread, pid, key (repeatable)
    #[arg(long = "map", value_name = "FIELD=COLUMN")]
    pub map: Vec<String>,
    /// Unit of bare time numbers in generic CSV/JSONL (default: ns)
    #[arg(long, value_enum)]
    pub time_unit: Option<crate::cli::choices::TimeUnit>,
    /// Keep only this process (PresentMon Application, a trace's process name)
    #[arg(long, value_name = "NAME")]
    pub process: Option<String>,
    /// The most one input may hold once decompressed (1MiB to 1TiB, e.g. 4GiB): the import
    /// stops with an error past it, so a FIFO or /dev/zero cannot fill the memory
    #[arg(long, value_parser = limits::input_size, default_value = limits::DEFAULT_MAX_INPUT, value_name = "SIZE")]
    pub max_input: u64,
    /// A gzip input may decompress to at most N times its size, past 64MiB (1 to 100000): a
    /// guard against decompression bombs
    #[arg(long, value_parser = limits::ratio, default_value = "200", value_name = "N")]
    pub max_ratio: u64,
    /// Report format printed after importing
    #[arg(
        long = "report",
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub report_format: RunReportFormat,
}

/// An import as asked, checked: what to read and how, where the run goes, what it is
/// called; nothing is read before every refusal has come.
pub(super) struct ImportPlan {
    request: ImportRequest,
    /// The run file as given (`-o`, or named after the first input), as messages say it.
    output: PathBuf,
    report_format: Format,
}

impl TryFrom<ImportArgs> for ImportPlan {
    type Error = anyhow::Error;

    fn try_from(args: ImportArgs) -> anyhow::Result<ImportPlan> {
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
            pairs.push(PairSpec::parse(p).map_err(framelab::usage::UsageError)?);
        }
        let mut map = Vec::new();
        for m in &args.map {
            let Some((field, column)) = m.split_once('=') else {
                framelab::bail_usage!(
                    "--map {m:?} is not FIELD=COLUMN; e.g. --map start=ts_us --map name=stage"
                );
            };
            map.push((field.trim().to_owned(), column.trim().to_owned()));
        }
        import::generic::check_map(&map)?;
        let opts = ImportOptions {
            frame_arg: args.frame_arg.clone(),
            frame_regex,
            pairs,
            key: args.key.clone(),
            skip_bad: args.skip_bad,
            map,
            time_unit: args.time_unit.map(Into::into).unwrap_or_default(),
            process: args.process.clone(),
            time_unit_given: args.time_unit.is_some(),
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
        super::options::refuse_experiment_file(Some(&given_output))?;
        refuse_repeated_inputs(&args.files)?;
        let run_file = framelab::destination::RunFile::resolve(&given_output)?;
        let target = framelab::destination::Target::resolve(&given_output)?;
        for input in &args.files {
            target.refuse_overwriting(&given_output, input)?;
        }
        let meta = framelab::model::RunMeta {
            name: args.name.clone().unwrap_or_else(|| file_name.clone()),
            tags: framelab::tags::parse_tags(&args.tags)?,
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
        let limits = import::InputLimits {
            max_bytes: args.max_input,
            max_ratio: args.max_ratio,
        };
        Ok(ImportPlan {
            request: ImportRequest {
                files: args.files,
                format: args.input_format.map(Into::into),
                options: opts,
                meta,
                limits,
                name: args.name,
                run_file,
            },
            output: given_output,
            report_format: args.report_format.into(),
        })
    }
}

pub(super) fn run(args: ImportArgs) -> anyhow::Result<Outcome> {
    let ImportPlan {
        request,
        output,
        report_format,
    } = ImportPlan::try_from(args)?;
    // Ctrl-C while the run is written waits for the write; the exit status still says it
    // was interrupted.
    let imported = import_into_file(request, session::catch_interrupts)?;
    default_signals();
    let Imported {
        run,
        run_file,
        runs_before,
    } = &imported;
    let run_id = run.meta.id;
    if session::interrupts() > 0 {
        eprintln!(
            "framelab: interrupted; the import was written whole to {} (run {run_id})",
            output.display()
        );
        return Ok(Outcome::Interrupted);
    }
    // The run in memory is what was written: report it without reading it back.
    emit(&report::render(
        &analyze::analyze(run),
        report_format,
        use_color(),
    )?)?;
    let info = run
        .import
        .as_ref()
        .expect("an imported run has its import record");
    let what = imported.contents();
    if run_file.kept() {
        eprintln!(
            "framelab: imported {what} ({}) into {} run {run_id} (framelab report {})",
            info.format,
            output.display(),
            output.display()
        );
        if *runs_before > 0 {
            eprintln!(
                "framelab: {} already held {}: this import was appended as run {run_id}, \
                 beside them (give -o another file to keep an import apart)",
                output.display(),
                framelab::units::plural(*runs_before as u64, "run", "runs")
            );
        }
    } else {
        eprintln!("framelab: imported {what} ({})", info.format);
        eprintln!("{UNKEPT}");
    }
    if info.skipped > 0 {
        eprintln!(
            "framelab: skipped {} bad records; the first: {}",
            info.skipped,
            framelab::display::text(info.first_skipped.as_deref().unwrap_or("?"))
        );
    }
    Ok(Outcome::Done)
}

/// One file named twice (or by two names) would be read twice into the run: every frame
/// counted twice.
fn refuse_repeated_inputs(files: &[PathBuf]) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), &PathBuf)> = Vec::new();
    for file in files {
        let Ok(meta) = std::fs::metadata(file) else {
            continue;
        };
        // A FIFO or /dev/stdin is read once whatever its name; only regular files repeat.
        if !meta.is_file() {
            continue;
        }
        let id = (meta.dev(), meta.ino());
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            anyhow::bail!(
                "{} is given twice ({} and {}): its frames would be imported twice; name each \
                 file once",
                first.display(),
                first.display(),
                file.display()
            );
        }
        seen.push((id, file));
    }
    Ok(())
}
