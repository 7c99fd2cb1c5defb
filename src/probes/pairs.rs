//! `run --pair STAGE=START:END[:KEY]`: the run's events (a tracepoint's, a USDT probe's,
//! the SDK's) paired into spans of stage STAGE while recording, by the rules of
//! `hist --pair` and `import --pair` (`crate::analyze::pair`).

use crate::analyze::pair::{PairKey, Pairer, StagePair};
use crate::model::{EventRecord, PairFacts, Span};

/// Every `--pair` of a run, each with its pairer.
pub struct RunPairs {
    pairs: Vec<(StagePair, Pairer)>,
}

impl RunPairs {
    pub fn new(pairs: &[StagePair]) -> RunPairs {
        RunPairs {
            pairs: (pairs.iter())
                .map(|p| (p.clone(), Pairer::new(p.by)))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The stage of pair `index`'s spans.
    pub fn stage(&self, index: usize) -> &str {
        &self.pairs[index].0.stage
    }

    /// The spans `events` close, by pair index (stage 0: the caller names it). `id` gives
    /// an event name's id in the run, once it has one; `ours`, whether a thread (the run's
    /// index) is of one of the run's processes. Events are taken in time order: a batch
    /// holds the SDK's and the probes' drained at one moment, each source in order.
    pub fn feed(
        &mut self,
        events: &[EventRecord],
        id: impl Fn(&str) -> Option<u16>,
        ours: impl Fn(u32) -> bool,
    ) -> Vec<(usize, Span)> {
        let mut made = Vec::new();
        for (index, (pair, pairer)) in self.pairs.iter_mut().enumerate() {
            let (Some(start), end) = (id(&pair.spec.start), id(&pair.spec.end)) else {
                continue;
            };
            let mut mine: Vec<&EventRecord> = (events.iter())
                .filter(|e| e.event == start || Some(e.event) == end)
                .collect();
            mine.sort_by_key(|e| e.t_ns);
            for e in mine {
                let (is_start, is_end) = (e.event == start, Some(e.event) == end);
                if let Some(span) = pairer.feed(e, is_start, is_end, ours(e.thread)) {
                    made.push((index, span));
                }
            }
        }
        made
    }

    /// What each pair made, with notes for what did not pair.
    pub fn finish(self) -> Vec<PairFacts> {
        (self.pairs.into_iter())
            .map(|(pair, pairer)| {
                let (spans, other_tasks) = (pairer.made(), pairer.others());
                let paired = pairer.finish();
                let mut notes = paired.notes_of(&pair.spec, &pair.describe());
                if pair.by == PairKey::Thread && paired.unmatched_ends > 0 {
                    notes.push(format!(
                        "--pair {}: an END with no START on its thread is a call that began \
                         before the run's events were opened",
                        pair.describe()
                    ));
                }
                PairFacts {
                    stage: pair.stage.clone(),
                    start: pair.spec.start.clone(),
                    end: pair.spec.end.clone(),
                    by: pair.by.name().to_owned(),
                    spans,
                    unmatched_starts: paired.unmatched_starts,
                    unmatched_ends: paired.unmatched_ends,
                    restarted: paired.restarted,
                    other_tasks,
                    notes,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: u16, thread: u32, t_ns: i64) -> EventRecord {
        EventRecord {
            event,
            key: 0,
            thread,
            t_ns,
        }
    }

    #[test]
    fn events_pair_across_batches_once_both_names_have_ids() {
        let pairs = [
            StagePair::parse("sleep=enter:exit:tid").unwrap(),
            StagePair::parse("never=enter:nosuch").unwrap(),
        ];
        let mut run = RunPairs::new(&pairs);
        let ids = |exit_known: bool| {
            move |name: &str| match name {
                "enter" => Some(3),
                "exit" if exit_known => Some(4),
                _ => None,
            }
        };
        // The first batch has only the START: no id for END yet.
        let made = run.feed(&[event(3, 1, 100), event(3, 9, 105)], ids(false), |t| {
            t != 9
        });
        assert!(made.is_empty());
        // Unsorted within a batch; thread 9 is another task's.
        let made = run.feed(
            &[
                event(4, 9, 190),
                event(4, 1, 300),
                event(3, 1, 400),
                event(4, 1, 450),
            ],
            ids(true),
            |t| t != 9,
        );
        let spans: Vec<(usize, u64, i64, i64)> = made
            .iter()
            .map(|(i, s)| (*i, s.frame, s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(spans, vec![(0, 1, 100, 200), (0, 2, 400, 50)]);
        assert_eq!(run.stage(0), "sleep");
        let facts = run.finish();
        assert_eq!(
            (
                facts[0].spans,
                facts[0].other_tasks,
                facts[0].unmatched_ends
            ),
            (2, 2, 0)
        );
        assert!(facts[0].notes.is_empty(), "{:?}", facts[0].notes);
        assert_eq!(facts[1].spans, 0);
        assert!(
            facts[1].notes[0]
                .contains("--pair never=enter:nosuch:key: the run has no event named \"nosuch\""),
            "{:?}",
            facts[1].notes
        );
        // No list of the run's names here: no empty "()" in its place.
        assert!(!facts[1].notes[0].contains("()"), "{:?}", facts[1].notes);
    }
}
