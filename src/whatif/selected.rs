//! An outcome's figures (each frame's total, the intervals between ends) taken from reads
//! of the frames rather than held: each set of values is counted into the buckets of a
//! [`Selection`] and the model replayed again for the few buckets its percentiles fall in,
//! as the report takes a run's (`compact::frameless`). Several models ride on one read:
//! the measured frames, the run as recorded and the what-if, two or three reads in all.
//! Memory independent of the run's length (issue 29: 8 bytes a frame for the figures held,
//! 1 GB on an 84M-span soak), at the cost of replaying the model two or three times.

use anyhow::Result;

use super::model::{Config, Simulation, Task};
use super::plan::TaskMaker;
use super::recorded::FrameSpans;
use super::recorded::ReplayFrames;
use super::{EndsInOrder, Outcome};
use crate::analyze::compact::select::Selection;
use crate::analyze::stats::Ranked;
use crate::analyze::Dist;

/// A frame's start and end from its spans, by a state that starts afresh with each read.
pub(super) trait FrameModel {
    fn restart(&mut self);
    /// The next frame; `None` for a frame that gives none.
    fn frame(&mut self, spans: &FrameSpans) -> Option<(i64, i64)>;
}

/// The frames as recorded: from the first start to the latest end (the analysis's frame).
pub(super) struct AsMeasured;

impl FrameModel for AsMeasured {
    fn restart(&mut self) {}

    fn frame(&mut self, spans: &FrameSpans) -> Option<(i64, i64)> {
        let start = spans.first().map_or(0, |(s, _)| s.start_ns);
        let end = spans.iter().map(|(s, _)| s.end_ns).max().unwrap_or(0);
        Some((start, end))
    }
}

/// The model of a plan: each frame's tasks simulated.
pub(super) struct Simulated<'c> {
    config: &'c Config,
    maker: TaskMaker,
    frames: usize,
    tasks: Vec<Task>,
    simulation: Simulation<'c>,
}

impl<'c> Simulated<'c> {
    pub fn new(config: &'c Config, maker: TaskMaker, frames: usize) -> Simulated<'c> {
        Simulated {
            config,
            maker,
            frames,
            tasks: Vec::new(),
            simulation: Simulation::new(config, frames),
        }
    }
}

impl FrameModel for Simulated<'_> {
    fn restart(&mut self) {
        self.simulation = Simulation::new(self.config, self.frames);
    }

    fn frame(&mut self, spans: &FrameSpans) -> Option<(i64, i64)> {
        self.maker
            .tasks_into(spans.iter().copied(), &mut self.tasks);
        self.simulation.frame(&self.tasks)
    }
}

/// The statistics an outcome asks of each set.
fn asked(r: &dyn Ranked) {
    Dist::of_ranked(r);
}

/// One model's figures, as far as the reads so far tell them.
struct Figures {
    totals: Selection,
    intervals: Selection,
    totals_open: bool,
    intervals_open: bool,
    ends: EndsInOrder,
    /// Frames did not end in an order [`EndsInOrder`] follows: the intervals are taken
    /// from every end held instead.
    broken: bool,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            totals: Selection::default(),
            intervals: Selection::default(),
            totals_open: true,
            intervals_open: true,
            ends: EndsInOrder::new(),
            broken: false,
        }
    }

    fn open(&self) -> bool {
        !self.broken && (self.totals_open || self.intervals_open)
    }

    fn add(&mut self, start: i64, end: i64) {
        if self.totals_open {
            self.totals.add(end.saturating_sub(start));
        }
        if self.intervals_open {
            let intervals = &mut self.intervals;
            self.ends.add(start, end, &mut |x| intervals.add(x));
        }
    }

    fn end_pass(&mut self) -> Result<()> {
        if self.intervals_open {
            let ends = std::mem::replace(&mut self.ends, EndsInOrder::new());
            let intervals = &mut self.intervals;
            if !ends.finish(&mut |x| intervals.add(x)) {
                self.broken = true;
                return Ok(());
            }
            self.intervals_open = !self.intervals.end_pass(&asked)?;
        }
        if self.totals_open {
            self.totals_open = !self.totals.end_pass(&asked)?;
        }
        Ok(())
    }

    fn outcome(&self) -> Outcome {
        let interval = Dist::of_ranked(&self.intervals);
        Outcome {
            fps: interval
                .as_ref()
                .filter(|d| d.mean_ns > 0.0)
                .map(|d| 1e9 / d.mean_ns),
            interval,
            total: Dist::of_ranked(&self.totals),
        }
    }
}

