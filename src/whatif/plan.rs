//! Which resource runs each stage: as recorded (by thread), or changed by `--depth`,
//! `--move` and `--stage-scale`.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use anyhow::{bail, Result};

use super::model::Task;
use super::recorded::FrameSpans;
use super::recorded::ReplayFrames;
use super::Schedule;
use crate::analyze::pipeline::waits::StageSpan;
use crate::analyze::stages::stage_name;

/// What to change, as asked on the command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// Frames in flight, the stages split over this many threads.
    pub depth: Option<usize>,
    /// `(stage, factor)`: its durations multiplied.
    pub scales: Vec<(String, f64)>,
    /// `(stage, thread)`: the stage runs on that thread (a new one when no thread has that
    /// name).
    pub moves: Vec<(String, String)>,
    /// Frames start as soon as they can, the pacer left out.
    pub unpaced: bool,
}

impl Changes {
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self.depth.iter().map(|d| format!("depth {d}")).collect();
        out.extend(self.scales.iter().map(|(s, f)| format!("{s} × {f}")));
        out.extend(self.moves.iter().map(|(s, t)| format!("{s} on {t}")));
        if self.unpaced {
            out.push("no pacer".into());
        }
        out
    }
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub depth: usize,
    pub resource_names: Vec<String>,
    /// Resources that are queues the program named (a GPU stream): `--depth` leaves their
    /// stages on them.
    queues: BTreeSet<usize>,
    thread_resource: BTreeMap<u32, usize>,
    /// Stages placed by a change, whatever thread recorded them.
    stage_resource: BTreeMap<u16, usize>,
    scales: BTreeMap<u16, f64>,
    /// Stages in the order they run in a frame (mean start offset).
    stage_order: Vec<u16>,
    /// Mean time per frame of each stage of `stage_order`.
    stage_mean_ns: Vec<f64>,
    /// (stage, thread) pairs recorded.
    placements: BTreeSet<(u16, u32)>,
    /// The pacer's own stage: it runs on the thread that starts each frame.
    pace: Option<u16>,
}

impl Plan {
    /// What turns a frame's spans into its tasks, looked up by index.
    pub fn tasks(&self) -> TaskMaker {
        let by_stage = |keys: Option<&u16>| keys.map_or(0, |&k| usize::from(k) + 1);
        let mut scales = vec![None; by_stage(self.scales.keys().next_back())];
        for (&stage, &scale) in &self.scales {
            scales[usize::from(stage)] = Some(scale);
        }
        let mut stage_resource = vec![None; by_stage(self.stage_resource.keys().next_back())];
        for (&stage, &r) in &self.stage_resource {
            stage_resource[usize::from(stage)] = Some(r);
        }
        let threads = self
            .thread_resource
            .keys()
            .next_back()
            .map_or(0, |&t| t as usize + 1);
        let mut thread_resource = vec![0; threads];
        for (&thread, &r) in &self.thread_resource {
            thread_resource[thread as usize] = r;
        }
        TaskMaker {
            scales,
            stage_resource,
            thread_resource,
        }
    }

    fn resource_of(&self, stage: u16, thread: u32) -> usize {
        (self.stage_resource.get(&stage))
            .or_else(|| self.thread_resource.get(&thread))
            .copied()
            .unwrap_or(0)
    }

    pub fn schedule(&self, stages: &[String]) -> Schedule {
        let mut on: Vec<Vec<String>> = vec![Vec::new(); self.resource_names.len()];
        for &stage in &self.stage_order {
            for &(s, thread) in self.placements.range((stage, 0)..=(stage, u32::MAX)) {
                let name = stage_name(stages, s.into());
                let list = &mut on[self.resource_of(s, thread)];
                if !list.contains(&name) {
                    list.push(name);
                }
            }
        }
        Schedule {
            depth: self.depth,
            resources: self.resource_names.iter().cloned().zip(on).collect(),
        }
    }

