//! Spans split by what the scheduler did (docs/metrics.md, "On-CPU, runnable and
//! blocked"): each span's time on a CPU, runnable (preempted, or woken and waiting for a
//! CPU) and blocked, from the run's [`SchedTimeline`]. Where a run has one, a thread's
//! busy time is its time on a CPU inside its spans, not the union of the spans' wall time:
//! a preempted thread is not busy. Queues (GPU streams) keep their wall time: no CPU runs
//! them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::compact::select::Selection;
use super::handoff;
use super::pipeline::{is_queue, Bottleneck, StageBusy};
use super::stats::Ranked;
use super::{Analysis, Dist};
use crate::fast_map::FastMap;
use crate::model::{Run, Span, SpanSource};
use crate::sched::{SchedSlice, SchedSource, SchedTimeline};

/// A stage's spans inside the window, split.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageSched {
    pub stage: String,
    /// Each span's time on a CPU.
    pub on_cpu: Option<Dist>,
    /// Over all its spans.
    pub on_cpu_ns: i64,
    pub runnable_ns: i64,
    pub blocked_ns: i64,
}

/// What the report shows of the scheduler.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SchedSummary {
    pub source: SchedSource,
    /// What was not available and how to get it (empty with tracepoints).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    pub resolution_ns: i64,
    /// Switch records the kernel could not write.
    pub lost: u64,
    /// In the order of `Analysis::stage_names`.
    pub stages: Vec<StageSched>,
    /// The tasks that held the CPU while a span waited for it, most time first
    /// (tracepoints only).
    pub preempted_by: Vec<PreemptedBy>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PreemptedBy {
    pub comm: String,
    pub ns: i64,
}

/// One span's (or interval's) split.
#[derive(Clone, Debug, Default)]
struct Split {
    on_cpu: f64,
    runnable: f64,
    by: Vec<(usize, f64)>,
}

/// A thread's slices, by start, and where each ends at the latest (to find those
/// overlapping a time).
struct ThreadSlices<'a> {
    slices: &'a [SchedSlice],
    /// By slice: the latest end of it and the slices before it. The first slice that may
    /// overlap a time is the first whose latest end is past it: with the longest slice's
    /// length instead, one long slice (a thread asleep a second, in a `sched_switch`
    /// timeline) had every later span walk back over a second of slices (issue 29).
    ends_by: Vec<i64>,
    /// Per slice, how much denser than its average the thread's time is inside its spans
    /// (`spans_first`): 1 for tracepoint slices, which are wholly one state.
    density: Vec<f64>,
}

/// Where the last split of a thread began: its spans come nearly in start order, so the
/// next split's first slice is found by stepping on from there rather than by a binary
/// search (a span's split was the analysis' hottest spot, issue 29).
#[derive(Clone, Copy, Debug, Default)]
struct Cursor(Option<usize>);

impl ThreadSlices<'_> {
    /// The first slice that may overlap a time from `from` on (those before it all end by
    /// `from`): the same index a binary search finds, stepped to from `cursor` when `from`
    /// did not go back.
    fn first_from(&self, from: i64, cursor: &mut Cursor) -> usize {
        let before = |i: usize| self.ends_by[i] <= from;
        let first = match cursor.0 {
            Some(at) if at == 0 || before(at - 1) => {
                let mut i = at;
                while i < self.slices.len() && before(i) {
                    i += 1;
                }
                i
            }
            _ => self.ends_by.partition_point(|&end| end <= from),
        };
        cursor.0 = Some(first);
        first
    }

    /// The split of `[from, to)`: each slice counted by the share of it inside.
    fn split(&self, from: i64, to: i64, comms: &mut Comms, out: &mut Split) {
        self.split_after(from, to, &mut Cursor::default(), comms, out);
    }

    /// The slices overlapping `[from, to)`, each with the share of it counted (the part
    /// inside, weighted by its density), the first found from `cursor`. Inlined: called
    /// out of line, the split of each span took a quarter longer (issue 29).
    #[inline(always)]
    fn shares<'s>(
        &'s self,
        from: i64,
        to: i64,
        cursor: &mut Cursor,
    ) -> impl Iterator<Item = (&'s SchedSlice, f64)> + 's {
        let first = self.first_from(from, cursor);
        (self.slices[first..].iter().zip(&self.density[first..]))
            .take_while(move |(s, _)| s.start_ns < to)
            .filter_map(move |(s, density)| {
                let end = s.start_ns + s.dur_ns;
                let inside = end.min(to) - s.start_ns.max(from);
                (inside > 0 && s.dur_ns > 0).then(|| (s, inside as f64 / s.dur_ns as f64 * density))
            })
    }

    /// The time on a CPU of `[from, to)`: [`Split::on_cpu`] of its split, the same sum
    /// in the same order, without the rest.
    fn on_cpu_after(&self, from: i64, to: i64, cursor: &mut Cursor) -> f64 {
        let mut on_cpu = 0.0;
        for (s, share) in self.shares(from, to, cursor) {
            on_cpu += s.on_cpu_ns as f64 * share;
        }
        on_cpu
    }

    /// [`ThreadSlices::split`], finding its first slice from `cursor`.
    fn split_after(
        &self,
        from: i64,
        to: i64,
        cursor: &mut Cursor,
        comms: &mut Comms,
        out: &mut Split,
    ) {
        let sums = (out.on_cpu, out.runnable);
        (out.on_cpu, out.runnable) = self.split_onto(from, to, cursor, comms, sums, &mut out.by);
    }

    /// [`ThreadSlices::split_after`] with the time on CPU and runnable added to `sums` and
    /// given back, not kept in a [`Split`]: the split loop keeps them in registers. There,
    /// read back from a `Split` on the stack, they were two 8-byte stores loaded as one
    /// 16-byte value, a store-forwarding stall (a quarter to 40% of that loop's samples at
    /// 84M spans, issue 29).
    #[inline(always)]
    fn split_onto(
        &self,
        from: i64,
        to: i64,
        cursor: &mut Cursor,
        comms: &mut Comms,
        (mut on_cpu, mut runnable): (f64, f64),
        by: &mut Vec<(usize, f64)>,
    ) -> (f64, f64) {
        for (s, share) in self.shares(from, to, cursor) {
            on_cpu += s.on_cpu_ns as f64 * share;
            let runnable_here = s.runnable_ns as f64 * share;
            runnable += runnable_here;
            if runnable_here > 0.0 && !s.by.is_empty() {
                let id = comms.id(&s.by);
                match by.iter_mut().find(|(c, _)| *c == id) {
                    Some((_, ns)) => *ns += runnable_here,
                    None => by.push((id, runnable_here)),
                }
            }
        }
        (on_cpu, runnable)
    }
}

#[derive(Default)]
struct Comms {
    ids: HashMap<String, usize>,
    names: Vec<String>,
}

impl Comms {
    fn id(&mut self, name: &str) -> usize {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// Splits the spans of `source` and rewrites the analysis' busy times with time on CPU.
/// Nothing changes for a run without a timeline.
pub fn apply(analysis: &mut Analysis, head: &Run, source: &dyn SpanSource) -> anyhow::Result<()> {
    let slices = prepare(head, source)?;
    apply_prepared(analysis, head, slices, source)
}

/// Each thread's slices by tid, with where a coarse slice's time goes (the read of
/// [`spans_first`]): what [`apply_prepared`] splits the spans with. It needs nothing of the
/// analysis, so it may be read beside it (issue 29). `None` without slices to split by.
pub struct Prepared<'a>(Option<HashMap<u32, ThreadSlices<'a>>>);

/// The slices [`apply_prepared`] splits `head`'s spans with.
pub fn prepare<'a>(head: &'a Run, source: &dyn SpanSource) -> anyhow::Result<Prepared<'a>> {
    let Some(timeline) = &head.sched else {
        return Ok(Prepared(None));
    };
    if timeline.source == SchedSource::None || timeline.slices.is_empty() {
        return Ok(Prepared(None));
    }
    let mut by_tid = index(timeline);
    if timeline.resolution_ns > 1 {
        spans_first(&mut by_tid, head, source)?;
    }
    Ok(Prepared(Some(by_tid)))
}

