//! `framelab bench`: every variant × parameter combination, RUNS times, each a fresh
//! `framelab run` (warmup, window, CPU accounting), interleaved, all in one experiment
//! file written as it goes. `--resume` continues an experiment that was stopped.

pub mod cpus;
pub mod fingerprint;
mod finish;
mod progress;
pub mod schedule;
pub mod spec;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::experiment::{ExperimentRun, RunStatus};
use crate::model::{EndReason, ExitInfo};
use crate::session::watch::WatchList;
use crate::session::{
    self, CaptureOptions, LaunchOptions, LiveOptions, RunOptions, ServiceOptions, SessionOptions,
    WindowOptions,
};
use crate::store;
pub use cpus::parse_cpu_list;
pub use finish::{every_run_failed, run_to_end, BenchExit, Finished, Shown};
pub use progress::Progress;
use schedule::{schedule, warmup_schedule, Slot};
pub use spec::{
    parse_param, parse_shell_variant, parse_variant, shell_argv, ExperimentSpec, Order,
    RunSettings, ServiceSettings, VariantSpec,
};

/// What `framelab bench` was asked.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The experiment; `None` with `resume` means "as stored in the file".
    pub spec: Option<ExperimentSpec>,
    pub output: Option<PathBuf>,
    pub resume: bool,
}

/// How the bench ended.
#[derive(Debug)]
pub struct BenchOutcome {
    pub path: PathBuf,
    /// Where the experiment file is kept; with `-o /dev/null`, a temporary one removed on
    /// drop.
    pub file: crate::destination::RunFile,
    pub total_runs: usize,
    pub finished_runs: usize,
    pub failed_runs: usize,
    /// Warmup runs done (and discarded) in this invocation.
    pub warmup_runs: usize,
    /// Measured runs where a `--metric` could not be read (kept; that metric excluded).
    pub unread_metrics: usize,
    /// `--cleanup` commands that failed, one line each.
    pub cleanup_failures: Vec<String>,
    /// Ctrl-C stopped it before every run was done.
    pub stopped: bool,
}

/// What every run of this invocation shares.
struct Bench<'a> {
    spec: &'a ExperimentSpec,
    path: &'a Path,
    experiment_id: i64,
    combos: Vec<std::collections::BTreeMap<String, String>>,
    /// Each variant's pinned CPUs (empty: not pinned).
    cpus: Vec<Vec<usize>>,
    gpu: fingerprint::GpuInfo,
    /// Interrupts counted before the bench began: one more is a Ctrl-C to it.
    interrupts_before: usize,
}