/// Each model's outcome over `frames`, from reads that feed every model whose figures are
/// still open; a model whose frames end in an order the intervals cannot follow as they
/// come is replayed alone, its ends held ([`Outcome::of_simulation`]).
pub(super) fn outcomes(
    frames: &dyn ReplayFrames,
    models: &mut [&mut dyn FrameModel],
) -> Result<Vec<Outcome>> {
    let mut figures: Vec<Figures> = models.iter().map(|_| Figures::new()).collect();
    loop {
        let open: Vec<usize> = (0..models.len()).filter(|&m| figures[m].open()).collect();
        if open.is_empty() {
            break;
        }
        for &m in &open {
            models[m].restart();
        }
        frames.each(&mut |spans| {
            for &m in &open {
                if let Some((start, end)) = models[m].frame(spans) {
                    figures[m].add(start, end);
                }
            }
        })?;
        for &m in &open {
            figures[m].end_pass()?;
        }
    }
    let mut out = Vec::with_capacity(models.len());
    for (model, figures) in models.iter_mut().zip(figures) {
        out.push(match figures.broken {
            false => figures.outcome(),
            true => {
                drop(figures);
                Outcome::of_simulation(frames.len(), &mut |done| {
                    model.restart();
                    frames.each(&mut |spans| {
                        if let Some((start, end)) = model.frame(spans) {
                            done(start, end);
                        }
                    })
                })?
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::pipeline::waits::StageSpan;

    /// Frames of one span each, (start, end), handed over in order.
    struct Frames(Vec<(i64, i64)>);

    impl ReplayFrames for Frames {
        fn len(&self) -> usize {
            self.0.len()
        }

        fn each(&self, visit: &mut dyn FnMut(&FrameSpans)) -> Result<()> {
            for &(start_ns, end_ns) in &self.0 {
                let span = StageSpan {
                    start_ns,
                    end_ns,
                    stage: 0,
                    thread: 0,
                };
                visit(&[(span, 0)]);
            }
            Ok(())
        }

        fn set_handover_delays(&mut self, _depth: usize, _pace: Option<u16>) {}
    }

    #[test]
    fn selected_figures_are_the_held_figures() {
        // Frames every ~1000 ns lasting 10 to 3000 (several in flight, ending out of start
        // order), then the same with one frame ending before an end already taken (the
        // intervals from every end held), and a frame of negative length.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as i64
        };
        let in_flight: Vec<(i64, i64)> = (0..5000)
            .map(|k| {
                let start = k * 1000 + next(300);
                (start, start + 10 + next(3000))
            })
            .collect();
        let mut broken = in_flight.clone();
        broken[2000].1 = broken[1990].0;
        let mut negative = in_flight.clone();
        negative[100].1 = negative[100].0 - 5;
        for frames in [in_flight, broken, negative] {
            let frames = Frames(frames);
            let held = Outcome::of_simulation(frames.len(), &mut |done| {
                frames.each(&mut |spans| {
                    let (start, end) = AsMeasured.frame(spans).unwrap();
                    done(start, end);
                })
            })
            .unwrap();
            let mut model = AsMeasured;
            let selected = outcomes(&frames, &mut [&mut model]).unwrap();
            assert_eq!(selected, vec![held]);
        }
    }
}
