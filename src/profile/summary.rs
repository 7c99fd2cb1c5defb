//! What `framelab profile RUN` shows: the run's samples counted by function (self: the
//! leaf frame; inclusive: anywhere in the stack, once per sample), overall, per stage and
//! for the late and worst frames, after the filters asked for. Late and worst frames are
//! those of the measured window, as the report counts them (`frames::measure_run`).

use std::collections::HashMap;

use serde::Serialize;

use super::attribute::{attribute, InSpan};
use super::model::Profile;
use crate::analyze::frames::{measure_run, Frames};
use crate::model::Run;

/// The stage name of samples taken while no stage span was open on their thread.
pub const NO_STAGE: &str = "(no stage)";

/// Which samples to count.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// A stage name, or `(no stage)`.
    pub stage: Option<String>,
    /// A thread id, or a thread name as recorded.
    pub thread: Option<String>,
    /// A process id, or a process name.
    pub process: Option<String>,
    /// Only samples inside late frames (total over the budget).
    pub late_only: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FunctionRow {
    pub function: String,
    pub module: String,
    pub self_samples: u64,
    pub inclusive_samples: u64,
    pub self_pct: f64,
    pub inclusive_pct: f64,
}

/// z of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Half the 95% interval of a share of `samples` samples, in points, at its widest (a 50%
/// share): how far sampling alone can move the shares of a table.
pub fn share_ci95_pct(samples: u64) -> f64 {
    if samples == 0 {
        return 0.0;
    }
    100.0 * Z95 * (0.25 / samples as f64).sqrt()
}

/// Samples of one group (the whole selection, one stage, one frame) by function.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FunctionTable {
    pub name: String,
    pub samples: u64,
    /// This group's share of the samples selected.
    pub share_pct: f64,
    /// Every function seen, by inclusive samples (most first).
    pub functions: Vec<FunctionRow>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub run: String,
    pub event: String,
    pub frequency_hz: u64,
    pub unwinding: String,
    pub kernel_stacks: bool,
    /// Samples stored for the run, before filters.
    pub taken: u64,
    pub lost: u64,
    pub lost_pct: f64,
    pub unknown_leaves: u64,
    pub unknown_pct: f64,
    pub truncated: u64,
    pub throttled: u64,
    pub notes: Vec<String>,
    /// Samples the filters kept.
    pub selected: u64,
    pub filters: Vec<String>,
    pub overall: FunctionTable,
    /// Each stage with samples, most samples first, `(no stage)` included.
    pub stages: Vec<FunctionTable>,
    /// Samples in late frames of the measured window, when the run has a budget.
    pub late_frames: Option<FunctionTable>,
    /// The measured frames with the longest totals that have samples, worst first.
    pub worst_frames: Vec<FunctionTable>,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Counts samples (given by index) per function of `profile`.
pub fn table(profile: &Profile, name: &str, samples: &[usize], all_selected: u64) -> FunctionTable {
    // Each distinct stack is walked once, however many samples share it.
    let mut per_stack: HashMap<Option<u32>, u64> = HashMap::new();
    for &i in samples {
        *per_stack.entry(profile.samples[i].stack).or_default() += 1;
    }
    let mut self_counts = vec![0u64; profile.frames.len()];
    let mut incl_counts = vec![0u64; profile.frames.len()];
    let mut seen_in = vec![u32::MAX; profile.frames.len()];
    for (n, (&leaf, &count)) in per_stack.iter().enumerate() {
        let mut first = true;
        for frame in profile.stack_frames(leaf) {
            let f = frame as usize;
            if first {
                self_counts[f] += count;
                first = false;
            }
            // Recursion counts once per sample.
            if seen_in[f] != n as u32 {
                seen_in[f] = n as u32;
                incl_counts[f] += count;
            }
        }
    }
    let total = samples.len() as u64;
    let mut functions: Vec<FunctionRow> = (0..profile.frames.len())
        .filter(|&f| incl_counts[f] > 0)
        .map(|f| FunctionRow {
            function: profile.frames[f].function.clone(),
            module: profile.frames[f].module.clone(),
            self_samples: self_counts[f],
            inclusive_samples: incl_counts[f],
            self_pct: pct(self_counts[f], total),
            inclusive_pct: pct(incl_counts[f], total),
        })
        .collect();
    functions.sort_by(|a, b| {
        b.inclusive_samples
            .cmp(&a.inclusive_samples)
            .then(b.self_samples.cmp(&a.self_samples))
            .then_with(|| a.function.cmp(&b.function))
    });
    FunctionTable {
        name: name.to_owned(),
        samples: total,
        share_pct: pct(total, all_selected),
        functions,
    }
}

/// How many of the worst frames get a table of their own.
const WORST_FRAMES: usize = 3;

/// The samples the filters keep, and the span each sample of the profile fell in.
pub struct Selection {
    pub samples: Vec<usize>,
    pub spans: Vec<Option<InSpan>>,
    /// Each measured frame's total (ns) by frame id: the frames whose end falls in the
    /// window, as the report counts them (no warmup frame, no frame open at the stop).
    totals: HashMap<u64, i64>,
}