/// What the split needs of the analysis, known once its first read is done: the window,
/// how many stages (the analysis' and the run's), the worst frames' ids. Or known before
/// it, for a run of one span a frame whose window the metadata gives: the split then finds
/// the worst frames as the analysis does ([`SplitOf::find_worst`]), so it need not wait
/// for the analysis' first read (issue 29).
#[derive(Clone, Debug, PartialEq)]
pub struct SplitOf {
    pub window: (i64, i64),
    pub stage_count: usize,
    pub worst: Vec<u64>,
    /// The frames have one span each (ids counting up), the window's frames are measured
    /// but for `open`: `worst` is found by the split. It gives `None` where a frame id does
    /// not count up.
    pub find_worst: bool,
    /// With `find_worst`: the frames cut short by the stop, left out of the window.
    pub open: Vec<u64>,
}

impl SplitOf {
    /// What `analysis` gives of it.
    pub fn of(analysis: &Analysis, head: &Run) -> SplitOf {
        SplitOf {
            window: (analysis.window.start_ns, analysis.window.end_ns),
            stage_count: analysis.stage_names.len().max(head.stages.len()),
            worst: analysis.worst_frames.iter().map(|w| w.frame).collect(),
            find_worst: false,
            open: Vec::new(),
        }
    }
}

/// The worst frames of a run of one span a frame, found as `frameless` finds them (each
/// measured span: largest total, then earliest end, then smallest id), each with its
/// span's split.
struct FoundWorst {
    /// Each worst frame's key (its frame id last) and its span's split, best first.
    worst: Vec<(WorstKey, Split)>,
    /// The last usable span's frame: ids must count up.
    last_frame: Option<u64>,
    /// Frames cut short by the stop: not measured.
    open: Vec<u64>,
}

impl FoundWorst {
    /// `s`'s key where it enters the worst frames so far; `Err` where its frame id does
    /// not count up (the run is not of one span a frame).
    fn admits(&mut self, s: &Span, (start, end): (i64, i64)) -> Result<Option<WorstKey>, ()> {
        if super::frames::out_of_range(s.start_ns, s.dur_ns) {
            return Ok(None);
        }
        if self.last_frame.is_some_and(|l| s.frame <= l) {
            return Err(());
        }
        self.last_frame = Some(s.frame);
        let end_ns = s.start_ns + s.dur_ns;
        if end_ns < start || end_ns > end || self.open.contains(&s.frame) {
            return Ok(None);
        }
        let key = (std::cmp::Reverse(s.dur_ns), end_ns, s.frame);
        let full = self.worst.len() == super::stages::WORST_FRAMES;
        Ok((!full || self.worst.last().is_some_and(|(k, _)| key < *k)).then_some(key))
    }

    fn insert(&mut self, key: WorstKey, split: Split) {
        let at = self.worst.partition_point(|(k, _)| *k < key);
        self.worst.insert(at, (key, split));
        self.worst.truncate(super::stages::WORST_FRAMES);
    }
}

type WorstKey = (std::cmp::Reverse<i64>, i64, u64);

/// The spans split, to be written into the analysis ([`Splits::write`]).
pub struct Splits {
    /// `None` for a run without a timeline: nothing to write.
    summary: Option<SchedSummary>,
    /// Each worst frame's (by id) time runnable, and the busiest preempting comm.
    worst: FastMap<u64, (f64, Option<String>)>,
    /// By thread index: its time on CPU in the window and by stage.
    busy: Vec<Option<(i64, Vec<StageBusy>)>>,
    /// False without slices to split by.
    split: bool,
    /// What it split over (the worst frames it found, where it found them).
    pub of: SplitOf,
    /// Whether it found the worst frames itself ([`SplitOf::find_worst`]).
    pub found_worst: bool,
}

/// [`apply`] with the slices [`prepare`] gave.
pub fn apply_prepared(
    analysis: &mut Analysis,
    head: &Run,
    prepared: Prepared,
    source: &dyn SpanSource,
) -> anyhow::Result<()> {
    let of = SplitOf::of(analysis, head);
    match split(head, &prepared, &of, source)? {
        Some(splits) => splits.write(analysis),
        None => unreachable!("a split told the worst frames always gives them"),
    }
    Ok(())
}

