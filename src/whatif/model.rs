//! A small discrete-event model of a pipeline: frames released by a pacer, each a chain of
//! tasks (its stages, in their recorded start order) on resources (threads) that run one
//! task at a time, frames in order, with at most `depth` frames in flight. Pure: recorded
//! durations in, each frame's start and end out.

/// One stage of one frame: where it runs and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub stage: u16,
    pub resource: usize,
    pub dur_ns: i64,
    /// How long after it could start it starts (a thread waking, a hand-over), as recorded.
    pub delay_ns: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The pacer's period (1 / target fps); `None`: each frame starts as soon as it can.
    pub period_ns: Option<f64>,
    /// Frames in flight at most: a frame's gated task starts once frame i − depth ended.
    pub depth: usize,
    /// The pacer's own stage (`pace`): when a frame starts with it, the gate comes after it
    /// (the program waits for its slot, then for a free buffer), else before the first task.
    pub pace_stage: Option<u16>,
    pub resources: usize,
}

/// Each frame's simulated start (its first task's start) and end (its last task's end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Simulated {
    pub starts_ns: Vec<i64>,
    pub ends_ns: Vec<i64>,
}

/// The SDK pacer under `LatePolicy::Skip`: slot k is due at anchor + k·period (the anchor
/// is the first call); a call before its slot returns at it, a late call returns at once
/// and gives up the slots already past.
#[derive(Clone, Debug)]
struct Pacer {
    period_ns: f64,
    anchor_ns: Option<i64>,
    slot: u64,
}

impl Pacer {
    fn release(&mut self, entry_ns: i64) -> i64 {
        let anchor = *self.anchor_ns.get_or_insert(entry_ns);
        let deadline = anchor + round_to_i64(self.slot as f64 * self.period_ns);
        if entry_ns <= deadline {
            self.slot += 1;
            deadline
        } else {
            let due = (((entry_ns - anchor) as f64 / self.period_ns).floor() as u64).max(self.slot);
            self.slot = due + 1;
            entry_ns
        }
    }
}

/// `x.round() as i64` without the libm call `round` is (a frame's slot is rounded once a
/// frame: 7% of whatif's time, issue 29): truncated, then moved one away from zero when
/// the part cut off is a half or more (exact: that part is representable).
fn round_to_i64(x: f64) -> i64 {
    // Past 2^62 (and NaN) the truncation and its fix-up could overflow: libm's way.
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN is meant to take this branch
    if !(x.abs() < (1u64 << 62) as f64) {
        return x.round() as i64;
    }
    let t = x as i64;
    let cut = x - t as f64;
    if cut >= 0.5 {
        t + 1
    } else if cut <= -0.5 {
        t - 1
    } else {
        t
    }
}

/// Replays `frames` (each its tasks in order) through the pipeline `config` describes.
pub fn simulate(frames: &[Vec<Task>], config: &Config) -> Simulated {
    simulate_with(frames.len(), config, &mut |i, tasks| {
        tasks.clone_from(&frames[i]);
    })
}

/// [`simulate`] of `frames` frames, frame i's tasks written by `tasks_of(i, tasks)` when
/// its turn comes: one frame's tasks in memory at a time.
pub fn simulate_with(
    frames: usize,
    config: &Config,
    tasks_of: &mut dyn FnMut(usize, &mut Vec<Task>),
) -> Simulated {
    let mut out = Simulated {
        starts_ns: Vec::with_capacity(frames),
        ends_ns: Vec::with_capacity(frames),
    };
    simulate_each(frames, config, tasks_of, &mut |start, end| {
        out.starts_ns.push(start);
        out.ends_ns.push(end);
    });
    out
}

/// [`simulate_with`], each frame's start and end handed to `done(start, end)` in turn
/// rather than kept: only the last `depth` ends are held (the gate), so the caller decides
/// what a frame costs in memory.
pub fn simulate_each(
    frames: usize,
    config: &Config,
    tasks_of: &mut dyn FnMut(usize, &mut Vec<Task>),
    done: &mut dyn FnMut(i64, i64),
) {
    let mut tasks = Vec::new();
    let mut simulation = Simulation::new(config, frames);
    for i in 0..frames {
        tasks_of(i, &mut tasks);
        if let Some((start, end)) = simulation.frame(&tasks) {
            done(start, end);
        }
    }
}