    fn stage_id(&self, stages: &[String], name: &str) -> Result<u16> {
        match (self.stage_order.iter()).find(|&&s| stage_name(stages, s.into()) == name) {
            Some(&s) => Ok(s),
            None => {
                let known: Vec<String> = (self.stage_order.iter())
                    .map(|&s| stage_name(stages, s.into()))
                    .collect();
                bail!(
                    "unknown stage `{name}`: the run's measured stages are {}",
                    known.join(", ")
                )
            }
        }
    }
}

/// [`Plan`]'s placements and scales in vectors: a frame's tasks are made without a map
/// lookup a span (the model's time, issue 29).
pub struct TaskMaker {
    scales: Vec<Option<f64>>,
    stage_resource: Vec<Option<usize>>,
    thread_resource: Vec<usize>,
}

/// Below this a duration is exact as an f64: unscaled, it is its own rounding.
const EXACT_IN_F64: u64 = 1 << 53;

impl TaskMaker {
    /// A frame's tasks, from its spans and their delays, into `tasks` (cleared first).
    pub fn tasks_into(&self, spans: impl Iterator<Item = (StageSpan, i64)>, tasks: &mut Vec<Task>) {
        tasks.clear();
        tasks.extend(spans.map(|(s, delay_ns)| {
            let dur = s.end_ns.saturating_sub(s.start_ns);
            let scale = self.scales.get(usize::from(s.stage)).copied().flatten();
            let dur_ns = match scale {
                None if dur.unsigned_abs() < EXACT_IN_F64 => dur,
                scale => (dur as f64 * scale.unwrap_or(1.0)).round() as i64,
            };
            let resource = (self
                .stage_resource
                .get(usize::from(s.stage))
                .copied()
                .flatten())
            .or_else(|| self.thread_resource.get(s.thread as usize).copied())
            .unwrap_or(0);
            Task {
                stage: s.stage,
                resource,
                dur_ns,
                delay_ns,
            }
        }));
    }
}

/// A frame's work, from its first stage after `pace` (the pacer's own stage) to its end:
/// the span the frames in flight are counted over ([`recorded`]).
fn work_of(spans: &FrameSpans, pace: Option<u16>) -> (i64, i64) {
    let (mut first, mut work, mut end) = (None, None, i64::MIN);
    for (s, _) in spans {
        first.get_or_insert(s.start_ns);
        if work.is_none() && Some(s.stage) != pace {
            work = Some(s.start_ns);
        }
        end = end.max(s.end_ns);
    }
    let start = work.or(first).unwrap_or(0);
    (start, if first.is_some() { end } else { start })
}

/// The most frames whose work ([`work_of`]) overlapped at one instant, from every start and
/// end sorted: each frame's work handed to `add` by `each`.
fn in_flight_by_sorting(frames: usize, each: &mut super::EachFrame) -> Result<usize> {
    let mut starts: Vec<i64> = Vec::with_capacity(frames);
    let mut ends: Vec<i64> = Vec::with_capacity(frames);
    each(&mut |start, end| {
        starts.push(start);
        ends.push(end);
    })?;
    starts.sort_unstable();
    ends.sort_unstable();
    // An end before a start at the same instant: back to back is not overlap.
    let (mut now, mut most, mut e) = (0i32, 1i32, 0usize);
    for &start in &starts {
        while e < ends.len() && ends[e] <= start {
            now -= 1;
            e += 1;
        }
        now += 1;
        most = most.max(now);
    }
    Ok(most as usize)
}

/// [`in_flight_by_sorting`] without sorting every start and end (16 bytes a frame: issue
/// 29), frame after frame, while frames come in start order and none ends before it
/// starts: then the frames in flight as one starts are those before it still running, held
/// as their ends (a frame of no length is never running, as the sort counts it: its end is
/// taken away as its start comes).
struct InFlightInStartOrder {
    running: BinaryHeap<Reverse<i64>>,
    last_start: i64,
    most: usize,
    /// A frame came out of start order, or ended before it started.
    broken: bool,
}

impl InFlightInStartOrder {
    fn new() -> InFlightInStartOrder {
        InFlightInStartOrder {
            running: BinaryHeap::new(),
            last_start: i64::MIN,
            most: 1,
            broken: false,
        }
    }