/// Each span of `head` split by the slices [`prepare`] gave, over what `of` says of the
/// analysis; reads only the spans, so it may run beside the analysis' reads. `None` where
/// `of` said to find the worst frames of one span a frame and the frames are not.
pub fn split(
    head: &Run,
    prepared: &Prepared,
    of: &SplitOf,
    source: &dyn SpanSource,
) -> anyhow::Result<Option<Splits>> {
    let Some(timeline) = &head.sched else {
        return Ok(Some(Splits {
            summary: None,
            worst: FastMap::default(),
            busy: Vec::new(),
            split: false,
            of: of.clone(),
            found_worst: false,
        }));
    };
    let mut summary = SchedSummary {
        source: timeline.source,
        detail: timeline.detail.clone(),
        resolution_ns: timeline.resolution_ns,
        lost: timeline.lost,
        ..SchedSummary::default()
    };
    let Prepared(Some(by_tid)) = prepared else {
        return Ok(Some(Splits {
            summary: Some(summary),
            worst: FastMap::default(),
            busy: Vec::new(),
            split: false,
            of: of.clone(),
            found_worst: false,
        }));
    };
    // Each thread of the run's slices, by thread index; none for queues.
    let slices_of: Vec<Option<&ThreadSlices>> = head
        .threads
        .iter()
        .map(|t| (!is_queue(t)).then(|| by_tid.get(&t.tid)).flatten())
        .collect();
    let (start, end) = of.window;
    let stage_count = of.stage_count;
    // Looked up for every span: hashed cheaply (SipHash was ~5% of the report, issue 29).
    let worst: FastMap<u64, usize> = (of.worst.iter().enumerate())
        .map(|(i, &frame)| (frame, i))
        .collect();
    let mut comms = Comms::default();
    // What is summed of each span's split, on a thread beside this one in a long read
    // (`handoff`, in the spans' order: the f64 sums keep their bits).
    let mut sums = SplitSums::new(head.threads.len(), stage_count);
    let mut found = of.find_worst.then_some(FoundWorst {
        worst: Vec::with_capacity(super::stages::WORST_FRAMES + 1),
        last_frame: None,
        open: of.open.clone(),
    });
    let mut worst_split: Vec<Split> = vec![Split::default(); worst.len()];
    // By thread index: where its last span's split began.
    let mut cursors = vec![Cursor::default(); head.threads.len()];
    let mut visit = |spans: &[Span], handed: &mut Handed| -> anyhow::Result<()> {
        for s in spans {
            let entering = match &mut found {
                Some(found) => found
                    .admits(s, (start, end))
                    .map_err(|()| NotOneSpanAFrame)?,
                None => None,
            };
            let slices = match slices_of.get(s.thread as usize) {
                Some(Some(slices)) => Some(*slices),
                _ => None,
            };
            let (from, to) = (s.start_ns.max(start), s.end_ns().min(end));
            let Some(slices) = slices.filter(|_| from < to) else {
                // A worst frame on a queue's thread, or of no length in the window: no
                // split, as it has none where the analysis names the worst frames.
                if let (Some(found), Some(key)) = (&mut found, entering) {
                    found.insert(key, Split::default());
                }
                continue;
            };
            // The thread's union takes the span clipped to the window.
            handed.pieces.push((s.thread, from, to));
            let cursor = &mut cursors[s.thread as usize];
            let mut by = Vec::new();
            let (on_cpu, runnable) = slices.split_onto(
                s.start_ns,
                s.end_ns(),
                cursor,
                &mut comms,
                (0.0, 0.0),
                &mut by,
            );
            let inside = if (from, to) == (s.start_ns, s.end_ns()) {
                on_cpu
            } else {
                let mut part = Split::default();
                slices.split(from, to, &mut comms, &mut part);
                part.on_cpu
            };
            handed.splits.push(SpanSplit {
                thread: s.thread,
                stage: s.stage,
                whole_in_window: s.start_ns >= start && s.end_ns() <= end,
                inside,
                on_cpu,
                runnable,
                dur_ns: s.dur_ns,
            });
            if let Some(&i) = (!worst.is_empty()).then(|| worst.get(&s.frame)).flatten() {
                let w = &mut worst_split[i];
                w.runnable += runnable;
                for &(c, ns) in &by {
                    match w.by.iter_mut().find(|(id, _)| *id == c) {
                        Some((_, total)) => *total += ns,
                        None => w.by.push((c, ns)),
                    }
                }
            }
            if let (Some(found), Some(key)) = (&mut found, entering) {
                found.insert(
                    key,
                    Split {
                        on_cpu,
                        runnable,
                        by,
                    },
                );
            }
        }
        Ok(())
    };
    // By thread index: the union of its spans clipped to the window, split as it is
    // built, on a thread of its own where one can be had (the spans' splits and the
    // unions' do not meet); comm ids of its own.
    let mut union_comms = Comms::default();
    let beside_the_read = handoff::beside_for(source.span_count_hint());
    let mut add_up = |batch: &mut Vec<SpanSplit>| {
        batch.iter().for_each(|split| sums.add(split));
        batch.clear();
    };
    let unions = handoff::handing(beside_the_read, &mut add_up, |hand_splits| {
        unions_beside(
            source,
            &mut |spans, handed| {
                visit(spans, handed)?;
                hand_splits.hand(&mut handed.splits);
                Ok(())
            },
            &slices_of,
            &mut union_comms,
        )
    });
    let mut unions = match unions {
        Err(e) if e.is::<NotOneSpanAFrame>() => return Ok(None),
        unions => unions?,
    };
    let SplitSums {
        stage_on_cpu,
        mut on_cpu_values,
        stage_totals,
    } = sums;
    split_whole_unions(
        &mut unions,
        &slices_of,
        (start, end),
        &mut union_comms,
        source,
    )?;

    on_cpu_exact(&mut on_cpu_values, &slices_of, (start, end), source)?;
    for (stage, values) in on_cpu_values.iter().enumerate() {
        let Some(name) = head.stages.get(stage) else {
            continue;
        };
        let (on, runnable, wall) = stage_totals[stage];
        summary.stages.push(StageSched {
            stage: name.clone(),
            on_cpu: Dist::of_ranked(values),
            on_cpu_ns: on.round() as i64,
            runnable_ns: runnable.round() as i64,
            blocked_ns: (wall as f64 - on - runnable).max(0.0).round() as i64,
        });
    }
    // The worst frames split over: those told, or those found.
    let found_worst = found.is_some();
    let of = match found {
        Some(found) => {
            let (ids, splits) = (found.worst.into_iter())
                .map(|((_, _, frame), split)| (frame, split))
                .unzip();
            worst_split = splits;
            SplitOf {
                worst: ids,
                find_worst: false,
                open: Vec::new(),
                ..of.clone()
            }
        }
        None => of.clone(),
    };
    let worst_split = (of.worst.iter().zip(&worst_split))
        .map(|(&frame, split)| {
            let by = (split.by.iter())
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|&(c, _)| comms.names[c].clone());
            (frame, (split.runnable, by))
        })
        .collect();

    let mut preempted: HashMap<String, f64> = HashMap::new();

    let mut per_thread_stages: HashMap<u32, Vec<StageBusy>> = HashMap::new();
    for (thread, by_stage) in stage_on_cpu.into_iter().enumerate() {
        for (stage, on_cpu) in by_stage.into_iter().enumerate() {
            let Some(on_cpu) = on_cpu else { continue };
            // Sorted below by time, then name: the same rows in any order.
            per_thread_stages
                .entry(thread as u32)
                .or_default()
                .push(StageBusy {
                    stage: head.stages.get(stage).cloned().unwrap_or_default(),
                    busy_ns: on_cpu.round() as i64,
                });
        }
    }
    let mut busy: Vec<Option<(i64, Vec<StageBusy>)>> = vec![None; head.threads.len()];
    for (t, union) in unions.into_iter().enumerate() {
        let Some(Some(slices)) = slices_of.get(t) else {
            continue;
        };
        let Some(all) = union.finish(slices, &mut union_comms) else {
            continue;
        };
        for &(c, ns) in &all.by {
            *preempted.entry(union_comms.names[c].clone()).or_default() += ns;
        }
        let mut per_stage = per_thread_stages.remove(&(t as u32)).unwrap_or_default();
        per_stage.sort_by(|a, b| b.busy_ns.cmp(&a.busy_ns).then(a.stage.cmp(&b.stage)));
        busy[t] = Some((all.on_cpu.round() as i64, per_stage));
    }
    let mut by: Vec<PreemptedBy> = preempted
        .into_iter()
        .map(|(comm, ns)| PreemptedBy {
            comm,
            ns: ns.round() as i64,
        })
        .filter(|p| p.ns > 0)
        .collect();
    by.sort_by_key(|p| (std::cmp::Reverse(p.ns), p.comm.clone()));
    summary.preempted_by = by;

    Ok(Some(Splits {
        summary: Some(summary),
        worst: worst_split,
        busy,
        split: true,
        of,
        found_worst,
    }))
}

/// The error that stops a split told to find the worst frames of a run that is not of one
/// span a frame.
#[derive(Debug)]
struct NotOneSpanAFrame;

impl std::fmt::Display for NotOneSpanAFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the frames are not of one span each")
    }
}

impl std::error::Error for NotOneSpanAFrame {}

impl Splits {
    /// The analysis' busy times rewritten with time on CPU, its worst frames' preemption
    /// and the scheduler's summary.
    pub fn write(self, analysis: &mut Analysis) {
        let Splits {
            summary,
            worst,
            busy,
            split,
            ..
        } = self;
        let Some(mut summary) = summary else {
            return;
        };
        if !split {
            analysis.sched = Some(summary);
            return;
        }
        // The stage table's order.
        summary.stages.sort_by_key(|s| {
            (analysis.stage_names.iter())
                .position(|n| *n == s.stage)
                .unwrap_or(usize::MAX)
        });
        for w in &mut analysis.worst_frames {
            let Some((runnable, by)) = worst.get(&w.frame) else {
                continue;
            };
            if *runnable >= 1.0 {
                w.preempted_ns = Some(runnable.round() as i64);
                w.preempted_by = by.clone();
            }
        }
        let (start, end) = (analysis.window.start_ns, analysis.window.end_ns);
        if let Some(pipeline) = &mut analysis.pipeline {
            let window_ns = (end - start).max(0);
            for row in &mut pipeline.resources {
                let Some((on_cpu, stages)) = row.thread.and_then(|t| busy.get(t as usize)?.clone())
                else {
                    continue;
                };
                row.wall_busy_ns = Some(row.busy_ns);
                row.busy_ns = on_cpu;
                row.busy_pct = if window_ns > 0 {
                    on_cpu as f64 / window_ns as f64 * 100.0
                } else {
                    0.0
                };
                row.stages = stages;
            }
            pipeline.busy_on_cpu = true;
            pipeline
                .resources
                .sort_by_key(|r| std::cmp::Reverse(r.busy_ns));
            pipeline.bottleneck = Bottleneck::of(&pipeline.resources, analysis.frames, window_ns);
        }
        analysis.sched = Some(summary);
    }
}

/// Reads the spans again, splitting each stage's in the window as the first read did (the
/// same slices and densities, so the same values), until each stage's selection of on-CPU
/// times answers its distribution exactly.
fn on_cpu_exact(
    on_cpu: &mut [Selection],
    slices_of: &[Option<&ThreadSlices>],
    (start, end): (i64, i64),
    source: &dyn SpanSource,
) -> anyhow::Result<()> {
    let asked = |r: &dyn Ranked| {
        Dist::of_ranked(r);
    };
    let mut open = false;
    for values in on_cpu.iter_mut() {
        open |= !values.end_pass(&asked)?;
    }
    while open {
        let mut cursors = vec![Cursor::default(); slices_of.len()];
        source.for_each_spans(&mut |spans: &[Span]| {
            for s in spans {
                let Some(Some(slices)) = slices_of.get(s.thread as usize) else {
                    continue;
                };
                if s.start_ns < start || s.end_ns() > end || s.start_ns >= s.end_ns() {
                    continue;
                }
                let Some(values) = on_cpu.get_mut(s.stage as usize) else {
                    continue;
                };
                if values.is_resolved() {
                    continue;
                }
                let cursor = &mut cursors[s.thread as usize];
                let on_cpu = slices.on_cpu_after(s.start_ns, s.end_ns(), cursor);
                values.add(on_cpu.round() as i64);
            }
            Ok(())
        })?;
        open = false;
        for values in on_cpu.iter_mut().filter(|v| !v.is_resolved()) {
            open |= !values.end_pass(&asked)?;
        }
    }
    Ok(())
}

