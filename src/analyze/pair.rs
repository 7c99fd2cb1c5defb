//! Pairing two kinds of instant events into spans: a START and the next END with the same
//! key (a request and its response, a commit and its release) become one span.

use std::collections::HashMap;

use crate::model::{Run, Span};

/// `START:END`: event names as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairSpec {
    pub start: String,
    pub end: String,
}

impl PairSpec {
    /// Parses `START:END` (the split is at the last `:`, so names may hold colons).
    pub fn parse(s: &str) -> Result<PairSpec, String> {
        match s.rsplit_once(':') {
            Some((start, end)) if !start.is_empty() && !end.is_empty() => Ok(PairSpec {
                start: start.to_owned(),
                end: end.to_owned(),
            }),
            _ => Err(format!(
                "{s:?} is not START:END; name two events, e.g. --pair request:response"
            )),
        }
    }

    /// The stage name of the paired spans.
    pub fn name(&self) -> String {
        format!("{}:{}", self.start, self.end)
    }
}

/// Spans made by pairing (stage 0: the caller sets it), and what could not be paired.
#[derive(Debug, Default, PartialEq)]
pub struct Paired {
    /// Frame = the events' key; thread = the START's thread; ordered by START time.
    pub spans: Vec<Span>,
    /// STARTs never followed by an END of their key.
    pub unmatched_starts: u64,
    /// ENDs with no open START of their key.
    pub unmatched_ends: u64,
    /// STARTs followed by another START of the same key before an END: the earlier is
    /// dropped, the later one paired (a retried request).
    pub restarted: u64,
    /// Whether the run has events of each name at all.
    pub start_seen: bool,
    pub end_seen: bool,
}

impl Paired {
    /// Report lines for what did not pair.
    pub fn notes(&self, spec: &PairSpec) -> Vec<String> {
        let name = spec.name();
        let mut notes = Vec::new();
        if !self.start_seen || !self.end_seen {
            let missing = if self.start_seen {
                &spec.end
            } else {
                &spec.start
            };
            notes.push(format!(
                "--pair {name}: the run has no event named {missing:?}; nothing was paired"
            ));
            return notes;
        }
        if self.unmatched_starts > 0 {
            notes.push(format!(
                "--pair {name}: {} {} with no {} of the same key",
                self.unmatched_starts, spec.start, spec.end
            ));
        }
        if self.unmatched_ends > 0 {
            notes.push(format!(
                "--pair {name}: {} {} with no {} before it",
                self.unmatched_ends, spec.end, spec.start
            ));
        }
        if self.restarted > 0 {
            notes.push(format!(
                "--pair {name}: {} {} replaced by a later one of the same key before any {}",
                self.restarted, spec.start, spec.end
            ));
        }
        notes
    }
}

/// Pairs `spec.start` and `spec.end` events of `run` by key, in time order.
pub fn pair_events(run: &Run, spec: &PairSpec) -> Paired {
    let id = |name: &str| run.event_names.iter().position(|n| n == name);
    let (start_id, end_id) = (id(&spec.start), id(&spec.end));
    let mut paired = Paired {
        start_seen: start_id.is_some(),
        end_seen: end_id.is_some(),
        ..Paired::default()
    };
    let (Some(start_id), Some(end_id)) = (start_id, end_id) else {
        return paired;
    };
    let mut events: Vec<_> = run
        .events
        .iter()
        .filter(|e| usize::from(e.event) == start_id || usize::from(e.event) == end_id)
        .collect();
    // Stable: at one instant the recorded order decides (a START before its END).
    events.sort_by_key(|e| e.t_ns);
    let mut open: HashMap<u64, (i64, u32)> = HashMap::new();
    for e in events {
        if usize::from(e.event) == start_id && (start_id != end_id || !open.contains_key(&e.key)) {
            if open.insert(e.key, (e.t_ns, e.thread)).is_some() {
                paired.restarted += 1;
            }
        } else if let Some((t0, thread)) = open.remove(&e.key) {
            paired.spans.push(Span {
                frame: e.key,
                stage: 0,
                thread,
                start_ns: t0,
                dur_ns: e.t_ns - t0,
            });
        } else {
            paired.unmatched_ends += 1;
        }
    }
    paired.unmatched_starts = open.len() as u64;
    paired.spans.sort_by_key(|s| s.start_ns);
    paired
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventRecord;

    fn run(events: &[(&str, u64, i64)]) -> Run {
        let mut run = Run::default();
        for &(name, key, t_ns) in events {
            let event = match run.event_names.iter().position(|n| n == name) {
                Some(i) => i as u16,
                None => {
                    run.event_names.push(name.into());
                    (run.event_names.len() - 1) as u16
                }
            };
            run.events.push(EventRecord {
                event,
                key,
                thread: 0,
                t_ns,
            });
        }
        run
    }

    fn spec() -> PairSpec {
        PairSpec::parse("req:resp").unwrap()
    }

    #[test]
    fn pairs_by_key_whatever_the_interleaving() {
        let r = run(&[
            ("req", 1, 100),
            ("req", 2, 150),
            ("resp", 2, 400),
            ("resp", 1, 1100),
        ]);
        let p = pair_events(&r, &spec());
        let got: Vec<(u64, i64, i64)> = p
            .spans
            .iter()
            .map(|s| (s.frame, s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(got, vec![(1, 100, 1000), (2, 150, 250)]);
        assert_eq!(
            (p.unmatched_starts, p.unmatched_ends, p.restarted),
            (0, 0, 0)
        );
        assert!(p.notes(&spec()).is_empty());
    }

    #[test]
    fn counts_what_does_not_pair_and_never_invents() {
        let r = run(&[
            ("resp", 9, 50),
            ("req", 1, 100),
            ("req", 1, 200),
            ("resp", 1, 260),
            ("req", 3, 300),
        ]);
        let p = pair_events(&r, &spec());
        assert_eq!(p.spans.len(), 1);
        assert_eq!((p.spans[0].start_ns, p.spans[0].dur_ns), (200, 60));
        assert_eq!(
            (p.unmatched_starts, p.unmatched_ends, p.restarted),
            (1, 1, 1)
        );
        let notes = p.notes(&spec()).join("\n");
        assert!(notes.contains("1 req with no resp"), "{notes}");
        assert!(notes.contains("1 resp with no req before it"), "{notes}");
    }

    #[test]
    fn events_unsorted_in_the_run_are_paired_in_time_order() {
        let r = run(&[("resp", 1, 500), ("req", 1, 100)]);
        let p = pair_events(&r, &spec());
        assert_eq!((p.spans[0].start_ns, p.spans[0].dur_ns), (100, 400));
    }

    #[test]
    fn a_missing_event_name_says_so() {
        let r = run(&[("req", 1, 100)]);
        let p = pair_events(&r, &spec());
        assert!(p.spans.is_empty());
        assert!(p.notes(&spec())[0].contains("no event named \"resp\""));
    }

    #[test]
    fn the_same_name_twice_pairs_consecutive_events() {
        let r = run(&[("tick", 1, 100), ("tick", 1, 300), ("tick", 1, 700)]);
        let p = pair_events(&r, &PairSpec::parse("tick:tick").unwrap());
        assert_eq!(p.spans.len(), 1);
        assert_eq!(p.unmatched_starts, 1);
    }

    #[test]
    fn spec_parsing() {
        assert_eq!(PairSpec::parse("a::b:c").unwrap().end, "c");
        assert!(PairSpec::parse("nocolon").is_err());
        assert!(PairSpec::parse(":x").is_err());
    }
}
