//! Pairing two kinds of instant events into spans: a START and the next END with the same
//! key (a request and its response, a commit and its release) become one span. The same
//! rules for a recorded run (`hist --pair`, `import --pair`: [`pair_events`]) and while
//! recording (`run --pair`: a [`Pairer`] fed as the events come).

use std::collections::HashMap;

use crate::model::{EventRecord, Run, Span};

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

/// What tells a START's END: the events' own key, or the thread they happened on (a call
/// and its return: `syscalls:sys_enter_X` and `sys_exit_X`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PairKey {
    #[default]
    Key,
    Thread,
}

impl PairKey {
    /// As `run --pair` takes it: `key` or `tid`.
    pub fn name(self) -> &'static str {
        match self {
            PairKey::Key => "key",
            PairKey::Thread => "tid",
        }
    }
}

/// `run --pair STAGE=START:END[:KEY]`: paired events become spans of stage `STAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagePair {
    pub stage: String,
    pub spec: PairSpec,
    pub by: PairKey,
}

impl StagePair {
    /// Parses `STAGE=START:END[:KEY]`, KEY `key` (the default) or `tid`; a last part that
    /// is neither belongs to END's name, as in [`PairSpec::parse`].
    pub fn parse(s: &str) -> Result<StagePair, String> {
        let form = || {
            format!(
                "--pair {s:?} is not STAGE=START:END[:KEY]; e.g. --pair \
                 sleep=enter:exit:tid (KEY: key, the events' key, or tid, their thread)"
            )
        };
        let (stage, rest) = s
            .split_once('=')
            .filter(|(stage, _)| !stage.trim().is_empty())
            .ok_or_else(form)?;
        let (pair, by) = match rest.rsplit_once(':') {
            Some((pair, "tid")) if pair.contains(':') => (pair, PairKey::Thread),
            Some((pair, "key")) if pair.contains(':') => (pair, PairKey::Key),
            _ => (rest, PairKey::Key),
        };
        let spec = PairSpec::parse(pair).map_err(|_| form())?;
        Ok(StagePair {
            stage: stage.trim().to_owned(),
            spec,
            by,
        })
    }

    /// As given: `sleep=enter:exit:tid`.
    pub fn describe(&self) -> String {
        format!("{}={}:{}", self.stage, self.spec.name(), self.by.name())
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
    /// Where a name is missing, the names the run has ([`the_events_it_has`]).
    pub events_it_has: String,
}

impl Paired {
    /// Report lines for what did not pair.
    pub fn notes(&self, spec: &PairSpec) -> Vec<String> {
        self.notes_of(spec, &spec.name())
    }