/// One span's split as [`SplitSums`] takes it.
#[derive(Clone, Copy, Debug)]
struct SpanSplit {
    thread: u32,
    stage: u16,
    /// Wholly inside the window: its stage's on-CPU times and totals take it.
    whole_in_window: bool,
    /// Its time on CPU inside the window.
    inside: f64,
    on_cpu: f64,
    runnable: f64,
    dur_ns: i64,
}

/// The sums of the spans' splits, each value added in the spans' order (the f64 sums keep
/// their bits in any thread that takes them in that order).
struct SplitSums {
    /// By thread index, then stage id (both small and dense: no hashing a span): each
    /// stage's time on CPU in the thread's spans clipped to the window, `None` for a stage
    /// without spans there (a stage's spans on one thread rarely overlap: counted in a
    /// note).
    stage_on_cpu: Vec<Vec<Option<f64>>>,
    /// Each stage's on-CPU times, counted into a selection's buckets as the spans are
    /// split; the few values the percentiles need are kept by further reads (holding them
    /// all took 4 bytes a span, issue 29).
    on_cpu_values: Vec<Selection>,
    /// By stage: time on CPU, runnable, wall of its spans wholly in the window.
    stage_totals: Vec<(f64, f64, i64)>,
}

impl SplitSums {
    fn new(threads: usize, stage_count: usize) -> SplitSums {
        SplitSums {
            stage_on_cpu: vec![Vec::new(); threads],
            on_cpu_values: (0..stage_count).map(|_| Selection::default()).collect(),
            stage_totals: vec![(0.0, 0.0, 0); stage_count],
        }
    }

    fn add(&mut self, split: &SpanSplit) {
        let by_stage = &mut self.stage_on_cpu[split.thread as usize];
        let stage = usize::from(split.stage);
        if stage >= by_stage.len() {
            by_stage.resize(stage + 1, None);
        }
        *by_stage[stage].get_or_insert(0.0) += split.inside;
        if split.whole_in_window && stage < self.stage_totals.len() {
            self.on_cpu_values[stage].add(split.on_cpu.round() as i64);
            let t = &mut self.stage_totals[stage];
            t.0 += split.on_cpu;
            t.1 += split.runnable;
            t.2 += split.dur_ns;
        }
    }
}

/// What the split's read hands on of each chunk, in the spans' order.
#[derive(Default)]
struct Handed {
    /// To [`SplitSums`].
    splits: Vec<SpanSplit>,
    /// To the threads' unions: (thread index, from, to), each span clipped to the window,
    /// of threads with slices. Only these, not a copy of the chunk (issue 29: the copy
    /// was 6% of this thread's time at 84M spans).
    pieces: Vec<(u32, i64, i64)>,
}

/// Reads `source` once: each chunk of spans to `visit` here, which leaves the pieces of
/// the threads' unions in [`Handed::pieces`]; those go to the unions (one [`UnionSplit`]
/// per thread index) on another thread where one can be started, else here too
/// (`handoff`, in the order read). The unions, once every span is in them.
fn unions_beside(
    source: &dyn SpanSource,
    visit: &mut dyn FnMut(&[Span], &mut Handed) -> anyhow::Result<()>,
    slices_of: &[Option<&ThreadSlices>],
    comms: &mut Comms,
) -> anyhow::Result<Vec<UnionSplit>> {
    let mut built: Vec<UnionSplit> = (0..slices_of.len())
        .map(|_| UnionSplit::default())
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut take = |pieces: &mut Vec<(u32, i64, i64)>| {
        for &(thread, from, to) in pieces.iter() {
            if let Some(Some(slices)) = slices_of.get(thread as usize) {
                built[thread as usize].add((from, to), slices, comms);
            }
        }
        pieces.clear();
    };
    handoff::handing(cores > 1, &mut take, |hand| {
        let mut handed = Handed::default();
        source.for_each_spans(&mut |spans| {
            visit(spans, &mut handed)?;
            hand.hand(&mut handed.pieces);
            Ok(())
        })
    })?;
    Ok(built)
}

/// By slice: the latest end of it and the slices before it.
fn ends_by(slices: &[SchedSlice]) -> Vec<i64> {
    (slices.iter())
        .scan(i64::MIN, |latest, s| {
            *latest = (*latest).max(s.start_ns.saturating_add(s.dur_ns));
            Some(*latest)
        })
        .collect()
}

fn index(timeline: &SchedTimeline) -> HashMap<u32, ThreadSlices<'_>> {
    let mut out = HashMap::new();
    let slices = &timeline.slices;
    let mut at = 0;
    while at < slices.len() {
        let tid = slices[at].tid;
        let len = slices[at..].iter().take_while(|s| s.tid == tid).count();
        let mine = &slices[at..at + len];
        out.insert(
            tid,
            ThreadSlices {
                slices: mine,
                ends_by: ends_by(mine),
                density: vec![1.0; mine.len()],
            },
        );
        at += len;
    }
    out
}

/// A coarse slice (schedstat: totals between two readings) says how long the thread was on
/// a CPU or runnable, not when. Spread evenly, a thread that works in its spans and sleeps
/// between them would get only its average share inside them (31% busy for a thread whose
/// process used 57%). Its spans are where it works: the thread's active time (on CPU and
/// runnable) goes to the part of the slice its spans cover first, up to that part's length,
/// and the rest to the part they do not.
fn spans_first(
    by_tid: &mut HashMap<u32, ThreadSlices<'_>>,
    head: &Run,
    source: &dyn SpanSource,
) -> anyhow::Result<()> {
    // One coverage per tid with slices; threads of the run by index to theirs.
    let mut tids: Vec<u32> = Vec::new();
    let coverage_of: Vec<Option<usize>> = (head.threads.iter())
        .map(|t| {
            by_tid.contains_key(&t.tid).then(|| {
                (tids.iter().position(|&tid| tid == t.tid)).unwrap_or_else(|| {
                    tids.push(t.tid);
                    tids.len() - 1
                })
            })
        })
        .collect();
    let mut coverage: Vec<Coverage> = (tids.iter())
        .map(|tid| Coverage::new(by_tid[tid].slices.len()))
        .collect();
    // Looked up once, not hashed for every span.
    let slices: Vec<&ThreadSlices> = tids.iter().map(|tid| &by_tid[tid]).collect();
    source.for_each_spans(&mut |spans: &[Span]| {
        for s in spans {
            let Some(&Some(c)) = coverage_of.get(s.thread as usize) else {
                continue;
            };
            coverage[c].add((s.start_ns, s.end_ns()), slices[c]);
        }
        Ok(())
    })?;
    drop(slices);
    // Threads whose spans reached back past what was counted: their whole union, from
    // another read.
    let mut whole: Vec<Option<Vec<(i64, i64)>>> = (coverage.iter())
        .map(|c| c.union.broken.then(Vec::new))
        .collect();
    if whole.iter().any(Option::is_some) {
        source.for_each_spans(&mut |spans: &[Span]| {
            for s in spans {
                if let Some(&Some(c)) = coverage_of.get(s.thread as usize) {
                    if let Some(union) = &mut whole[c] {
                        add_to_union(union, (s.start_ns, s.end_ns()));
                    }
                }
            }
            Ok(())
        })?;
    }
    for ((tid, mut c), union) in tids.iter().zip(coverage).zip(whole) {
        let Some(thread) = by_tid.get_mut(tid) else {
            continue;
        };
        match union {
            Some(union) => c.covered = covered_by(thread.slices, &union),
            None => c.finish(thread),
        }
        for ((slice, density), &covered) in (thread.slices.iter())
            .zip(&mut thread.density)
            .zip(&c.covered)
        {
            let active = (slice.on_cpu_ns + slice.runnable_ns) as f64;
            if covered > 0 && active > 0.0 {
                // Inside the spans: min(active, covered) over `covered`, against the
                // slice's average of active over its length.
                let inside = active.min(covered as f64) / covered as f64;
                *density = inside / (active / slice.dur_ns as f64);
            }
        }
    }
    Ok(())
}