/// Runs (or continues) the experiment: `--setup`, the warmup rounds, the measured runs,
/// `--cleanup` (also after a stop or an error), telling `progress` as it goes. The
/// comparison is the caller's.
pub fn run(options: &BenchOptions, progress: &mut dyn Progress) -> Result<BenchOutcome> {
    let (file, spec, experiment_id, done) = open_experiment(options)?;
    let path = file.path().to_owned();
    let slots = schedule(&spec);
    let bench = Bench {
        spec: &spec,
        path: &path,
        experiment_id,
        combos: spec.combinations(),
        cpus: pinned_cpus(&spec)?,
        gpu: fingerprint::probe_gpu(),
        interrupts_before: session::interrupts(),
    };
    session::catch_interrupts();
    let interrupts_before = bench.interrupts_before;

    let total = slots.len();
    let left = (0..total).filter(|i| !done.contains(&(*i as u32))).count();
    // Nothing left to measure (a resume of a finished bench): no setup, no warmup.
    let warmups = if left > 0 {
        warmup_schedule(&spec)
    } else {
        Vec::new()
    };
    let setups = spec.per_variant(spec.setup.as_deref().filter(|_| left > 0))?;
    let cleanups = spec.per_variant(spec.cleanup.as_deref().filter(|_| left > 0))?;
    progress.begin((total + warmups.len()) as u64, done.len() as u64);
    let mut outcome = BenchOutcome {
        path: path.clone(),
        file,
        total_runs: total,
        finished_runs: done.len(),
        failed_runs: 0,
        warmup_runs: 0,
        unread_metrics: 0,
        cleanup_failures: Vec::new(),
        stopped: false,
    };
    // Variants whose --setup was started get their --cleanup; all do without a --setup.
    let mut set_up = vec![spec.setup.is_none(); spec.variants.len()];
    let result = (|| -> Result<()> {
        for (variant, command) in &setups {
            set_up[*variant] = true;
            let name = &spec.variants[*variant].name;
            progress.say(&format!("--setup of {name}: {command}"));
            run_shell("--setup", command, name, &path).with_context(|| {
                format!(
                    "the bench did not start (run it again once --setup works, or continue \
                     with framelab bench --resume -o {})",
                    path.display()
                )
            })?;
        }
        for (index, slot) in warmups.iter().enumerate() {
            if session::interrupts() > interrupts_before {
                outcome.stopped = true;
                return Ok(());
            }
            let status = bench.run_slot(slot, index as u32, true, progress)?;
            outcome.warmup_runs += 1;
            if status.interrupted {
                outcome.stopped = true;
                return Ok(());
            }
        }
        for (index, slot) in slots.iter().enumerate() {
            if done.contains(&(index as u32)) {
                continue;
            }
            if session::interrupts() > interrupts_before {
                outcome.stopped = true;
                break;
            }
            let ran = bench.run_slot(slot, index as u32, false, progress)?;
            outcome.unread_metrics += ran.unread_metrics;
            match ran.status {
                RunStatus::Ok => outcome.finished_runs += 1,
                RunStatus::Failed => {
                    outcome.finished_runs += 1;
                    outcome.failed_runs += 1;
                }
                RunStatus::Interrupted | RunStatus::Warmup => {
                    outcome.stopped = true;
                    break;
                }
            }
        }
        Ok(())
    })();
    progress.finish();
    for (variant, command) in &cleanups {
        if !set_up[*variant] {
            continue;
        }
        let name = &spec.variants[*variant].name;
        progress.say(&format!("--cleanup of {name}: {command}"));
        if let Err(e) = run_shell("--cleanup", command, name, &path) {
            outcome.cleanup_failures.push(format!("{e:#}"));
        }
    }
    result?;
    Ok(outcome)
}

/// How one run went, for the outcome.
struct Ran {
    status: RunStatus,
    interrupted: bool,
    unread_metrics: usize,
}

impl Bench<'_> {
    /// Runs one slot (a measured run, or a warmup run with `warmup`) and records it.
    fn run_slot(
        &self,
        slot: &Slot,
        index: u32,
        warmup: bool,
        progress: &mut dyn Progress,
    ) -> Result<Ran> {
        let spec = self.spec;
        let combo = &self.combos[slot.combo];
        let what = if warmup {
            format!("warmup {}", describe_slot(spec, slot, combo))
        } else {
            describe_slot(spec, slot, combo)
        };
        progress.starting(&what);
        let started = Instant::now();
        let pin = spec.pin_of(slot.variant);
        let fingerprint = fingerprint::probe(&self.gpu, pin.as_deref().unwrap_or(""));
        let opts = run_options(
            spec,
            slot,
            combo,
            self.path,
            &self.cpus[slot.variant],
            &what,
        )?;
        let result = match session::run(&opts) {
            Ok(result) => result,
            // Ctrl-C while a --prepare ran: the run never started, the bench stops there.
            Err(_) if session::interrupts() > self.interrupts_before => {
                progress.finished(&what, "interrupted", started.elapsed());
                return Ok(Ran {
                    status: RunStatus::Interrupted,
                    interrupted: true,
                    unread_metrics: 0,
                });
            }
            Err(e) => return Err(e.context(format!("{what} could not run"))),
        };
        // A failing --prepare fails its run, as a failing command does; the bench goes on.
        let (status, failure) = match &result.prepare_failure {
            Some(why) => (RunStatus::Failed, Some(why.clone())),
            None => judge_run(
                result.end_reason,
                result.exit.as_ref(),
                result.interrupt_signal,
            ),
        };
        let interrupted = status == RunStatus::Interrupted;
        let unread: Vec<&str> = result
            .metrics
            .iter()
            .filter_map(|m| m.failure.as_deref())
            .collect();
        store::record_experiment_run(
            self.path,
            &ExperimentRun {
                run_id: result.run_id,
                experiment_id: self.experiment_id,
                variant: spec.variants[slot.variant].name.clone(),
                params: combo.clone(),
                repetition: slot.repetition,
                slot: index,
                // A warmup run is never compared, however it ended: the failure says how.
                status: if warmup { RunStatus::Warmup } else { status },
                failure: failure.clone(),
            },
            &fingerprint,
        )?;
        let mut said = failure.unwrap_or_else(|| status.name().to_owned());
        if !warmup && !unread.is_empty() {
            said.push_str(&format!("; metric not read: {}", unread.join("; ")));
        }
        progress.finished(&what, &said, started.elapsed());
        Ok(Ran {
            status,
            interrupted,
            unread_metrics: if warmup { 0 } else { unread.len() },
        })
    }
}

