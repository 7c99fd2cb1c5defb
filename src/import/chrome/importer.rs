//! From events to the run: slices paired (`B`/`E` per thread, async ones by id), frames
//! assigned, instants, counters and metadata, and the notes on what was left out.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::value::RawValue;

use super::*;
use crate::formats::LAUNCH_MARKER;
use crate::import::decimal::DecimalError;
use crate::import::keys::fnv1a;
use crate::import::{ImportError, Location, TraceBuilder};
use crate::model::{SampleSeries, SeriesKind};

/// Where slices' frame ids come from.
pub(super) enum FrameRule {
    /// Each slice is a frame of its own.
    EachSlice,
    /// `args.NAME` (`--frame-arg`, or `frame` in framelab exports).
    Arg(String),
    /// `--frame-regex` on the name.
    Regex,
}

/// A slice begun (`B`, `b`) and not yet ended.
pub(super) struct Open<'a> {
    pub(super) name: Cow<'a, str>,
    pub(super) args: Option<&'a RawValue>,
    pub(super) thread: u32,
    pub(super) start_ns: i64,
}

/// Async slices match on pid, category, id and name (the strings as hashes).
pub(super) type AsyncKey = (u32, u64, u64, u64);

/// Counter readings of one series, held until the end: a fractional value anywhere makes
/// the whole series milli-units.
pub(super) struct PendingSeries {
    pub(super) metric: String,
    pub(super) pid: u32,
    /// (time in ns, value × 1000).
    pub(super) readings: Vec<(i64, i128)>,
    pub(super) fractional: bool,
}

/// What could not become spans, events or samples, for the notes.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) unmatched_ends: u64,
    pub(super) mismatched_ends: u64,
    pub(super) unmatched_async_ends: u64,
    pub(super) no_frame: u64,
    /// Slices the frame rule found a frame in.
    pub(super) framed: u64,
    /// The arg names (or, for `--frame-regex`, the names) of slices without a frame, with
    /// their counts: what the trace carries instead, for the error when nothing matched.
    pub(super) seen_instead: BTreeMap<String, u64>,
    pub(super) other_process: u64,
    pub(super) non_numeric_counters: u64,
    pub(super) counters_out_of_range: u64,
    pub(super) ignored: BTreeMap<String, u64>,
}

/// At most this many distinct unknown phases are named in the note; more are "other".
pub(super) const MAX_IGNORED_KINDS: usize = 32;

pub(super) struct Importer<'a> {
    pub(super) frames: FrameRule,
    /// The argument holding an instant's key.
    pub(super) key_arg: Option<String>,
    pub(super) framelab: bool,
    pub(super) keep_pids: Option<HashSet<u32>>,
    pub(super) open: HashMap<(u32, u32), Vec<Open<'a>>>,
    pub(super) open_async: HashMap<AsyncKey, Vec<Open<'a>>>,
    pub(super) series: Vec<PendingSeries>,
    pub(super) series_ids: HashMap<(u32, u64, u64), usize>,
    pub(super) tally: Tally,
    pub(super) last_thread: Option<((u32, u32), u32)>,
    /// `process_name` metadata, for the counter series' labels.
    pub(super) process_names: HashMap<u32, String>,
    pub(super) recent_stages: Vec<(String, u16)>,
    pub(super) next_recent: usize,
}

/// At most this many distinct arg (or slice) names are counted for the unmatched-rule
/// error, and this many are listed in it.
pub(super) const MAX_SEEN_INSTEAD: usize = 256;
pub(super) const SEEN_LISTED: usize = 12;

/// How many stage names `Importer::stage` keeps at hand.
pub(super) const RECENT_STAGES: usize = 16;