/// How much of each of a thread's slices its spans cover, counted as the union of its
/// spans is built ([`RecentUnion`]): the whole union is never held.
struct Coverage {
    union: RecentUnion,
    /// By slice.
    covered: Vec<i64>,
    cursor: Cursor,
}

impl Coverage {
    fn new(slices: usize) -> Coverage {
        Coverage {
            union: RecentUnion::default(),
            covered: vec![0; slices],
            cursor: Cursor::default(),
        }
    }

    fn add(&mut self, span: (i64, i64), thread: &ThreadSlices) {
        let (covered, cursor) = (&mut self.covered, &mut self.cursor);
        (self.union).add(span, |interval| cover(thread, interval, cursor, covered));
    }

    fn finish(&mut self, thread: &ThreadSlices) {
        let (covered, cursor) = (&mut self.covered, &mut self.cursor);
        (self.union).finish(|interval| cover(thread, interval, cursor, covered));
    }
}

/// Adds the part of each slice that `[from, to)` (an interval of the union) covers.
fn cover(thread: &ThreadSlices, (from, to): (i64, i64), cursor: &mut Cursor, covered: &mut [i64]) {
    let first = thread.first_from(from, cursor);
    for (slice, c) in thread.slices[first..].iter().zip(&mut covered[first..]) {
        if slice.start_ns >= to {
            break;
        }
        let inside = (slice.start_ns + slice.dur_ns).min(to) - slice.start_ns.max(from);
        if inside > 0 {
            *c += inside;
        }
    }
}

/// [`cover`] of a whole union held in memory, slice by slice.
fn covered_by(slices: &[SchedSlice], union: &[(i64, i64)]) -> Vec<i64> {
    (slices.iter())
        .map(|slice| {
            let (from, to) = (slice.start_ns, slice.start_ns + slice.dur_ns);
            let first = union.partition_point(|&(_, end)| end <= from);
            (union[first..].iter())
                .take_while(|&&(start, _)| start < to)
                .map(|&(start, end)| end.min(to) - start.max(from))
                .filter(|&d| d > 0)
                .sum()
        })
        .collect()
}

/// A thread's union of spans as it is built: the intervals its later spans can no longer
/// touch are handed on (in order, as the whole union's would be) and dropped, so only the
/// last few are held, where the whole union took 16 bytes an interval, one a span where
/// spans do not touch (issue 29).
#[derive(Default)]
struct RecentUnion {
    /// The union's latest intervals, sorted and disjoint, not handed on yet.
    recent: Vec<(i64, i64)>,
    /// The end of the last interval handed on.
    done_to: Option<i64>,
    any: bool,
    /// A span reached back to an interval already handed on: the union is built whole by
    /// another read of the spans.
    broken: bool,
}

/// Intervals held before the oldest are handed on, and how many are then.
const RECENT_INTERVALS: usize = 64;

impl RecentUnion {
    /// Adds `span`, handing the intervals that are done to `done`.
    fn add(&mut self, span: (i64, i64), mut done: impl FnMut((i64, i64))) {
        self.any = true;
        if self.broken {
            return;
        }
        if self.done_to.is_some_and(|end| span.0 <= end) {
            self.broken = true;
            self.recent = Vec::new();
            return;
        }
        add_to_union(&mut self.recent, span);
        if self.recent.len() >= 2 * RECENT_INTERVALS {
            for &interval in &self.recent[..RECENT_INTERVALS] {
                done(interval);
                self.done_to = Some(interval.1);
            }
            self.recent.drain(..RECENT_INTERVALS);
        }
    }

    /// Hands on the intervals left.
    fn finish(&mut self, done: impl FnMut((i64, i64))) {
        self.recent.drain(..).for_each(done);
    }
}

/// A thread's union split by the scheduler as it is built.
#[derive(Default)]
struct UnionSplit {
    union: RecentUnion,
    /// The split of the intervals handed on so far.
    all: Split,
    cursor: Cursor,
}

impl UnionSplit {
    fn add(&mut self, span: (i64, i64), slices: &ThreadSlices, comms: &mut Comms) {
        let (all, cursor) = (&mut self.all, &mut self.cursor);
        (self.union).add(span, |(from, to)| {
            slices.split_after(from, to, cursor, comms, all)
        });
    }

    fn broken(&self) -> bool {
        self.union.broken
    }

    /// The split of the whole union; `None` when no span was added.
    fn finish(mut self, slices: &ThreadSlices, comms: &mut Comms) -> Option<Split> {
        if !self.union.any {
            return None;
        }
        let (all, cursor) = (&mut self.all, &mut self.cursor);
        (self.union).finish(|(from, to)| slices.split_after(from, to, cursor, comms, all));
        Some(self.all)
    }
}

/// The unions whose spans did not come in an order [`UnionSplit`] could follow, built
/// whole from another read of the spans and split.
fn split_whole_unions(
    unions: &mut [UnionSplit],
    slices_of: &[Option<&ThreadSlices>],
    (start, end): (i64, i64),
    comms: &mut Comms,
    source: &dyn SpanSource,
) -> anyhow::Result<()> {
    let mut whole: Vec<Option<Vec<(i64, i64)>>> =
        (unions.iter()).map(|u| u.broken().then(Vec::new)).collect();
    if whole.iter().all(Option::is_none) {
        return Ok(());
    }
    source.for_each_spans(&mut |spans: &[Span]| {
        for s in spans {
            let Some(Some(union)) = whole.get_mut(s.thread as usize) else {
                continue;
            };
            if !matches!(slices_of.get(s.thread as usize), Some(Some(_))) {
                continue;
            }
            let (from, to) = (s.start_ns.max(start), s.end_ns().min(end));
            if from < to {
                add_to_union(union, (from, to));
            }
        }
        Ok(())
    })?;
    for ((u, union), slices) in unions.iter_mut().zip(whole).zip(slices_of) {
        let (Some(union), Some(slices)) = (union, slices) else {
            continue;
        };
        u.all = Split::default();
        let mut cursor = Cursor::default();
        for &(from, to) in &union {
            slices.split_after(from, to, &mut cursor, comms, &mut u.all);
        }
        u.union = RecentUnion {
            any: true,
            ..RecentUnion::default()
        };
    }
    Ok(())
}

/// Adds `[from, to)` to a union kept sorted and disjoint. Spans of a thread come nearly in
/// start order, so this is almost always an append or an extension of the last interval;
/// only the union's intervals are held, not the spans (back-to-back stages make one).
fn add_to_union(union: &mut Vec<(i64, i64)>, (from, to): (i64, i64)) {
    match union.last_mut() {
        Some(last) if from >= last.0 => {
            if from <= last.1 {
                last.1 = last.1.max(to);
            } else {
                union.push((from, to));
            }
        }
        None => union.push((from, to)),
        Some(_) => {
            // Out of order: merge in every interval it touches.
            let first = union.partition_point(|&(_, end)| end < from);
            let last = union.partition_point(|&(start, _)| start <= to);
            if first >= last {
                union.insert(first, (from, to));
            } else {
                let merged = (from.min(union[first].0), to.max(union[last - 1].1));
                union.splice(first..last, [merged]);
            }
        }
    }
}

#[cfg(test)]
mod union_tests {
    use super::*;

    #[test]
    fn spans_in_any_order_make_one_sorted_disjoint_union() {
        let mut u = Vec::new();
        for span in [
            (10, 20),
            (20, 25),
            (30, 40),
            (5, 8),
            (7, 12),
            (50, 60),
            (35, 55),
        ] {
            add_to_union(&mut u, span);
        }
        assert_eq!(u, vec![(5, 25), (30, 60)]);
    }