    fn add(&mut self, start: i64, end: i64) {
        if self.broken {
            return;
        }
        if start < self.last_start || end < start {
            self.broken = true;
            self.running = BinaryHeap::new();
            return;
        }
        self.last_start = start;
        while self.running.peek().is_some_and(|&Reverse(e)| e <= start) {
            self.running.pop();
        }
        if end > start {
            self.running.push(Reverse(end));
        }
        self.most = self.most.max(self.running.len());
    }

    /// The most frames in flight; `None` when the frames could not be followed this way.
    fn most(self) -> Option<usize> {
        (!self.broken).then_some(self.most)
    }
}

/// The schedule the run was recorded with: each thread (and queue) a resource, the frames in
/// flight as the run had them (the most frames whose work overlapped at one instant: the
/// depth the program ran at). `queues[t]`: thread `t` is a queue. One read of the frames,
/// two where they did not come in start order.
pub fn recorded(
    frames: &dyn ReplayFrames,
    labels: &[String],
    queues: &[bool],
    pace: Option<u16>,
) -> Result<Plan> {
    // Per stage id (a vector grown to the largest seen: no map lookup a span): the sums of
    // its offsets and durations, its spans, and the thread its last span was on (a pair
    // already placed is not looked up again).
    let mut offsets: Vec<(f64, f64, u64)> = Vec::new();
    let mut last_thread: Vec<Option<u32>> = Vec::new();
    let mut placements = BTreeSet::new();
    let mut threads: Vec<u32> = Vec::new();
    let mut in_flight = InFlightInStartOrder::new();
    frames.each(&mut |spans| {
        let (work_start, work_end) = work_of(spans, pace);
        in_flight.add(work_start, work_end);
        let Some(start) = spans.first().map(|(s, _)| s.start_ns) else {
            return;
        };
        for (s, _) in spans {
            let stage = usize::from(s.stage);
            if stage >= offsets.len() {
                offsets.resize(stage + 1, (0.0, 0.0, 0));
                last_thread.resize(stage + 1, None);
            }
            let e = &mut offsets[stage];
            e.0 += (s.start_ns - start) as f64;
            e.1 += (s.end_ns - s.start_ns) as f64;
            e.2 += 1;
            if last_thread[stage] != Some(s.thread) {
                last_thread[stage] = Some(s.thread);
                placements.insert((s.stage, s.thread));
                if !threads.contains(&s.thread) {
                    threads.push(s.thread);
                }
            }
        }
    })?;
    let depth = match in_flight.most() {
        Some(most) => most,
        None => in_flight_by_sorting(frames.len(), &mut |add| {
            frames.each(&mut |spans| {
                let (start, end) = work_of(spans, pace);
                add(start, end);
            })
        })?,
    };
    let mut order: Vec<(f64, u16, f64)> = (offsets.iter().enumerate())
        .filter(|(_, &(_, _, n))| n > 0)
        .map(|(stage, &(offset, dur, n))| {
            (offset / n as f64, stage as u16, dur / frames.len() as f64)
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let is_queue = |t: u32| queues.get(t as usize).copied().unwrap_or(false);
    let name = |t: u32| {
        let label = (labels.get(t as usize).cloned()).unwrap_or_else(|| format!("thread #{t}"));
        match is_queue(t) {
            true => format!("{label} (queue)"),
            false => label,
        }
    };
    Ok(Plan {
        depth,
        resource_names: threads.iter().map(|&t| name(t)).collect(),
        queues: (threads.iter().enumerate())
            .filter(|&(_, &t)| is_queue(t))
            .map(|(r, _)| r)
            .collect(),
        thread_resource: threads.iter().enumerate().map(|(r, &t)| (t, r)).collect(),
        stage_resource: BTreeMap::new(),
        scales: BTreeMap::new(),
        stage_order: order.iter().map(|o| o.1).collect(),
        stage_mean_ns: order.iter().map(|o| o.2).collect(),
        placements,
        pace,
    })
}

/// The split of `means` (in order) into `parts` contiguous groups whose largest sum is the
/// least: each group's first index.
fn balanced_split(means: &[f64], parts: usize) -> Vec<usize> {
    let n = means.len();
    let parts = parts.clamp(1, n.max(1));
    let sum = |a: usize, b: usize| means[a..b].iter().sum::<f64>();
    // best[k][i]: the least largest group over means[..i] in k groups; from[k][i] its last cut.
    let mut best = vec![vec![f64::INFINITY; n + 1]; parts + 1];
    let mut from = vec![vec![0usize; n + 1]; parts + 1];
    best[0][0] = 0.0;
    for k in 1..=parts {
        for i in k..=n {
            for j in (k - 1)..i {
                let cost = best[k - 1][j].max(sum(j, i));
                if cost < best[k][i] {
                    best[k][i] = cost;
                    from[k][i] = j;
                }
            }
        }
    }
    let mut cuts = Vec::with_capacity(parts);
    let mut i = n;
    for k in (1..=parts).rev() {
        let j = from[k][i];
        cuts.push(j);
        i = j;
    }
    cuts.reverse();
    cuts
}

/// Too few threads for `depth`: the stages threads ran are split, in order, over `depth`
/// threads, balanced by mean time; a queue's stages stay on their queue (the program cannot
/// move GPU work onto a CPU thread by pipelining deeper), and `pace` stays with the first
/// thread (alone on a thread it would release frames faster than the pipeline takes them).
fn split_over_threads(plan: &mut Plan, depth: usize) {
    let queue_of = |plan: &Plan, stage: u16| {
        (plan.placements.range((stage, 0)..=(stage, u32::MAX)))
            .map(|&(_, t)| plan.resource_of(stage, t))
            .find(|r| plan.queues.contains(r))
    };
    let (mut on_threads, mut means, mut on_queues) = (Vec::new(), Vec::new(), Vec::new());
    for (&stage, &mean) in plan.stage_order.iter().zip(&plan.stage_mean_ns) {
        match queue_of(plan, stage) {
            Some(queue) => on_queues.push((stage, plan.resource_names[queue].clone())),
            None if Some(stage) == plan.pace => {}
            None => {
                on_threads.push(stage);
                means.push(mean);
            }
        }
    }
    let cuts = balanced_split(&means, depth);
    plan.resource_names.clear();
    plan.stage_resource.clear();
    plan.queues.clear();
    for (g, &first) in cuts.iter().enumerate() {
        let last = cuts.get(g + 1).copied().unwrap_or(on_threads.len());
        plan.resource_names.push(format!("thread {}", g + 1));
        for &stage in &on_threads[first..last] {
            plan.stage_resource.insert(stage, g);
        }
    }
    if let Some(pace) = plan.pace.filter(|p| plan.stage_order.contains(p)) {
        plan.stage_resource.insert(pace, 0);
    }
    for (stage, queue) in on_queues {
        let r = match plan.resource_names.iter().position(|n| *n == queue) {
            Some(r) => r,
            None => {
                plan.resource_names.push(queue);
                plan.resource_names.len() - 1
            }
        };
        plan.queues.insert(r);
        plan.stage_resource.insert(stage, r);
    }
}

/// `recorded` with `changes` applied.
pub fn apply(recorded: &Plan, changes: &Changes, stages: &[String]) -> Result<Plan> {
    let mut plan = recorded.clone();
    for (name, factor) in &changes.scales {
        let stage = plan.stage_id(stages, name)?;
        plan.scales.insert(stage, *factor);
    }
    if let Some(depth) = changes.depth {
        plan.depth = depth;
    }
    let threads = recorded.resource_names.len() - recorded.queues.len();
    if let Some(depth) = changes.depth.filter(|&d| d > threads) {
        split_over_threads(&mut plan, depth);
    }
    for (name, thread) in &changes.moves {
        let stage = plan.stage_id(stages, name)?;
        // A queue is named as the program named it, without the `(queue)` of its label.
        let queue_label = format!("{thread} (queue)");
        let named = |n: &String| *n == *thread || *n == queue_label;
        let resource = match plan.resource_names.iter().position(named) {
            Some(r) => r,
            None => {
                plan.resource_names.push(thread.clone());
                plan.resource_names.len() - 1
            }
        };
        plan.stage_resource.insert(stage, resource);
    }
    Ok(plan)
}

/// What the model takes for granted, said with every prediction.
pub fn assumptions(period_ns: Option<f64>, has_pace: bool, unpaced: bool) -> Vec<String> {
    let mut out = vec![
        "each frame's stages run one after another in their recorded start order, each for \
         its recorded duration (scaled where asked): stages that overlapped run in series"
            .to_string(),
        "a thread runs one stage at a time, frames in order (in-order queues); the recorded \
         waits are not replayed, the model makes its own, except each stage's hand-over delay \
         (how long after it could start it did: a thread waking up), replayed as recorded"
            .to_string(),
        "at most DEPTH frames in flight: a frame starts its work once the frame DEPTH before \
         it has ended (the program's buffers)"
            .to_string(),
        "--depth N keeps the run's threads when it used N or more (only the frames in flight \
         change); with fewer it splits the stages, in order, over N threads so the busiest \
         does the least work (a queue's stages stay on their queue, one stage at a time, in \
         order); a moved stage runs on the named thread"
            .to_string(),
    ];
    out.push(match (period_ns, unpaced) {
        (Some(p), false) => format!(
            "frames are released by a pacer every {:.1} µs ({:.2} fps), and a late frame skips \
             the slots it missed (the SDK pacer's Skip policy){}",
            p / 1e3,
            1e9 / p,
            if has_pace {
                "; `pace` is the pacer's own error, replayed as recorded"
            } else {
                ""
            }
        ),
        _ => "no pacer: each frame starts as soon as its first thread is free".to_string(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_in_flight_without_a_sort_are_those_a_sort_finds() {
        // Back to back (one in flight), overlapping by two then three, a long frame.
        // Frames of no length (timer ticks coarser than a span) among them.
        let cases: [&[(i64, i64)]; 6] = [
            &[(0, 10), (10, 20), (20, 30)],
            &[(0, 15), (10, 25), (20, 35), (30, 40)],
            &[(0, 100), (10, 20), (15, 30), (16, 18), (40, 50)],
            &[(0, 5), (5, 5), (5, 9)],
            &[(0, 9), (5, 5), (5, 5), (5, 8), (5, 5), (6, 6), (7, 12)],
            &[(3, 3), (3, 3)],
        ];
        let by_sorting = |spans: &[(i64, i64)]| {
            in_flight_by_sorting(spans.len(), &mut |add| {
                spans.iter().for_each(|&(start, end)| add(start, end));
                Ok(())
            })
            .unwrap()
        };
        let in_start_order = |spans: &[(i64, i64)]| {
            let mut in_flight = InFlightInStartOrder::new();
            spans
                .iter()
                .for_each(|&(start, end)| in_flight.add(start, end));
            in_flight.most()
        };
        for (n, spans) in cases.iter().enumerate() {
            let sorted = by_sorting(spans);
            assert_eq!(in_start_order(spans), Some(sorted), "case {n}");
        }
        // Out of start order, or ending before it starts: left to the sort.
        assert_eq!(in_start_order(&[(5, 9), (2, 4)]), None);
        assert_eq!(in_start_order(&[(5, 3)]), None);
        assert_eq!(
            by_sorting(&[(0, 100), (10, 20), (15, 30), (16, 18), (40, 50)]),
            4
        );
    }

    #[test]
    fn the_split_minimises_the_busiest_group() {
        // pace 0.01, capture 0.1, convert 0.4, encode 2.4, packetize 0.05, send 0.02 (ms):
        // in two, encode and what follows it; in three, encode alone in the middle.
        let means = [0.01, 0.1, 0.4, 2.4, 0.05, 0.02];
        assert_eq!(balanced_split(&means, 1), vec![0]);
        assert_eq!(balanced_split(&means, 2), vec![0, 3]);
        assert_eq!(balanced_split(&means, 3), vec![0, 3, 4]);
        // More groups than stages: one stage each.
        assert_eq!(balanced_split(&[1.0, 2.0], 5), vec![0, 1]);
    }
}