/// Creates the experiment file, or reopens it for `--resume`: (file, spec, id, slots done).
fn open_experiment(
    options: &BenchOptions,
) -> Result<(
    crate::destination::RunFile,
    ExperimentSpec,
    i64,
    HashSet<u32>,
)> {
    if options.resume {
        let Some(given) = options.output.clone() else {
            bail!("--resume needs the experiment file: framelab bench --resume -o FILE");
        };
        if !given.exists() {
            bail!(
                "nothing to resume: {} does not exist; drop --resume to start the experiment",
                given.display()
            );
        }
        let file = crate::destination::RunFile::resolve(&given)?;
        if !file.kept() {
            bail!("nothing to resume: {} keeps no experiment file; give the file the experiment was written to", given.display());
        }
        let path = file.path().to_owned();
        let Some(experiment) = store::load_experiment(&path)? else {
            bail!("{} holds no experiment to resume (it was written by framelab run?); choose another -o", path.display());
        };
        let stored: ExperimentSpec = serde_json::from_str(&experiment.spec_json).map_err(|e| {
            anyhow::anyhow!("{}: the experiment's specification cannot be read ({e}); it was written by another framelab version", path.display())
        })?;
        if let Some(given) = &options.spec {
            if given != &stored {
                crate::bail_usage!(
                    "the options given differ from the experiment in {} ({}); resume with the same options, or with only --resume -o {}",
                    path.display(),
                    first_difference(given, &stored),
                    path.display()
                );
            }
        }
        stored.validate()?;
        pinned_cpus(&stored)?;
        check_commands(&stored)?;
        let done = experiment
            .runs
            .iter()
            .filter(|r| matches!(r.status, RunStatus::Ok | RunStatus::Failed))
            .map(|r| r.slot)
            .collect();
        return Ok((file, stored, experiment.id, done));
    }
    let Some(spec) = options.spec.clone() else {
        bail!("nothing to run: give --variant NAME=COMMAND (twice or more to compare) or one command after --");
    };
    spec.validate()?;
    // Everything that can be refused is refused before the file is created.
    pinned_cpus(&spec)?;
    check_commands(&spec)?;
    let file = crate::destination::RunFile::resolve(
        &options.output.clone().unwrap_or_else(default_output),
    )?;
    let path = file.path().to_owned();
    if path.exists() && std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
        let what = match store::load_experiment(&path) {
            Ok(Some(e)) => format!(
                "already holds an experiment ({} runs recorded): continue it with --resume, or",
                e.runs.len()
            ),
            Ok(None) => "already holds runs:".into(),
            Err(e) => return Err(e),
        };
        bail!("{} {what} choose another -o", path.display());
    }
    let spec_json = serde_json::to_string(&spec)?;
    let id = store::create_experiment(&path, &spec_json)?;
    Ok((file, spec, id, HashSet::new()))
}

/// Each variant's pinned CPUs, every list checked.
fn pinned_cpus(spec: &ExperimentSpec) -> Result<Vec<Vec<usize>>> {
    (0..spec.variants.len())
        .map(|variant| match spec.pin_of(variant) {
            Some(pin) => parse_cpu_list(&pin),
            None => Ok(Vec::new()),
        })
        .collect()
}