    /// Slices of 7 ns, on a CPU for 5 of them, runnable behind `hog` or `other` for 2.
    fn slices() -> Vec<SchedSlice> {
        (0..2000)
            .map(|k| SchedSlice {
                tid: 1,
                start_ns: k * 7,
                dur_ns: 7,
                on_cpu_ns: 5,
                runnable_ns: 2,
                by: if k % 3 == 0 { "hog" } else { "other" }.into(),
            })
            .collect()
    }

    #[test]
    fn a_long_slice_does_not_make_later_spans_walk_back_over_every_slice() {
        // A thread asleep 1 ms, then on a CPU 10 ns every µs.
        let mut slices = vec![SchedSlice {
            tid: 1,
            start_ns: 0,
            dur_ns: 1_000_000,
            ..SchedSlice::default()
        }];
        slices.extend((0..1000).map(|k| SchedSlice {
            tid: 1,
            start_ns: 1_000_000 + k * 1000,
            dur_ns: 10,
            on_cpu_ns: 10,
            ..SchedSlice::default()
        }));
        let thread = ThreadSlices {
            slices: &slices,
            ends_by: ends_by(&slices),
            density: vec![1.0; slices.len()],
        };
        // The first slice that can overlap 1.9 ms is the 900th short one, with or without
        // a cursor, not the first after the long slice.
        assert_eq!(thread.first_from(1_900_000, &mut Cursor::default()), 901);
        let mut cursor = Cursor::default();
        assert_eq!(thread.first_from(1_500_005, &mut cursor), 501);
        assert_eq!(thread.first_from(1_900_000, &mut cursor), 901);
        // The same split as every slice looked at.
        let mut comms = Comms::default();
        let mut split = Split::default();
        thread.split(1_899_995, 1_900_005, &mut comms, &mut split);
        assert_eq!(split.on_cpu, 5.0);
    }

    #[test]
    fn a_union_split_as_it_is_built_is_the_whole_union_split() {
        // Spans nested and out of order within a few intervals (followed), then one that
        // reaches back past the intervals already split (built whole again).
        let slices = slices();
        let thread = ThreadSlices {
            slices: &slices,
            ends_by: ends_by(&slices),
            density: vec![1.0; slices.len()],
        };
        let mut spans: Vec<(i64, i64)> = Vec::new();
        for k in 0..600i64 {
            let t = k * 20;
            spans.extend([(t + 3, t + 6), (t, t + 9), (t + 12, t + 15)]);
        }
        let whole_split = |spans: &[(i64, i64)], comms: &mut Comms| {
            let mut union = Vec::new();
            for &span in spans {
                add_to_union(&mut union, span);
            }
            let mut all = Split::default();
            for &(from, to) in &union {
                thread.split(from, to, comms, &mut all);
            }
            all
        };
        let names = |split: &Split, comms: &Comms| -> Vec<(String, f64)> {
            let mut by: Vec<(String, f64)> = (split.by.iter())
                .map(|&(c, ns)| (comms.names[c].clone(), ns))
                .collect();
            by.sort_by(|a, b| a.0.cmp(&b.0));
            by
        };
        let mut comms = Comms::default();
        let mut union = UnionSplit::default();
        for &span in &spans {
            union.add(span, &thread, &mut comms);
        }
        assert!(!union.broken());
        let streamed = union.finish(&thread, &mut comms).unwrap();
        let whole = whole_split(&spans, &mut comms);
        assert_eq!(streamed.on_cpu, whole.on_cpu);
        assert_eq!(streamed.runnable, whole.runnable);
        assert_eq!(names(&streamed, &comms), names(&whole, &comms));

        let mut late = UnionSplit::default();
        for &span in spans.iter().chain([(1, 2)].iter()) {
            late.add(span, &thread, &mut comms);
        }
        assert!(
            late.broken(),
            "a span before the intervals split is noticed"
        );
        assert!(UnionSplit::default().finish(&thread, &mut comms).is_none());
    }
}
#[cfg(test)]
mod coverage_tests {
    use super::*;
    use crate::model::ThreadInfo;

    /// The densities `spans_first` gives, against those of the whole union held at once.
    fn densities_match(spans: Vec<Span>) {
        let slices: Vec<SchedSlice> = (0..400)
            .map(|k| SchedSlice {
                tid: 7,
                start_ns: k * 50,
                dur_ns: 50,
                on_cpu_ns: 20 + k % 7,
                runnable_ns: 5,
                by: String::new(),
            })
            .collect();
        let timeline = SchedTimeline {
            source: SchedSource::Schedstat,
            resolution_ns: 50,
            slices,
            ..SchedTimeline::default()
        };
        let run = Run {
            threads: vec![ThreadInfo {
                tid: 7,
                ..ThreadInfo::default()
            }],
            spans,
            ..Run::default()
        };
        let mut by_tid = index(&timeline);
        spans_first(&mut by_tid, &run, &run).unwrap();
        let mut union = Vec::new();
        for s in &run.spans {
            add_to_union(&mut union, (s.start_ns, s.end_ns()));
        }
        let thread = &by_tid[&7];
        let covered = covered_by(thread.slices, &union);
        for ((slice, &density), covered) in thread.slices.iter().zip(&thread.density).zip(covered) {
            let active = (slice.on_cpu_ns + slice.runnable_ns) as f64;
            let expected = match covered > 0 {
                true => active.min(covered as f64) / covered as f64 / (active / 50.0),
                false => 1.0,
            };
            assert_eq!(density, expected, "slice at {}", slice.start_ns);
        }
    }

    fn span(start_ns: i64, dur_ns: i64) -> Span {
        Span {
            start_ns,
            dur_ns,
            ..Span::default()
        }
    }

    #[test]
    fn slices_covered_as_the_union_is_built_are_covered_as_by_the_whole_union() {
        // Spans a few ns apart and across slices, some nested or a little late (followed).
        let mut spans = Vec::new();
        for k in 0..1500i64 {
            let t = k * 13;
            spans.push(span(t + 4, 3));
            spans.push(span(t, 9));
        }
        densities_match(spans.clone());
        // One reaching back past the intervals counted: the whole union is read again.
        spans.push(span(2, 30));
        densities_match(spans);
    }
}

#[cfg(test)]
mod tests {
    use crate::analyze::analyze;
    use crate::analyze::fixtures::reference_run;
    use crate::sched::{SchedSlice, SchedSource, SchedTimeline};

    const MS: i64 = 1_000_000;

    /// The reference run's encode thread (tid 201) runs the first 2 ms of each of its spans
    /// and waits for a CPU held by `hog` for the rest.
    fn preempted_run() -> crate::model::Run {
        let mut run = reference_run();
        let mut slices = Vec::new();
        for s in run.spans.iter().filter(|s| s.thread == 1) {
            slices.push(SchedSlice {
                tid: 201,
                start_ns: s.start_ns,
                dur_ns: 2 * MS,
                on_cpu_ns: 2 * MS,
                runnable_ns: 0,
                by: String::new(),
            });
            slices.push(SchedSlice {
                tid: 201,
                start_ns: s.start_ns + 2 * MS,
                dur_ns: s.dur_ns - 2 * MS,
                on_cpu_ns: 0,
                runnable_ns: s.dur_ns - 2 * MS,
                by: "hog".into(),
            });
        }
        run.sched = Some(crate::analyze::fixtures::traced(slices));
        run
    }