impl Selection {
    /// The stage sample `i` was taken in, or `(no stage)`.
    pub fn stage<'r>(&self, run: &'r Run, i: usize) -> &'r str {
        self.spans[i]
            .and_then(|s| run.stages.get(s.stage as usize))
            .map_or(NO_STAGE, |n| n.as_str())
    }

    fn late(&self, run: &Run, i: usize) -> bool {
        match (self.spans[i], run.meta.budget_ns) {
            (Some(s), Some(budget)) => self.totals.get(&s.frame).is_some_and(|&t| t > budget),
            _ => false,
        }
    }
}

/// Matches every sample to its span and keeps those the filters ask for. `Err` names a
/// filter that matches nothing the run has, with what it has.
pub fn select(run: &Run, profile: &Profile, filters: &Filters) -> Result<Selection, String> {
    let frames = Frames::from_spans(&run.spans);
    let (_, measured) = measure_run(run, &frames);
    let totals = (measured.order.iter())
        .map(|&i| &frames.all[i as usize])
        .map(|f| (f.id, f.total_ns()))
        .collect();
    let mut selection = Selection {
        samples: Vec::new(),
        spans: attribute(run, &profile.samples),
        totals,
    };
    let thread_ok = thread_filter(run, profile, filters.thread.as_deref())?;
    let process_ok = process_filter(run, profile, filters.process.as_deref())?;
    if let Some(stage) = &filters.stage {
        if stage != NO_STAGE && !run.stages.iter().any(|s| s == stage) {
            return Err(format!(
                "--stage {stage}: the run has no such stage; it has {}",
                list_or_none(run.stages.iter().map(String::as_str).chain([NO_STAGE]))
            ));
        }
    }
    if filters.late_only && run.meta.budget_ns.is_none() {
        return Err(
            "--frame-set late needs a budget, and this run has none: record it with --fps or --budget"
                .to_owned(),
        );
    }
    selection.samples = (0..profile.samples.len())
        .filter(|&i| {
            let s = &profile.samples[i];
            thread_ok(s.pid, s.tid)
                && process_ok(s.pid)
                && filters
                    .stage
                    .as_deref()
                    .is_none_or(|st| selection.stage(run, i) == st)
                && (!filters.late_only || selection.late(run, i))
        })
        .collect();
    Ok(selection)
}

/// The summary of `run`'s profile: the selected samples by function, overall, per stage,
/// for the late and the worst frames.
pub fn summarize(run: &Run, profile: &Profile, filters: &Filters, sel: &Selection) -> Summary {
    let selected = &sel.samples;
    let spans = &sel.spans;
    let totals = &sel.totals;
    let all = selected.len() as u64;

    let mut by_stage: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in selected {
        by_stage.entry(sel.stage(run, i)).or_default().push(i);
    }
    let mut stages: Vec<FunctionTable> = by_stage
        .iter()
        .map(|(name, idx)| table(profile, name, idx, all))
        .collect();
    stages.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));

    let late_frames = run.meta.budget_ns.map(|_| {
        let idx: Vec<usize> = selected
            .iter()
            .copied()
            .filter(|&i| sel.late(run, i))
            .collect();
        table(profile, "late frames", &idx, all)
    });
    // Measured frames only: a warmup frame is no worst frame, however long it took.
    let mut by_frame: HashMap<u64, Vec<usize>> = HashMap::new();
    for &i in selected {
        if let Some(s) = spans[i].filter(|s| totals.contains_key(&s.frame)) {
            by_frame.entry(s.frame).or_default().push(i);
        }
    }
    let mut worst: Vec<(i64, u64)> = by_frame.keys().map(|&f| (totals[&f], f)).collect();
    worst.sort_by(|a, b| b.cmp(a));
    let worst_frames = worst
        .iter()
        .take(WORST_FRAMES)
        .map(|&(total, f)| {
            let name = format!("frame {f} (total {:.0} µs)", total as f64 / 1e3);
            table(profile, &name, &by_frame[&f], all)
        })
        .collect();

    let taken = profile.samples.len() as u64;
    let unknown = profile.unknown_leaves() as u64;
    let mut filter_words = Vec::new();
    for (flag, value) in [
        ("--stage", &filters.stage),
        ("--thread", &filters.thread),
        ("--process", &filters.process),
    ] {
        if let Some(v) = value {
            filter_words.push(format!("{flag} {v}"));
        }
    }
    if filters.late_only {
        filter_words.push("--frame-set late".to_owned());
    }
    Summary {
        run: run.meta.name.clone(),
        event: profile.event.clone(),
        frequency_hz: profile.frequency_hz,
        unwinding: profile.unwinding.clone(),
        kernel_stacks: profile.kernel_stacks,
        taken,
        lost: profile.lost,
        lost_pct: pct(profile.lost, taken + profile.lost),
        unknown_leaves: unknown,
        unknown_pct: pct(unknown, taken),
        truncated: profile.truncated,
        throttled: profile.throttled,
        notes: profile.notes.clone(),
        selected: all,
        filters: filter_words,
        overall: table(profile, "all", selected, all),
        stages,
        late_frames,
        worst_frames,
    }
}