/// What differs between two experiments, named as the options that set it.
fn first_difference(a: &ExperimentSpec, b: &ExperimentSpec) -> &'static str {
    let (x, y) = (&a.run, &b.run);
    let differs = [
        (
            a.variants != b.variants,
            "the variants (--variant, or the command after --)",
        ),
        (a.params != b.params, "--param"),
        (a.runs != b.runs, "-n"),
        (a.order != b.order || a.seed != b.seed, "--order or --seed"),
        (
            a.pin != b.pin || a.prepare != b.prepare,
            "--pin or --prepare",
        ),
        (a.warmup_runs != b.warmup_runs, "--warmup-runs"),
        (
            a.setup != b.setup || a.cleanup != b.cleanup,
            "--setup or --cleanup",
        ),
        (x.metrics != y.metrics, "--metric"),
        (x.fps != y.fps, "--fps"),
        (x.budget_ns != y.budget_ns, "--budget"),
        (x.warmup_ns != y.warmup_ns, "--warmup"),
        (x.warmup_from != y.warmup_from, "--warmup-from"),
        (x.warmup_frames != y.warmup_frames, "--warmup-frames"),
        (x.duration_ns != y.duration_ns, "--duration"),
        (x.frames != y.frames, "--frames"),
        (x.watch_pids != y.watch_pids, "--watch-pid"),
        (
            x.watch_names != y.watch_names || x.watch_roles != y.watch_roles,
            "--watch",
        ),
        (x.grace_ns != y.grace_ns, "--grace"),
        (x.keep_output != y.keep_output, "--keep-output"),
        (
            x.services != y.services,
            "--service, --ready, --ready-timeout or --pin",
        ),
        (x.profile != y.profile, "--profile"),
        (x.tags != y.tags, "--tag"),
    ];
    (differs.into_iter())
        .find(|(differ, _)| *differ)
        .map_or("run options", |(_, option)| option)
}

fn default_output() -> PathBuf {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace([':', '-'], "");
    PathBuf::from(format!("bench-{}.framelab", stamp.trim_end_matches('Z')))
}

/// Every variant's program exists for every combination, before the first run.
fn check_commands(spec: &ExperimentSpec) -> Result<()> {
    for combo in spec.combinations() {
        for (i, v) in spec.variants.iter().enumerate() {
            let argv = spec.command(i, &combo)?;
            session::check_runnable(&argv[0]).with_context(|| format!("variant '{}'", v.name))?;
        }
    }
    Ok(())
}

/// "v2 [res=720p] #3".
fn describe_slot(
    spec: &ExperimentSpec,
    slot: &Slot,
    combo: &std::collections::BTreeMap<String, String>,
) -> String {
    let params = spec::describe_combo(combo);
    let name = &spec.variants[slot.variant].name;
    if params.is_empty() {
        format!("{name} #{}", slot.repetition + 1)
    } else {
        format!("{name} [{params}] #{}", slot.repetition + 1)
    }
}

fn run_options(
    spec: &ExperimentSpec,
    slot: &Slot,
    combo: &std::collections::BTreeMap<String, String>,
    path: &Path,
    cpus: &[usize],
    what: &str,
) -> Result<RunOptions> {
    let settings = &spec.run;
    let ns = |v: i64| Duration::from_nanos(v.max(0) as u64);
    let mut env = vec![(
        "FRAMELAB_VARIANT".to_owned(),
        spec.variants[slot.variant].name.clone(),
    )];
    if let Some(seed) = spec.seed {
        env.push(("FRAMELAB_SEED".to_owned(), seed.to_string()));
    }
    Ok(RunOptions {
        command: spec.command(slot.variant, combo)?,
        name: Some(what.to_owned()),
        tags: spec.tags_of(combo),
        output: Some(path.to_owned()),
        window: WindowOptions {
            fps: settings.fps,
            budget: settings.budget_ns.map(ns),
            warmup: ns(settings.warmup_ns),
            warmup_from: settings.warmup_from,
            warmup_frames: settings.warmup_frames,
            duration: settings.duration_ns.map(ns),
            frames: settings.frames,
        },
        watch: WatchList {
            pids: settings.watch_pids.clone(),
            names: settings.watch_names.clone(),
            roles: settings.watch_roles.clone(),
        },
        capture: CaptureOptions {
            metrics: settings
                .metrics
                .iter()
                .map(|m| m.expanded(combo))
                .collect::<Result<_>>()?,
            keep_output: settings.keep_output,
            stdout_to_stderr: false,
        },
        launch: LaunchOptions {
            env,
            cpus: cpus.to_vec(),
            grace: ns(settings.grace_ns),
            prepare: match &spec.prepare {
                Some(prepare) => Some(session::prepare::Prepare {
                    command: spec::expand(prepare, combo)?,
                    env: vec![
                        (
                            "FRAMELAB_VARIANT".to_owned(),
                            spec.variants[slot.variant].name.clone(),
                        ),
                        (
                            "FRAMELAB_EXPERIMENT".to_owned(),
                            path.to_string_lossy().into_owned(),
                        ),
                    ],
                }),
                None => None,
            },
        },
        services: ServiceOptions {
            specs: (settings.services).specs(&spec.variants[slot.variant].name, combo)?,
            ready_timeout: if settings.services.ready_timeout_ns > 0 {
                ns(settings.services.ready_timeout_ns)
            } else {
                crate::services::DEFAULT_READY_TIMEOUT
            },
        },
        session: SessionOptions {
            access: Default::default(),
            ring_records: settings.ring_records,
        },
        // Each run samples the machine like `framelab run` does by default.
        sampling: crate::sample::SamplingOptions::default(),
        live: LiveOptions::default(),
        profile: settings.profile,
        probes: settings.probes.parse().map_err(anyhow::Error::msg)?,
    })
}