    /// [`Paired::notes`], naming the pair `name` (`sleep=enter:exit:tid` for `run --pair`).
    pub fn notes_of(&self, spec: &PairSpec, name: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.start_seen || !self.end_seen {
            let missing = if self.start_seen {
                &spec.end
            } else {
                &spec.start
            };
            // While recording the pairer does not know the run's names: no empty "()".
            let has = match self.events_it_has.as_str() {
                "" => String::new(),
                names => format!(" ({names})"),
            };
            // `a=b:c:pid` reads as START "b:c", END "pid": say what a third part may be.
            let third_part = if spec.start.contains(':') {
                " (a part after END is KEY: key or tid)"
            } else {
                ""
            };
            notes.push(format!(
                "--pair {name}: the run has no event named {missing:?}{has}; nothing was paired{third_part}"
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

/// "its events: a, b, c" (sorted, the first ten and how many more), or "it has no events":
/// what to check a misspelt `--pair` name against.
pub fn the_events_it_has(event_names: &[String]) -> String {
    let mut names: Vec<&str> = event_names.iter().map(|n| &**n).collect();
    names.sort_unstable();
    let more = names.len().saturating_sub(10);
    names.truncate(10);
    match (names.is_empty(), more) {
        (true, _) => "it has no events".to_string(),
        (false, 0) => format!("its events: {}", names.join(", ")),
        (false, n) => format!("its events: {}, and {n} more", names.join(", ")),
    }
}

/// Pairs `spec.start` and `spec.end` events of `run` by key, in time order.
pub fn pair_events(run: &Run, spec: &PairSpec) -> Paired {
    let id = |name: &str| run.event_names.iter().position(|n| n == name);
    let (start_id, end_id) = (id(&spec.start), id(&spec.end));
    let (Some(start_id), Some(end_id)) = (start_id, end_id) else {
        return Paired {
            start_seen: start_id.is_some(),
            end_seen: end_id.is_some(),
            events_it_has: the_events_it_has(&run.event_names),
            ..Paired::default()
        };
    };
    let mut events: Vec<_> = run
        .events
        .iter()
        .filter(|e| usize::from(e.event) == start_id || usize::from(e.event) == end_id)
        .collect();
    // Stable: at one instant the recorded order decides (a START before its END).
    events.sort_by_key(|e| e.t_ns);
    let mut pairer = Pairer::new(PairKey::Key);
    let mut spans = Vec::new();
    for e in events {
        let (is_start, is_end) = (
            usize::from(e.event) == start_id,
            usize::from(e.event) == end_id,
        );
        spans.extend(pairer.feed(e, is_start, is_end, true));
    }
    let mut paired = pairer.finish();
    // Both names are the run's, even where no event of one was recorded.
    (paired.start_seen, paired.end_seen) = (true, true);
    spans.sort_by_key(|s| s.start_ns);
    paired.spans = spans;
    paired
}

/// Pairs events given one at a time, in time order. A START of a task that is not the
/// run's (a tracepoint sees every task) is left out, and an END of one counts only when it
/// closes a START of the run's (an interrupt's signal of the run's fence).
#[derive(Debug, Default)]
pub struct Pairer {
    by: PairKey,
    open: HashMap<u64, (i64, u32)>,
    /// What did not pair (its `spans` stay empty: each is handed back as made).
    counts: Paired,
    made: u64,
    /// Events of other tasks left out.
    others: u64,
}

impl Pairer {
    pub fn new(by: PairKey) -> Pairer {
        Pairer {
            by,
            ..Pairer::default()
        }
    }

    /// The span `e` closes, if any. `is_start` and `is_end` say which of the pair's events
    /// it is (both when START and END are one name: consecutive ones pair); `ours`, whether
    /// it happened in one of the run's processes. A span's frame is the key, or with
    /// [`PairKey::Thread`] its number among the pair's spans (from 1).
    pub fn feed(
        &mut self,
        e: &EventRecord,
        is_start: bool,
        is_end: bool,
        ours: bool,
    ) -> Option<Span> {
        self.counts.start_seen |= is_start;
        self.counts.end_seen |= is_end;
        let key = match self.by {
            PairKey::Key => e.key,
            PairKey::Thread => u64::from(e.thread),
        };
        if is_start && (!is_end || !self.open.contains_key(&key)) {
            if !ours {
                self.others += 1;
            } else if self.open.insert(key, (e.t_ns, e.thread)).is_some() {
                self.counts.restarted += 1;
            }
            return None;
        }
        if !is_end {
            return None;
        }
        let Some((t0, thread)) = self.open.remove(&key) else {
            match ours {
                true => self.counts.unmatched_ends += 1,
                false => self.others += 1,
            }
            return None;
        };
        self.made += 1;
        Some(Span {
            frame: match self.by {
                PairKey::Key => key,
                PairKey::Thread => self.made,
            },
            stage: 0,
            thread,
            start_ns: t0,
            dur_ns: e.t_ns - t0,
        })
    }

    /// Spans made so far.
    pub fn made(&self) -> u64 {
        self.made
    }

    /// Events of tasks not of the run, left out.
    pub fn others(&self) -> u64 {
        self.others
    }

    /// What did not pair: STARTs still open count as unmatched.
    pub fn finish(self) -> Paired {
        Paired {
            unmatched_starts: self.open.len() as u64,
            ..self.counts
        }
    }
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
        let note = &p.notes(&spec())[0];
        assert!(
            note.contains("no event named \"resp\" (its events: req)"),
            "{note}"
        );
    }

    #[test]
    fn a_third_part_not_a_key_says_what_a_key_may_be() {
        let r = run(&[("req", 1, 100), ("resp", 1, 200)]);
        let pair = StagePair::parse("s=req:resp:pid").unwrap();
        let p = pair_events(&r, &pair.spec);
        let note = &p.notes(&pair.spec)[0];
        assert!(note.contains("no event named \"req:resp\""), "{note}");
        assert!(
            note.ends_with("(a part after END is KEY: key or tid)"),
            "{note}"
        );
        let misspelt = PairSpec::parse("req:nosuch").unwrap();
        let note = &pair_events(&r, &misspelt).notes(&misspelt)[0];
        assert!(!note.contains("KEY"), "{note}");
    }

    #[test]
    fn the_same_name_twice_pairs_consecutive_events() {
        let r = run(&[("tick", 1, 100), ("tick", 1, 300), ("tick", 1, 700)]);
        let p = pair_events(&r, &PairSpec::parse("tick:tick").unwrap());
        assert_eq!(p.spans.len(), 1);
        assert_eq!(p.unmatched_starts, 1);
    }

    #[test]
    fn by_thread_pairs_a_threads_start_with_its_next_end_and_leaves_other_tasks_out() {
        let event = |event, thread, t_ns| EventRecord {
            event,
            key: 0,
            thread,
            t_ns,
        };
        let mut pairer = Pairer::new(PairKey::Thread);
        let mut spans = Vec::new();
        for (e, ours) in [
            (event(0, 1, 100), true),
            (event(0, 2, 110), true),
            (event(0, 9, 115), false),
            (event(1, 2, 150), true),
            (event(1, 9, 160), false),
            (event(1, 1, 400), true),
            (event(1, 7, 500), false),
        ] {
            spans.extend(pairer.feed(&e, e.event == 0, e.event == 1, ours));
        }
        let got: Vec<(u64, u32, i64, i64)> = spans
            .iter()
            .map(|s| (s.frame, s.thread, s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(got, vec![(1, 2, 110, 40), (2, 1, 100, 300)]);
        assert_eq!(pairer.others(), 3);
        let paired = pairer.finish();
        assert_eq!((paired.unmatched_starts, paired.unmatched_ends), (0, 0));
    }

    #[test]
    fn a_stage_pair_names_its_stage_and_what_keys_it() {
        let p = StagePair::parse("sleep=enter:exit:tid").unwrap();
        assert_eq!(
            (
                p.stage.as_str(),
                p.spec.start.as_str(),
                p.spec.end.as_str(),
                p.by
            ),
            ("sleep", "enter", "exit", PairKey::Thread)
        );
        assert_eq!(StagePair::parse("s=a:b").unwrap().by, PairKey::Key);
        assert_eq!(StagePair::parse("s=a:b:key").unwrap().spec.end, "b");
        // A last part that is no KEY is END's name, split as hist's --pair splits.
        assert_eq!(StagePair::parse("s=a:b:c").unwrap().spec.start, "a:b");
        assert_eq!(StagePair::parse("s=a:tid").unwrap().spec.end, "tid");
        for bad in ["a:b", "=a:b", "s=a", "s=:b"] {
            assert!(StagePair::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spec_parsing() {
        assert_eq!(PairSpec::parse("a::b:c").unwrap().end, "c");
        assert!(PairSpec::parse("nocolon").is_err());
        assert!(PairSpec::parse(":x").is_err());
    }
}