fn list_or_none<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

type ThreadOk = Box<dyn Fn(u32, u32) -> bool>;

/// `--thread`: a tid, or the name of a thread that recorded spans.
fn thread_filter(run: &Run, profile: &Profile, wanted: Option<&str>) -> Result<ThreadOk, String> {
    let Some(wanted) = wanted else {
        return Ok(Box::new(|_, _| true));
    };
    let tids: Vec<u32> = match wanted.parse::<u32>() {
        Ok(tid) => vec![tid],
        Err(_) => run
            .threads
            .iter()
            .filter(|t| t.name == wanted)
            .map(|t| t.tid)
            .collect(),
    };
    if !profile.samples.iter().any(|s| tids.contains(&s.tid)) {
        let mut names: Vec<&str> = run.threads.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        return Err(format!(
            "--thread {wanted}: no sample of this run is from that thread; give a tid or one of \
             the threads that recorded: {}",
            list_or_none(names.into_iter())
        ));
    }
    Ok(Box::new(move |_, tid| tids.contains(&tid)))
}

type ProcessOk = Box<dyn Fn(u32) -> bool>;

/// `--process`: a pid, or a process name of the run's accounting.
fn process_filter(run: &Run, profile: &Profile, wanted: Option<&str>) -> Result<ProcessOk, String> {
    let Some(wanted) = wanted else {
        return Ok(Box::new(|_| true));
    };
    let pids: Vec<u32> = match wanted.parse::<u32>() {
        Ok(pid) => vec![pid],
        Err(_) => run
            .processes
            .iter()
            .filter(|p| p.name == wanted)
            .map(|p| p.pid)
            .collect(),
    };
    if !profile.samples.iter().any(|s| pids.contains(&s.pid)) {
        let mut names: Vec<&str> = run.processes.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        return Err(format!(
            "--process {wanted}: no sample of this run is from that process; give a pid or one \
             of: {}",
            list_or_none(names.into_iter())
        ));
    }
    Ok(Box::new(move |pid| pids.contains(&pid)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::span;
    use crate::model::{RunMeta, ThreadInfo};
    use crate::profile::model::ProfileSample;

    const MS: i64 = 1_000_000;

    /// Frames 0 and 1 end in the warmup and are the slowest of the run (50 and 40 ms over
    /// a 10 ms budget); frames 2 to 5 are measured, and of them only frame 2 is late.
    /// One sample in each frame.
    fn warmup_slowest() -> (Run, Profile) {
        let spans = vec![
            span(0, 0, 0, 0, 50 * MS),
            span(1, 0, 0, 50 * MS, 40 * MS),
            span(2, 0, 0, 100 * MS, 12 * MS),
            span(3, 0, 0, 200 * MS, 5 * MS),
            span(4, 0, 0, 300 * MS, 3 * MS),
            span(5, 0, 0, 400 * MS, 2 * MS),
        ];
        let samples = (spans.iter())
            .map(|s| ProfileSample {
                t_ns: s.start_ns + MS,
                pid: 1,
                tid: 1,
                cpu: 0,
                stack: None,
            })
            .collect();
        let run = Run {
            stages: vec!["work".into()],
            threads: vec![ThreadInfo {
                pid: 1,
                tid: 1,
                name: "main".into(),
                dropped: 0,
            }],
            spans,
            meta: RunMeta {
                budget_ns: Some(10 * MS),
                window_start_ns: 100 * MS,
                window_end_ns: 1_000 * MS,
                ..RunMeta::default()
            },
            ..Run::default()
        };
        let profile = Profile {
            samples,
            ..Profile::default()
        };
        (run, profile)
    }

    #[test]
    fn late_and_worst_frames_are_the_measured_windows() {
        let (run, profile) = warmup_slowest();
        let sel = select(&run, &profile, &Filters::default()).unwrap();
        let summary = summarize(&run, &profile, &Filters::default(), &sel);
        // Every sample still counts overall: the window picks frames, not samples.
        assert_eq!(summary.overall.samples, 6);
        assert_eq!(summary.late_frames.unwrap().samples, 1, "frame 2 alone");
        let worst: Vec<&str> = (summary.worst_frames.iter())
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(
            worst,
            [
                "frame 2 (total 12000 µs)",
                "frame 3 (total 5000 µs)",
                "frame 4 (total 3000 µs)"
            ]
        );
        // --frame-set late keeps the measured late frame's sample only.
        let late = Filters {
            late_only: true,
            ..Filters::default()
        };
        let sel = select(&run, &profile, &late).unwrap();
        assert_eq!(sel.samples, [2]);
    }
}