impl<'a> Importer<'a> {
    pub(super) fn new(b: &TraceBuilder, framelab: bool) -> Importer<'a> {
        let frames = if let Some(arg) = &b.opts.frame_arg {
            FrameRule::Arg(arg.clone())
        } else if b.opts.frame_regex.is_some() {
            FrameRule::Regex
        } else if framelab {
            FrameRule::Arg("frame".into())
        } else {
            FrameRule::EachSlice
        };
        let key_arg = b
            .opts
            .key
            .clone()
            .or_else(|| framelab.then(|| "key".to_owned()));
        Importer {
            frames,
            key_arg,
            framelab,
            keep_pids: None,
            open: HashMap::new(),
            open_async: HashMap::new(),
            series: Vec::new(),
            series_ids: HashMap::new(),
            tally: Tally::default(),
            last_thread: None,
            process_names: HashMap::new(),
            recent_stages: Vec::new(),
            next_recent: 0,
        }
    }

    pub(super) fn handle(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: u64,
    ) -> Result<(), ImportError> {
        let at = Location::Byte(at);
        let Some(ph) = event.ph.as_deref() else {
            return b.bad(at, "trace event without \"ph\" (its phase, e.g. \"X\")");
        };
        let instant = matches!(ph, "i" | "I" | "n" | "R");
        if instant && event.name() == LAUNCH_MARKER {
            if let Some(t) = self.time(b, event.ts, "ts", at)? {
                b.set_origin(t);
            }
            return Ok(());
        }
        if let Some(keep) = &self.keep_pids {
            if !keep.contains(&event.pid()) {
                if ph != "M" {
                    self.tally.other_process += 1;
                }
                return Ok(());
            }
        }
        match ph {
            "X" => self.complete(b, event, at),
            "B" => self.begin(b, event, at),
            "E" => self.end(b, event, at),
            "b" | "S" => self.async_begin(b, event, at),
            "e" | "F" => self.async_end(b, event, at),
            "i" | "I" | "n" => self.instant(b, event, at),
            "C" => self.counter(b, event, at),
            "M" => {
                self.metadata(b, &event);
                Ok(())
            }
            other => {
                self.ignore(other);
                Ok(())
            }
        }
    }

    pub(super) fn ignore(&mut self, phase: &str) {
        let ignored = &mut self.tally.ignored;
        if let Some(n) = ignored.get_mut(phase) {
            *n += 1;
        } else if ignored.len() < MAX_IGNORED_KINDS {
            ignored.insert(phase.to_owned(), 1);
        } else {
            *ignored.entry("other".into()).or_default() += 1;
        }
    }

    /// A time field in ns; `None` when it was bad and `--skip-bad` skips the event.
    pub(super) fn time(
        &self,
        b: &mut TraceBuilder,
        raw: Option<&RawValue>,
        field: &str,
        at: Location,
    ) -> Result<Option<i64>, ImportError> {
        let problem = match raw.map(|r| (r, micros_to_ns(r.get()))) {
            None => format!("trace event without \"{field}\" (microseconds)"),
            // A framelab export's times are relative to the launch: some may precede it.
            Some((_, Ok(ns))) if ns >= 0 || (self.framelab && field == "ts") => {
                return Ok(Some(ns))
            }
            Some((raw, Ok(_))) => format!(
                "negative \"{field}\" ({}): times and durations are microseconds and cannot \
                 be negative",
                shown(raw.get())
            ),
            Some((raw, Err(why))) => format!("\"{field}\" {why}: {}", shown(raw.get())),
        };
        b.bad(at, problem)?;
        Ok(None)
    }

    pub(super) fn thread(&mut self, b: &mut TraceBuilder, event: &RawEvent) -> u32 {
        let pid_tid = (event.pid(), event.tid());
        match self.last_thread {
            Some((key, id)) if key == pid_tid => id,
            _ => {
                let id = b.thread(pid_tid.0, pid_tid.1);
                self.last_thread = Some((pid_tid, id));
                id
            }
        }
    }

    /// The stage id of `name`; recent names are kept here, as looking them up in the
    /// builder (hashing each name) is a good part of the time on big traces.
    pub(super) fn stage(
        &mut self,
        b: &mut TraceBuilder,
        name: &str,
        at: Location,
    ) -> Result<u16, ImportError> {
        if let Some((_, id)) = self.recent_stages.iter().find(|(n, _)| n == name) {
            return Ok(*id);
        }
        let id = b.stage(name, at)?;
        if self.recent_stages.len() < RECENT_STAGES {
            self.recent_stages.push((name.to_owned(), id));
        } else {
            let slot = self.next_recent % RECENT_STAGES;
            self.recent_stages[slot] = (name.to_owned(), id);
            self.next_recent += 1;
        }
        Ok(id)
    }

    /// The frame id and stage of a slice, or `None` (counted) when the frame rule finds no
    /// frame in it. The begin's args are looked at first, then the end's.
    pub(super) fn frame_and_stage(
        &mut self,
        b: &mut TraceBuilder,
        name: &str,
        args: [Option<&RawValue>; 2],
        at: Location,
    ) -> Result<Option<(u64, u16)>, ImportError> {
        let name = if name.is_empty() { UNNAMED } else { name };
        let frame = match &self.frames {
            FrameRule::EachSlice => Some((b.next_frame(), None)),
            FrameRule::Arg(wanted) => args
                .into_iter()
                .flatten()
                .find_map(|a| arg(a, wanted))
                .map(|v| (key_of_raw(v), None)),
            FrameRule::Regex => b
                .opts
                .frame_in_name(name)
                .map(|(frame, stage)| (frame, Some(stage))),
        };
        let Some((frame, stage_name)) = frame else {
            self.tally.no_frame += 1;
            self.remember_instead(name, args);
            return Ok(None);
        };
        self.tally.framed += 1;
        let stage = self.stage(b, stage_name.as_deref().unwrap_or(name), at)?;
        Ok(Some((frame, stage)))
    }

    /// What a slice without a frame carries (its arg names, or its name under
    /// `--frame-regex`), kept while nothing has matched and for a bounded number of names.
    fn remember_instead(&mut self, name: &str, args: [Option<&RawValue>; 2]) {
        if self.tally.framed > 0 {
            return;
        }
        let seen = &mut self.tally.seen_instead;
        let mut count = |key: &str| {
            if let Some(n) = seen.get_mut(key) {
                *n += 1;
            } else if seen.len() < MAX_SEEN_INSTEAD {
                seen.insert(key.to_owned(), 1);
            }
        };
        match self.frames {
            FrameRule::Regex => count(name),
            _ => {
                for a in args.into_iter().flatten() {
                    for_each_arg(a, |key, _| count(key));
                }
            }
        }
    }

    /// A frame rule that matched no slice of a trace that has slices: the import would hold
    /// no frame, so it is an error naming the rule and what the slices carry instead.
    pub(super) fn refuse_unmatched_rule(&self, b: &TraceBuilder) -> Result<(), ImportError> {
        let t = &self.tally;
        if self.framelab || t.framed > 0 || t.no_frame == 0 {
            return Ok(());
        }
        let mut seen: Vec<(&String, &u64)> = t.seen_instead.iter().collect();
        seen.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        // Slice names are long: fewer of them.
        let room = match self.frames {
            FrameRule::Regex => SEEN_LISTED / 2,
            _ => SEEN_LISTED,
        };
        let listed: Vec<String> = seen
            .iter()
            .take(room)
            .map(|(k, n)| format!("{} ({n})", shown(k)))
            .collect();
        let more = match seen.len().saturating_sub(room) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let message = match &self.frames {
            FrameRule::Arg(wanted) if listed.is_empty() => format!(
                "--frame-arg {}: none of the {} slices has args.{}, and they carry no args at \
                 all: take frame ids from the slice names with --frame-regex, or leave both \
                 out to import the slices without frames",
                shown(wanted),
                t.no_frame,
                shown(wanted)
            ),
            FrameRule::Arg(wanted) => format!(
                "--frame-arg {}: none of the {} slices has args.{}; the args its slices carry \
                 (slices with each): {}{more}: give one of them to --frame-arg, or leave it out \
                 to import the slices without frames",
                shown(wanted),
                t.no_frame,
                shown(wanted),
                listed.join(", ")
            ),
            _ => format!(
                "--frame-regex matched none of the {} slice names; its slices are named (slices \
                 with each): {}{more}: fix the pattern, or leave it out to import the \
                 slices without frames",
                t.no_frame,
                listed.join(", ")
            ),
        };
        Err(b.error(Location::Whole, message))
    }

    pub(super) fn complete(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let Some(dur) = self.time(b, event.dur, "dur", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        if let Some((frame, stage)) =
            self.frame_and_stage(b, event.name(), [event.args, None], at)?
        {
            b.span(frame, stage, thread, start, dur);
        }
        Ok(())
    }

    pub(super) fn begin(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        let pid_tid = (event.pid(), event.tid());
        let name = event.name.map_or(Cow::Borrowed(""), |n| n.0);
        self.open.entry(pid_tid).or_default().push(Open {
            name,
            args: event.args,
            thread,
            start_ns: start,
        });
        Ok(())
    }

    pub(super) fn end(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(end) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let pid_tid = (event.pid(), event.tid());
        let Some(open) = self.open.get_mut(&pid_tid).and_then(Vec::pop) else {
            self.tally.unmatched_ends += 1;
            return Ok(());
        };
        if event
            .name
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n != open.name)
        {
            self.tally.mismatched_ends += 1;
        }
        self.close(b, open, end, event.args, at)
    }

    /// A begun slice ended at `end`: a span, unless it ends before it began.
    pub(super) fn close(
        &mut self,
        b: &mut TraceBuilder,
        open: Open<'a>,
        end: i64,
        end_args: Option<&'a RawValue>,
        at: Location,
    ) -> Result<(), ImportError> {
        let dur = end - open.start_ns;
        if dur < 0 {
            return b.bad(
                at,
                format!(
                    "the end of {:?} (ts {end} ns) comes before its begin (ts {} ns)",
                    shown(&open.name),
                    open.start_ns
                ),
            );
        }
        if let Some((frame, stage)) =
            self.frame_and_stage(b, &open.name, [open.args, end_args], at)?
        {
            b.span(frame, stage, open.thread, open.start_ns, dur);
        }
        Ok(())
    }

    pub(super) fn async_key(event: &RawEvent) -> AsyncKey {
        let pid = event.pid();
        let cat = fnv1a(event.cat.as_deref().unwrap_or("").as_bytes());
        let name = fnv1a(event.name().as_bytes());
        (pid, cat, name, id_key(event).unwrap_or(0))
    }

    pub(super) fn async_begin(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(start) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let thread = self.thread(b, &event);
        let key = Self::async_key(&event);
        let name = event.name.map_or(Cow::Borrowed(""), |n| n.0);
        self.open_async.entry(key).or_default().push(Open {
            name,
            args: event.args,
            thread,
            start_ns: start,
        });
        Ok(())
    }

    pub(super) fn async_end(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(end) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let key = Self::async_key(&event);
        let Some(open) = self.open_async.get_mut(&key).and_then(Vec::pop) else {
            self.tally.unmatched_async_ends += 1;
            return Ok(());
        };
        self.close(b, open, end, event.args, at)
    }

    pub(super) fn instant(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(t) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let from_arg = (self.key_arg.as_deref())
            .zip(event.args)
            .and_then(|(name, args)| arg(args, name));
        let key = match from_arg {
            Some(raw) => key_of_raw(raw),
            None => id_key(&event).unwrap_or(0),
        };
        let thread = self.thread(b, &event);
        let name = if event.name().is_empty() {
            UNNAMED
        } else {
            event.name()
        };
        b.event(name, key, thread, t, at)
    }

    pub(super) fn counter(
        &mut self,
        b: &mut TraceBuilder,
        event: RawEvent<'a>,
        at: Location,
    ) -> Result<(), ImportError> {
        let Some(t) = self.time(b, event.ts, "ts", at)? else {
            return Ok(());
        };
        let Some(args) = event.args else {
            self.tally.non_numeric_counters += 1;
            return Ok(());
        };
        let pid = event.pid();
        let name = event.name();
        let id = id_key(&event).map(|id| id.to_string());
        let mut readings = Vec::new();
        for_each_arg(args, |key, value| readings.push((key.to_owned(), value)));
        for (key, value) in readings {
            let milli = match counter_milli(value.get()) {
                Ok(milli) => milli,
                Err(DecimalError::NotANumber) => {
                    self.tally.non_numeric_counters += 1;
                    continue;
                }
                Err(DecimalError::OutOfRange) => {
                    self.tally.counters_out_of_range += 1;
                    continue;
                }
            };
            let name_hash = fnv1a(name.as_bytes())
                ^ id.as_deref()
                    .map_or(0, |i| fnv1a(i.as_bytes()).rotate_left(17));
            let index = *self
                .series_ids
                .entry((pid, name_hash, fnv1a(key.as_bytes())))
                .or_insert_with(|| {
                    let base = match &id {
                        Some(id) => format!("{name}[{id}]"),
                        None => name.to_owned(),
                    };
                    let metric = if key == "value" {
                        base
                    } else {
                        format!("{base}.{key}")
                    };
                    self.series.push(PendingSeries {
                        metric,
                        pid,
                        readings: Vec::new(),
                        fractional: false,
                    });
                    self.series.len() - 1
                });
            let series = &mut self.series[index];
            series.fractional |= milli % 1000 != 0;
            series.readings.push((t, milli));
        }
        Ok(())
    }

    pub(super) fn metadata(&mut self, b: &mut TraceBuilder, event: &RawEvent<'a>) {
        let Some(name) = event.args.and_then(|a| string_arg(a, "name")) else {
            return;
        };
        let pid = event.pid();
        match event.name() {
            "process_name" => {
                b.name_process(pid, &name);
                self.process_names.insert(pid, name.into_owned());
            }
            "thread_name" => b.name_thread(pid, event.tid(), &name),
            _ => {}
        }
    }

    /// Counter series handed over; one note for each kind of thing left out.
    pub(super) fn finish(mut self, b: &mut TraceBuilder) {
        let mut fractional = 0;
        for pending in std::mem::take(&mut self.series) {
            fractional += usize::from(pending.fractional);
            let (unit, divisor) = if pending.fractional {
                ("milli", 1)
            } else {
                ("", 1000)
            };
            let label = match self.process_names.get(&pending.pid) {
                Some(name) => format!("{name} (pid {})", pending.pid),
                None => format!("pid {}", pending.pid),
            };
            let series = b.series(SampleSeries {
                source: "chrome".into(),
                metric: pending.metric,
                entity: pending.pid.to_string(),
                label,
                unit: unit.into(),
                kind: SeriesKind::Gauge,
            });
            for (t, milli) in pending.readings {
                match i64::try_from(milli / divisor) {
                    Ok(value) => b.sample(series, t, value),
                    Err(_) => self.tally.counters_out_of_range += 1,
                }
            }
        }
        if fractional > 0 {
            b.note(format!(
                "{fractional} counter series had fractional values: stored × 1000, unit \"milli\""
            ));
        }
        let unclosed: usize = self.open.values().map(Vec::len).sum();
        let unclosed_async: usize = self.open_async.values().map(Vec::len).sum();
        let t = &self.tally;
        let no_frame_why = match &self.frames {
            FrameRule::Arg(name) => format!("slices had no args.{name} frame id: left out"),
            _ => "slices had names --frame-regex does not match: left out".to_owned(),
        };
        // Each count of something left out or repaired, and what it counts.
        let counted: [(u64, &str); 9] = [
            (
                unclosed as u64,
                "slices begun (B) were never ended (E): left out",
            ),
            (
                t.unmatched_ends,
                "slice ends (E) had no open begin (B) on their thread: left out",
            ),
            (
                t.mismatched_ends,
                "slice ends (E) named another slice than the one they closed (closed anyway)",
            ),
            (
                unclosed_async as u64,
                "async slices begun (b/S) were never ended (e/F): left out",
            ),
            (
                t.unmatched_async_ends,
                "async slice ends (e/F) matched no begin (same pid, cat, id and name): left out",
            ),
            (t.no_frame, &no_frame_why),
            (
                t.other_process,
                "events of other processes than --process left out",
            ),
            (
                t.non_numeric_counters,
                "counter values (C) were not numbers: left out",
            ),
            (
                t.counters_out_of_range,
                "counter values did not fit 64 bits: left out",
            ),
        ];
        let mut notes: Vec<String> = (counted.iter())
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        if !t.ignored.is_empty() {
            let total: u64 = t.ignored.values().sum();
            let kinds: Vec<String> = t
                .ignored
                .iter()
                .map(|(phase, n)| format!("{phase:?} ×{n}"))
                .collect();
            notes.push(format!(
                "{total} events of phases framelab does not import (flows, samples, objects, \
                 marks...) ignored: {}",
                kinds.join(", ")
            ));
        }
        if matches!(self.frames, FrameRule::EachSlice) {
            notes.push(crate::model::ImportInfo::NO_FRAMES.to_owned());
        }
        for note in notes {
            b.note(note);
        }
    }
}