    #[test]
    fn a_preempted_thread_is_busy_only_for_its_time_on_cpu() {
        let wall = analyze(&reference_run());
        let a = analyze(&preempted_run());
        let p = a.pipeline.as_ref().unwrap();
        assert!(p.busy_on_cpu);
        let encode = p.resources.iter().find(|r| r.thread == Some(1)).unwrap();
        // Frames 2 to 9 have their encode span inside the 20-100 ms window: 2 ms each.
        assert_eq!(encode.busy_ns, 8 * 2 * MS);
        let wall_encode = (wall.pipeline.as_ref().unwrap().resources.iter())
            .find(|r| r.thread == Some(1))
            .unwrap();
        assert_eq!(encode.wall_busy_ns, Some(wall_encode.busy_ns));
        assert!((encode.busy_pct - 20.0).abs() < 1e-9, "{}", encode.busy_pct);
        // The bound is the encoder's time on CPU, not its spans' wall time.
        let b = p.bottleneck.as_ref().unwrap();
        assert_eq!(b.stage, "encode");
        assert!((b.busy_pct - 20.0).abs() < 1e-9);
        assert!((b.fps_bound - a.frames as f64 / 0.016).abs() < 1e-6);
        let s = a.sched.as_ref().unwrap();
        let e = s.stages.iter().find(|s| s.stage == "encode").unwrap();
        assert_eq!(e.on_cpu.as_ref().unwrap().p50_ns, 2.0 * MS as f64);
        assert_eq!(s.preempted_by[0].comm, "hog");
        let frame6 = a.worst_frames.iter().find(|w| w.frame == 6).unwrap();
        assert_eq!(frame6.preempted_ns, Some(13 * MS));
        assert_eq!(frame6.preempted_by.as_deref(), Some("hog"));
    }

    #[test]
    fn a_run_without_a_timeline_keeps_the_union_of_its_spans() {
        let a = analyze(&reference_run());
        assert!(a.sched.is_none());
        assert!(!a.pipeline.unwrap().busy_on_cpu);
    }

    /// The schedstat fallback's slices are totals over an interval: the thread's active
    /// time goes to its spans first (`spans_first`), split as the interval's totals are.
    #[test]
    fn a_coarse_slice_is_shared_by_the_spans_it_covers() {
        let mut run = reference_run();
        // One 100 ms reading interval for the encode thread: 40 ms on CPU, 10 ms waiting.
        run.sched = Some(SchedTimeline {
            source: SchedSource::Schedstat,
            resolution_ns: 100 * MS,
            slices: vec![SchedSlice {
                tid: 201,
                start_ns: 0,
                dur_ns: 100 * MS,
                on_cpu_ns: 40 * MS,
                runnable_ns: 10 * MS,
                by: String::new(),
            }],
            ..SchedTimeline::default()
        });
        let a = analyze(&run);
        let encode = (a.pipeline.as_ref().unwrap().resources.iter())
            .find(|r| r.thread == Some(1))
            .unwrap();
        // Its spans cover 60 ms of the interval (50 ms of them in the window), more than its
        // 50 ms of activity: 50/60 of their time was active, on CPU for 40 of every 50 ms.
        let wall = encode.wall_busy_ns.unwrap();
        assert_eq!(wall, 50 * MS);
        assert_eq!(
            encode.busy_ns,
            (wall as f64 * 50.0 / 60.0 * 0.8).round() as i64
        );
    }
}

#[cfg(test)]
mod on_cpu_tests {
    //! Each stage's on-CPU distribution against that of all its values held and sorted (as
    //! the split kept them before issue 29). The library's selections keep 4 values at
    //! most: every set here is read again, and its buckets split, pass after pass.

    use super::*;
    use crate::analyze::analyze;
    use crate::analyze::fixtures::xorshift;
    use crate::model::{EndReason, RunMeta, ThreadInfo};

    const US: i64 = 1_000;

    /// One thread, a span every 20 µs: span k of stage `stage(k)`, lasting `dur(k)`,
    /// on a CPU for `on_cpu(k)` of it and runnable for the rest (one tracepoint slice
    /// each, so each span's on-CPU time is exactly `on_cpu(k)`), then idle.
    fn run_of(
        spans: u64,
        stage: impl Fn(u64) -> u16,
        dur: impl Fn(u64) -> i64,
        on_cpu: impl Fn(u64) -> i64,
    ) -> Run {
        let mut run = Run {
            meta: RunMeta {
                name: "sched".into(),
                window_start_ns: 100 * US,
                window_end_ns: spans as i64 * 20 * US - 100 * US,
                end_reason: EndReason::Duration,
                ..RunMeta::default()
            },
            stages: vec!["work".into(), "rare".into()],
            threads: vec![ThreadInfo {
                pid: 1,
                tid: 11,
                name: "main".into(),
                dropped: 0,
            }],
            ..Run::default()
        };
        let mut slices = Vec::new();
        for k in 0..spans {
            let start_ns = k as i64 * 20 * US;
            let (dur_ns, on) = (dur(k), on_cpu(k));
            run.spans.push(Span {
                frame: k,
                stage: stage(k),
                thread: 0,
                start_ns,
                dur_ns,
            });
            slices.push(SchedSlice {
                tid: 11,
                start_ns,
                dur_ns,
                on_cpu_ns: on,
                runnable_ns: dur_ns - on,
                by: if k % 2 == 0 { "hog" } else { "" }.into(),
            });
        }
        run.sched = Some(crate::analyze::fixtures::traced(slices));
        run
    }

    /// The on-CPU times of each stage's spans inside the window, as the split gives them
    /// span by span, sorted and summarised (what `apply` kept and sorted before).
    fn held_and_sorted(run: &Run, window: (i64, i64)) -> Vec<(String, Option<Dist>)> {
        let timeline = run.sched.as_ref().unwrap();
        let mut by_tid = index(timeline);
        if timeline.resolution_ns > 1 {
            spans_first(&mut by_tid, run, run).unwrap();
        }
        let mut values: Vec<Vec<i64>> = vec![Vec::new(); run.stages.len()];
        let mut comms = Comms::default();
        for s in &run.spans {
            let tid = run.threads[s.thread as usize].tid;
            let in_window = s.start_ns >= window.0 && s.end_ns() <= window.1;
            if !in_window || s.dur_ns <= 0 {
                continue;
            }
            let mut split = Split::default();
            by_tid[&tid].split(s.start_ns, s.end_ns(), &mut comms, &mut split);
            values[s.stage as usize].push(split.on_cpu.round() as i64);
        }
        (run.stages.iter().cloned())
            .zip(values.iter_mut().map(|v| Dist::from_unsorted(v)))
            .collect()
    }

    /// `apply`'s distributions are those of the values held and sorted; the analysis.
    fn same_as_held(label: &str, run: &Run) -> Analysis {
        let a = analyze(run);
        let window = (a.window.start_ns, a.window.end_ns);
        let summary = a.sched.as_ref().unwrap();
        for (stage, expected) in held_and_sorted(run, window) {
            let row = (summary.stages.iter()).find(|s| s.stage == stage);
            let got = row.and_then(|r| r.on_cpu.clone());
            assert_eq!(got, expected, "{label}: stage {stage}");
        }
        a
    }

    #[test]
    fn on_cpu_percentiles_are_those_of_every_value_held() {
        let work = |_| 0;
        let a = same_as_held("all equal", &run_of(3000, work, |_| 9 * US, |_| 7 * US));
        let d = a.sched.unwrap().stages[0].on_cpu.clone().unwrap();
        assert_eq!((d.min_ns, d.p99_ns, d.max_ns), (7e3, 7e3, 7e3));
        // 2000 spans in the window or so: p99 and p50 fall inside long runs of ties.
        same_as_held(
            "ties at the rank boundary",
            &run_of(
                2100,
                work,
                |_| 9 * US,
                |k| match k % 100 {
                    0 => 8 * US,
                    1..=49 => 5 * US,
                    _ => 5 * US + 1,
                },
            ),
        );
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let spread: Vec<i64> = (0..4000)
            .map(|_| (next() % (19 * US as u64)) as i64)
            .collect();
        same_as_held(
            "spread",
            &run_of(4000, work, |_| 19 * US, |k| spread[k as usize]),
        );
        same_as_held(
            "two clusters",
            &run_of(
                3000,
                work,
                |_| 19 * US,
                |k| match k % 3 {
                    0 => 100 + spread[k as usize] % 50,
                    _ => 15 * US + spread[k as usize] % 4000,
                },
            ),
        );
        same_as_held("never on a CPU", &run_of(500, work, |_| 9 * US, |_| 0));
    }