/// The model between two frames: [`simulate_each`] a frame at a time, for a caller that is
/// handed the frames in turn (a read of the run) rather than asking for each.
pub struct Simulation<'c> {
    config: &'c Config,
    /// When each resource is next free.
    free: Vec<i64>,
    pacer: Option<Pacer>,
    /// The ends of the last `depth` frames simulated.
    recent: std::collections::VecDeque<i64>,
    /// Frames simulated (frames without tasks are not).
    simulated: usize,
    /// The index of the next frame.
    next: usize,
}

impl<'c> Simulation<'c> {
    /// The model before the first of `frames` frames.
    pub fn new(config: &'c Config, frames: usize) -> Simulation<'c> {
        Simulation {
            config,
            free: vec![0i64; config.resources],
            pacer: config.period_ns.map(|period_ns| Pacer {
                period_ns,
                anchor_ns: None,
                slot: 0,
            }),
            recent: std::collections::VecDeque::with_capacity(config.depth.min(frames) + 1),
            simulated: 0,
            next: 0,
        }
    }

    /// The next frame, its tasks in order: its simulated start and end, `None` for a frame
    /// without tasks.
    pub fn frame(&mut self, tasks: &[Task]) -> Option<(i64, i64)> {
        let (config, i) = (self.config, self.next);
        self.next += 1;
        let first = tasks.first()?;
        // The loop that starts frames comes back when its thread is free.
        let entry = self.free[first.resource];
        let mut ready = match &mut self.pacer {
            Some(p) => p.release(entry),
            None => entry,
        };
        // The end of the frame simulated `depth` before this one.
        let gate = (i >= config.depth && self.simulated + config.depth > i)
            .then(|| (self.recent.len() + i).checked_sub(config.depth + self.simulated))
            .flatten()
            .and_then(|at| self.recent.get(at).copied());
        let gated_task = usize::from(config.pace_stage == Some(first.stage) && tasks.len() > 1);
        let mut start = None;
        for (k, task) in tasks.iter().enumerate() {
            if k == gated_task {
                ready = ready.max(gate.unwrap_or(i64::MIN));
            }
            let begin = ready
                .max(self.free[task.resource])
                .saturating_add(task.delay_ns.max(0));
            let end = begin.saturating_add(task.dur_ns.max(0));
            self.free[task.resource] = end;
            start.get_or_insert(begin);
            ready = end;
        }
        self.simulated += 1;
        if config.depth > 0 {
            if self.recent.len() == config.depth {
                self.recent.pop_front();
            }
            self.recent.push_back(ready);
        }
        Some((start.unwrap_or(ready), ready))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn frames(n: usize, split: bool) -> Vec<Vec<Task>> {
        let b_on = usize::from(split);
        (0..n)
            .map(|_| {
                vec![
                    Task {
                        stage: 0,
                        resource: 0,
                        dur_ns: 2 * MS,
                        delay_ns: 0,
                    },
                    Task {
                        stage: 1,
                        resource: b_on,
                        dur_ns: 3 * MS,
                        delay_ns: 0,
                    },
                ]
            })
            .collect()
    }

    fn config(fps: f64, depth: usize) -> Config {
        Config {
            period_ns: Some(1e9 / fps),
            depth,
            pace_stage: None,
            resources: 2,
        }
    }

    fn intervals(s: &Simulated) -> Vec<i64> {
        s.ends_ns.windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn totals(s: &Simulated) -> Vec<i64> {
        (s.ends_ns.iter().zip(&s.starts_ns))
            .map(|(e, s)| e - s)
            .collect()
    }

    #[test]
    fn rounding_is_libms_round() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4503599627370495.5,
            4503599627370497.0,
            8_333_333.333_333_333,
            16_666_666.666_666_666,
            (1u64 << 62) as f64,
            -((1u64 << 62) as f64),
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        values.extend((0..100_000).map(|k| k as f64 * (1e9 / 144.0)));
        values.extend((0..100_000).map(|k| k as f64 * 0.25 - 12_500.0));
        for x in values {
            assert_eq!(round_to_i64(x), x.round() as i64, "{x}");
        }
    }

    #[test]
    fn two_and_three_ms_at_120_fps_keep_the_rate_at_either_depth() {
        // 5 ms of work in an 8.33 ms slot: every frame starts on its slot and takes 5 ms,
        // in series or split over two threads.
        for (split, depth) in [(false, 1), (true, 2)] {
            let s = simulate(&frames(5, split), &config(120.0, depth));
            assert_eq!(
                s.starts_ns,
                vec![0, 8_333_333, 16_666_667, 25_000_000, 33_333_333]
            );
            assert!(totals(&s).iter().all(|&t| t == 5 * MS));
        }
    }

    #[test]
    fn two_and_three_ms_at_400_fps_by_hand() {
        // Depth 1: 5 ms a frame on one thread > the 2.5 ms slot: every frame starts late,
        // when the one before ends: 200 fps, 5 ms totals.
        let s = simulate(&frames(6, false), &config(400.0, 1));
        assert!(intervals(&s).iter().all(|&i| i == 5 * MS));
        assert!(totals(&s).iter().all(|&t| t == 5 * MS));
        // Depth 2, a on thread 0, b on thread 1 (times in ms):
        // f0 a 0–2 b 2–5; f1 a 2.5–4.5 b 5–8; f2 a 5–7 (gate: f0 ended at 5) b 8–11;
        // f3 slot 7.5, gate f1's end 8: a 8–10 b 11–14; f4 slot 10, gate 11: a 11–13 b 14–17;
        // f5 slot 13 (the pacer skipped slot 12.5 when f4 was late), gate 14: a 14–16 b 17–20.
        let s = simulate(&frames(6, true), &config(400.0, 2));
        let ms = |v: &[i64]| v.iter().map(|&x| x as f64 / 1e6).collect::<Vec<_>>();
        assert_eq!(ms(&s.starts_ns), vec![0.0, 2.5, 5.0, 8.0, 11.0, 14.0]);
        assert_eq!(ms(&s.ends_ns), vec![5.0, 8.0, 11.0, 14.0, 17.0, 20.0]);
        // The steady state: one frame every 3 ms (b's thread, 333 fps), 6 ms each (2 ms a,
        // 1 ms waiting for b's thread, 3 ms b).
        assert_eq!(&intervals(&s)[2..], &[3 * MS; 3]);
        assert_eq!(&totals(&s)[3..], &[6 * MS; 3]);
    }

    #[test]
    fn the_gate_follows_the_pacers_own_stage() {
        // pace (0.1 ms) then a 4 ms stage then b 4 ms on another thread, at depth 1:
        // frame 1 paces at its slot (5 ms) but its work waits for frame 0's end (8.1 ms).
        let frame = vec![
            Task {
                stage: 9,
                resource: 0,
                dur_ns: MS / 10,
                delay_ns: 0,
            },
            Task {
                stage: 0,
                resource: 0,
                dur_ns: 4 * MS,
                delay_ns: 0,
            },
            Task {
                stage: 1,
                resource: 1,
                dur_ns: 4 * MS,
                delay_ns: 0,
            },
        ];
        let c = Config {
            period_ns: Some(5e6),
            depth: 1,
            pace_stage: Some(9),
            resources: 2,
        };
        let s = simulate(&[frame.clone(), frame], &c);
        assert_eq!(s.starts_ns, vec![0, 5 * MS]);
        assert_eq!(s.ends_ns, vec![8_100_000, 16_100_000]);
    }

    #[test]
    fn without_a_pacer_frames_start_when_the_first_thread_is_free() {
        let c = Config {
            period_ns: None,
            ..config(1.0, 2)
        };
        let s = simulate(&frames(3, true), &c);
        assert_eq!(s.starts_ns, vec![0, 2 * MS, 5 * MS]);
        assert_eq!(s.ends_ns, vec![5 * MS, 8 * MS, 11 * MS]);
    }
}