/// `--setup` or `--cleanup` (`option`) through `sh -c`, `{KEY}` already
/// expanded; a failure is an error naming the option and the command.
fn run_shell(option: &str, command: &str, variant: &str, path: &Path) -> Result<()> {
    let status = Command::new("sh")
        .args(["-c", command])
        .env("FRAMELAB_VARIANT", variant)
        .env("FRAMELAB_EXPERIMENT", path)
        .status()
        .with_context(|| format!("{option} could not start sh: {command}"))?;
    if !status.success() {
        bail!("{option} of variant {variant} failed ({status}): {command}");
    }
    Ok(())
}

/// A run counts unless it was interrupted, crashed, or exited non-zero by itself
/// (a command stopped at --duration may exit non-zero on SIGINT: that is ours).
pub fn judge_run(
    end: EndReason,
    exit: Option<&ExitInfo>,
    signal: Option<i32>,
) -> (RunStatus, Option<String>) {
    if end == EndReason::Interrupted {
        let by = match signal {
            Some(libc::SIGINT) => "Ctrl-C".to_owned(),
            Some(s) => crate::analyze::notes::describe_signal(s),
            None => "a signal".to_owned(),
        };
        return (RunStatus::Interrupted, Some(format!("interrupted ({by})")));
    }
    match exit {
        Some(e) if e.crashed => {
            let signal = e
                .signal
                .map_or("a signal".into(), crate::analyze::notes::describe_signal);
            (RunStatus::Failed, Some(format!("crashed ({signal})")))
        }
        Some(ExitInfo {
            code: Some(code), ..
        }) if *code != 0 && end == EndReason::Exited => (
            RunStatus::Failed,
            Some(format!("exited with status {code}")),
        ),
        _ => (RunStatus::Ok, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_judged_by_how_they_ended() {
        let exit = |code, signal, crashed| ExitInfo {
            code,
            signal,
            crashed,
        };
        assert_eq!(
            judge_run(EndReason::Exited, Some(&exit(Some(0), None, false)), None).0,
            RunStatus::Ok
        );
        assert_eq!(
            judge_run(EndReason::Exited, Some(&exit(Some(2), None, false)), None).0,
            RunStatus::Failed
        );
        // Stopped at --duration, exiting 130 on SIGINT: fine.
        assert_eq!(
            judge_run(
                EndReason::Duration,
                Some(&exit(Some(130), None, false)),
                None
            )
            .0,
            RunStatus::Ok
        );
        let (status, why) = judge_run(EndReason::Exited, Some(&exit(None, Some(11), true)), None);
        assert_eq!(status, RunStatus::Failed);
        assert!(why.unwrap().contains("SIGSEGV"));
        assert_eq!(
            judge_run(EndReason::Interrupted, None, None).0,
            RunStatus::Interrupted
        );
        let (_, why) = judge_run(EndReason::Interrupted, None, Some(15));
        assert_eq!(why.unwrap(), "interrupted (SIGTERM (signal 15))");
    }
}