    #[test]
    fn a_stage_of_one_span_and_a_stage_of_none_keep_their_rows() {
        // Stage "rare" has one span in the window; in the second run, none.
        let a = same_as_held(
            "one span",
            &run_of(1000, |k| u16::from(k == 500), |_| 9 * US, |k| k as i64 * 7),
        );
        let rare = (a.sched.as_ref().unwrap().stages.iter())
            .find(|s| s.stage == "rare")
            .unwrap();
        let d = rare.on_cpu.clone().unwrap();
        assert_eq!((d.count, d.p50_ns), (1, 3500.0));
        let a = same_as_held(
            "none",
            &run_of(1000, |k| u16::from(k == 1), |_| 9 * US, |k| k as i64),
        );
        let rare = (a.sched.as_ref().unwrap().stages.iter())
            .find(|s| s.stage == "rare")
            .unwrap();
        assert_eq!(rare.on_cpu, None, "its only span is in the warmup");
    }

    #[test]
    fn coarse_slices_give_the_values_held_too() {
        // Schedstat readings every 50 µs, shared by the spans they cover (`spans_first`):
        // fractional splits, rounded as they were.
        let mut run = run_of(
            3000,
            |k| (k % 2) as u16,
            |k| 3 * US + (k as i64 * 37) % (15 * US),
            |_| 0,
        );
        let slices = (0..1200)
            .map(|k| SchedSlice {
                tid: 11,
                start_ns: k * 50 * US,
                dur_ns: 50 * US,
                on_cpu_ns: 20 * US + (k * 7919) % (25 * US),
                runnable_ns: 3 * US,
                by: String::new(),
            })
            .collect();
        run.sched = Some(SchedTimeline {
            source: SchedSource::Schedstat,
            resolution_ns: 50 * US,
            slices,
            ..SchedTimeline::default()
        });
        same_as_held("schedstat", &run);
    }
}

#[cfg(test)]
mod sums_tests {
    //! The sums of the spans' splits, taken on a thread beside the read in a long one, are
    //! those of each span's split added up in the run's order.

    use super::*;
    use crate::model::{CounterValue, RunMeta, ThreadInfo};

    const US: i64 = 1_000;

    /// `run`'s spans with another count to expect: under `handoff::BESIDE_FROM_SPANS` the
    /// split's sums are taken on the reading thread.
    struct Hinted<'a> {
        run: &'a Run,
        hint: usize,
    }

    impl SpanSource for Hinted<'_> {
        fn span_count_hint(&self) -> usize {
            self.hint
        }

        fn for_each_spans(
            &self,
            sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
        ) -> anyhow::Result<()> {
            self.run.for_each_spans(sink)
        }

        fn for_each_counters(
            &self,
            sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
        ) -> anyhow::Result<()> {
            self.run.for_each_counters(sink)
        }
    }

    /// Two threads, three stages, spans of random lengths that start and end inside
    /// slices of 7 µs, each slice on a CPU for a random part of it and runnable for some
    /// of the rest: every span's split is a sum of fractions.
    fn run(spans: u64) -> Run {
        let mut random = crate::analyze::fixtures::below(0x9e37_79b9_7f4a_7c15);
        let mut next = move |bound: i64| random(bound as u64) as i64;
        let end_ns = spans as i64 * 10 * US;
        let mut run = Run {
            meta: RunMeta {
                window_start_ns: 50 * US,
                window_end_ns: end_ns - 50 * US,
                ..RunMeta::default()
            },
            stages: vec!["a".into(), "b".into(), "c".into()],
            threads: (0..2)
                .map(|t| ThreadInfo {
                    pid: 1,
                    tid: 10 + t,
                    name: format!("t{t}"),
                    dropped: 0,
                })
                .collect(),
            ..Run::default()
        };
        let mut slices = Vec::new();
        for tid in [10, 11] {
            for k in 0..end_ns / (7 * US) + 1 {
                let on_cpu_ns = next(7 * US);
                slices.push(SchedSlice {
                    tid,
                    start_ns: k * 7 * US,
                    dur_ns: 7 * US,
                    on_cpu_ns,
                    runnable_ns: next(7 * US - on_cpu_ns + 1),
                    by: if k % 3 == 0 { "hog" } else { "" }.into(),
                });
            }
        }
        for k in 0..spans {
            run.spans.push(Span {
                frame: k,
                stage: (k % 3) as u16,
                thread: (k % 2) as u32,
                start_ns: k as i64 * 10 * US + next(3 * US),
                dur_ns: 1 + next(15 * US),
            });
        }
        run.sched = Some(crate::analyze::fixtures::traced(slices));
        run
    }

    /// By stage: on CPU, runnable and blocked ns of its spans wholly in the window; by
    /// thread and stage: time on CPU of its spans clipped to it. Each span split alone,
    /// the sums in the run's order.
    type Expected = (Vec<(i64, i64, i64)>, Vec<Vec<(String, i64)>>);

    fn added_up_in_order(run: &Run, (start, end): (i64, i64)) -> Expected {
        let by_tid = index(run.sched.as_ref().unwrap());
        let mut comms = Comms::default();
        let mut totals = vec![(0.0, 0.0, 0i64); run.stages.len()];
        let mut busy = vec![vec![None::<f64>; run.stages.len()]; run.threads.len()];
        for s in &run.spans {
            let slices = &by_tid[&run.threads[s.thread as usize].tid];
            let (from, to) = (s.start_ns.max(start), s.end_ns().min(end));
            if from >= to {
                continue;
            }
            let (mut whole, mut inside) = (Split::default(), Split::default());
            slices.split(s.start_ns, s.end_ns(), &mut comms, &mut whole);
            slices.split(from, to, &mut comms, &mut inside);
            *busy[s.thread as usize][s.stage as usize].get_or_insert(0.0) += inside.on_cpu;
            if s.start_ns >= start && s.end_ns() <= end {
                let t = &mut totals[s.stage as usize];
                t.0 += whole.on_cpu;
                t.1 += whole.runnable;
                t.2 += s.dur_ns;
            }
        }
        let totals = (totals.into_iter())
            .map(|(on, runnable, wall)| {
                let blocked = (wall as f64 - on - runnable).max(0.0);
                (
                    on.round() as i64,
                    runnable.round() as i64,
                    blocked.round() as i64,
                )
            })
            .collect();
        let busy = (busy.into_iter())
            .map(|by_stage| {
                let mut rows: Vec<(String, i64)> = (by_stage.into_iter().enumerate())
                    .filter_map(|(k, ns)| Some((run.stages[k].clone(), ns?.round() as i64)))
                    .collect();
                rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                rows
            })
            .collect();
        (totals, busy)
    }

    fn split_by(run: &Run, hint: usize) -> Expected {
        let source = Hinted { run, hint };
        let window = (run.meta.window_start_ns, run.meta.window_end_ns);
        let of = SplitOf {
            window,
            stage_count: run.stages.len(),
            worst: Vec::new(),
            find_worst: false,
            open: Vec::new(),
        };
        let prepared = prepare(run, &source).unwrap();
        let splits = split(run, &prepared, &of, &source).unwrap().unwrap();
        let summary = splits.summary.unwrap();
        let totals = (summary.stages.iter())
            .map(|s| (s.on_cpu_ns, s.runnable_ns, s.blocked_ns))
            .collect();
        let busy = (splits.busy.into_iter())
            .map(|b| {
                let (_, stages) = b.unwrap();
                stages.into_iter().map(|s| (s.stage, s.busy_ns)).collect()
            })
            .collect();
        (totals, busy)
    }

    #[test]
    fn sums_taken_beside_the_split_are_each_spans_split_added_up_in_order() {
        let spans = 3 * handoff::BESIDE_FROM_SPANS as u64 + 17;
        let run = run(spans);
        let window = (run.meta.window_start_ns, run.meta.window_end_ns);
        let expected = added_up_in_order(&run, window);
        assert!(expected
            .0
            .iter()
            .all(|&(on, runnable, _)| on > 0 && runnable > 0));
        assert_eq!(split_by(&run, run.spans.len()), expected, "beside the read");
        assert_eq!(split_by(&run, 1), expected, "on the reading thread");
    }
}
