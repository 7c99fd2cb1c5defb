//! What every importer fills: names interned, threads by (pid, tid), spans and events at
//! absolute times of the trace's own clock, samples, histograms, and what was skipped.
//! `finish` turns it into an ordinary run with times relative to the trace's origin.

use std::collections::HashMap;

use super::{ImportError, ImportOptions, Location};
use crate::analyze::pair::pair_events;
use crate::formats::carried::Carried;
use crate::model::{
    CounterValue, EndReason, EventRecord, Histogram, ImportInfo, Run, RunMeta, Sample,
    SampleSeries, SourceState, SourceStatus, Span, ThreadInfo,
};

/// A run file holds at most this many names of one kind (ids are 16-bit).
const MAX_NAMES: usize = u16::MAX as usize + 1;

#[derive(Default)]
struct Interner {
    ids: HashMap<String, u16>,
    names: Vec<String>,
}

impl Interner {
    fn get(&mut self, name: &str) -> Option<u16> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        if self.names.len() >= MAX_NAMES {
            return None;
        }
        let id = self.names.len() as u16;
        self.ids.insert(name.to_owned(), id);
        self.names.push(name.to_owned());
        Some(id)
    }
}

pub struct TraceBuilder {
    pub opts: ImportOptions,
    format: &'static str,
    /// The file being parsed, for error locations.
    file: String,
    files: Vec<String>,
    stages: Interner,
    event_names: Interner,
    threads: Vec<ThreadInfo>,
    thread_ids: HashMap<(u32, u32), u32>,
    process_names: HashMap<u32, String>,
    spans: Vec<Span>,
    events: Vec<EventRecord>,
    series: Vec<SampleSeries>,
    series_ids: HashMap<SampleSeries, u32>,
    samples: Vec<Sample>,
    histograms: Vec<Histogram>,
    origin_ns: Option<i64>,
    skipped: u64,
    first_skipped: Option<String>,
    notes: Vec<String>,
    next_frame: u64,
    /// A framelab export's run description ([`crate::formats::carried`]).
    carried: Option<Carried>,
    /// The trace is a framelab export (its marker was seen).
    framelab_export: bool,
}

impl TraceBuilder {
    pub fn new(format: &'static str, opts: ImportOptions) -> TraceBuilder {
        TraceBuilder {
            opts,
            format,
            file: String::new(),
            files: Vec::new(),
            stages: Interner::default(),
            event_names: Interner::default(),
            threads: Vec::new(),
            thread_ids: HashMap::new(),
            process_names: HashMap::new(),
            spans: Vec::new(),
            events: Vec::new(),
            series: Vec::new(),
            series_ids: HashMap::new(),
            samples: Vec::new(),
            histograms: Vec::new(),
            origin_ns: None,
            skipped: 0,
            first_skipped: None,
            notes: Vec::new(),
            next_frame: 0,
            carried: None,
            framelab_export: false,
        }
    }

    /// The trace is a framelab export: without a run description in it, the import says
    /// what it could not give back.
    pub fn mark_framelab_export(&mut self) {
        self.framelab_export = true;
    }

    /// A description a trace carries (a track's, `otherData`'s): when it is a framelab
    /// export's run description, the run's name, target, window, processes, counters… are
    /// taken from it. Another tool's description is left alone; a damaged one is noted.
    pub fn describe_run(&mut self, text: &str) {
        match Carried::parse(text) {
            None => {}
            Some(Err(why)) => self.notes.push(format!(
                "this framelab export's run could not be restored ({why}): its name, \
                 command, target, warmup window, end, processes and counters are not known"
            )),
            Some(Ok(_)) if self.carried.is_some() => self.notes.push(
                "a second framelab run description was ignored: the run is described by \
                 the first file's"
                    .into(),
            ),
            Some(Ok(carried)) => {
                self.framelab_export = true;
                self.carried = Some(carried);
            }
        }
    }

    /// The importer's name (`chrome`, `wayland`, ...).
    pub fn format(&self) -> &'static str {
        self.format
    }

    /// Starts a new input file: later errors and skips name it.
    pub fn start_file(&mut self, name: &str) {
        self.file = name.to_owned();
        self.files.push(name.to_owned());
    }

    /// An error at `at` in the current file.
    pub fn error(&self, at: Location, message: impl Into<String>) -> ImportError {
        ImportError {
            file: self.file.clone(),
            at,
            message: message.into(),
        }
    }

    /// A malformed record: an error, or with `--skip-bad` counted (the first one kept)
    /// and parsing goes on. Importers write `b.bad(at, "why")?;` and move to the next record.
    pub fn bad(&mut self, at: Location, message: impl Into<String>) -> Result<(), ImportError> {
        let error = self.error(at, message);
        if !self.opts.skip_bad {
            return Err(error);
        }
        self.skipped += 1;
        self.first_skipped
            .get_or_insert_with(|| without_skip_bad_advice(&error.to_string()));
        Ok(())
    }

    /// One line for the report: something counted that could not become spans.
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// The trace's zero (a framelab export's launch marker): times are stored relative to
    /// it. Without one, the earliest timestamp is the origin.
    pub fn set_origin(&mut self, t_ns: i64) {
        self.origin_ns = Some(t_ns);
    }

    /// The id of stage `name`; an error past 65,536 distinct names.
    pub fn stage(&mut self, name: &str, at: Location) -> Result<u16, ImportError> {
        self.stages.get(name).ok_or_else(|| {
            self.error(
                at,
                format!(
                    "more than {MAX_NAMES} distinct span names, the most a run holds; \
                     name frames with --frame-arg or --frame-regex so the name is the stage"
                ),
            )
        })
    }

    /// The id of thread (pid, tid), added on first use.
    pub fn thread(&mut self, pid: u32, tid: u32) -> u32 {
        if let Some(&id) = self.thread_ids.get(&(pid, tid)) {
            return id;
        }
        let id = self.threads.len() as u32;
        self.threads.push(ThreadInfo {
            pid,
            tid,
            name: String::new(),
            dropped: 0,
        });
        self.thread_ids.insert((pid, tid), id);
        id
    }

    pub fn name_thread(&mut self, pid: u32, tid: u32, name: &str) {
        let id = self.thread(pid, tid);
        self.threads[id as usize].name = name.to_owned();
    }

    /// Threads without a name of their own are shown as their process's name.
    pub fn name_process(&mut self, pid: u32, name: &str) {
        self.process_names.insert(pid, name.to_owned());
    }

    /// A frame id for a record that carries none: one per record, counting up.
    pub fn next_frame(&mut self) -> u64 {
        self.next_frame += 1;
        self.next_frame - 1
    }

    /// A span at absolute trace time `start_ns`. Negative durations are the importer's
    /// to reject (`bad`) before calling.
    pub fn span(&mut self, frame: u64, stage: u16, thread: u32, start_ns: i64, dur_ns: i64) {
        self.spans.push(Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        });
    }

    /// An instant with a key (what `--pair` matches on).
    pub fn event(
        &mut self,
        name: &str,
        key: u64,
        thread: u32,
        t_ns: i64,
        at: Location,
    ) -> Result<(), ImportError> {
        let event = self.event_names.get(name).ok_or_else(|| {
            self.error(
                at,
                format!("more than {MAX_NAMES} distinct event names, the most a run holds"),
            )
        })?;
        self.events.push(EventRecord {
            event,
            key,
            thread,
            t_ns,
        });
        Ok(())
    }

    /// A sample series (a counter track, a CSV column); readings refer to the returned id.
    pub fn series(&mut self, series: SampleSeries) -> u32 {
        if let Some(&id) = self.series_ids.get(&series) {
            return id;
        }
        let id = self.series.len() as u32;
        self.series_ids.insert(series.clone(), id);
        self.series.push(series);
        id
    }

    pub fn sample(&mut self, series: u32, t_ns: i64, value: i64) {
        self.samples.push(Sample {
            series,
            t_ns,
            value,
        });
    }

    pub fn histogram(&mut self, histogram: Histogram) {
        self.histograms.push(histogram);
    }

    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// The run: times made relative to the origin, `--pair` applied, samples ordered.
    pub fn finish(mut self, mut meta: RunMeta) -> Result<Run, ImportError> {
        let earliest = self
            .spans
            .iter()
            .map(|s| s.start_ns)
            .chain(self.events.iter().map(|e| e.t_ns))
            .chain(self.samples.iter().map(|s| s.t_ns))
            .min();
        let origin = self.origin_ns.or(earliest).unwrap_or(0);
        let rebase = |t: i64| t.saturating_sub(origin);
        for s in &mut self.spans {
            s.start_ns = rebase(s.start_ns);
        }
        for e in &mut self.events {
            e.t_ns = rebase(e.t_ns);
        }
        for s in &mut self.samples {
            s.t_ns = rebase(s.t_ns);
        }
        self.samples.sort_by_key(|s| (s.series, s.t_ns));
        let before = self.samples.len();
        // The store keys readings by (series, time): of two at one instant the first stays.
        self.samples.dedup_by(|later, earlier| {
            later.series == earlier.series && later.t_ns == earlier.t_ns
        });
        let merged = before - self.samples.len();
        if merged > 0 {
            self.notes.push(format!(
                "{merged} samples shared a timestamp with another of their series and were merged"
            ));
        }
        for thread in &mut self.threads {
            if thread.name.is_empty() {
                if let Some(name) = self.process_names.get(&thread.pid) {
                    thread.name = name.clone();
                }
            }
        }

        let mut run = Run {
            stages: std::mem::take(&mut self.stages.names),
            event_names: std::mem::take(&mut self.event_names.names),
            threads: self.threads,
            spans: self.spans,
            events: self.events,
            histograms: self.histograms,
            ..Run::default()
        };
        if !self.samples.is_empty() {
            run.telemetry.sources.push(SourceStatus {
                source: self.format.into(),
                state: SourceState::On,
                detail: format!("{} readings imported", self.samples.len()),
                reads: self.samples.len() as u64,
                ..SourceStatus::default()
            });
        }
        run.telemetry.series = self.series;
        run.telemetry.samples = self.samples;
        for spec in &self.opts.pairs {
            let paired = pair_events(&run, spec);
            // A pair whose events the input lacks (a misspelt name, a trace of another
            // kind): the run would lack the stage asked for, said only in a note.
            if !paired.start_seen || !paired.end_seen {
                let missing = if paired.start_seen {
                    &spec.end
                } else {
                    &spec.start
                };
                return Err(ImportError {
                    file: self.file.clone(),
                    at: Location::Whole,
                    message: format!(
                        "--pair {}: no event named {missing:?} ({}); check the names",
                        spec.name(),
                        paired.events_it_has
                    ),
                });
            }
            let stage = u16::try_from(run.stages.len()).map_err(|_| ImportError {
                file: self.file.clone(),
                at: Location::Whole,
                message: format!("no room for the paired stage {}", spec.name()),
            })?;
            run.stages.push(spec.name());
            self.notes.extend(paired.notes(spec));
            run.spans
                .extend(paired.spans.into_iter().map(|s| Span { stage, ..s }));
        }

        let end = run
            .spans
            .iter()
            .map(Span::end_ns)
            .chain(run.events.iter().map(|e| e.t_ns))
            .chain(run.telemetry.samples.iter().map(|s| s.t_ns))
            .max()
            .unwrap_or(0);
        meta.origin_mono_ns = origin;
        meta.window_start_ns = 0;
        meta.window_end_ns = end.max(0);
        meta.end_reason = EndReason::Exited;
        meta.clock = "imported".into();
        run.meta = meta;
        match self.carried.take() {
            Some(carried) => restore(&mut run, carried, &mut self.notes),
            None if self.framelab_export => self.notes.push(
                "this framelab export carries no run description (an export of framelab \
                 before it carried one, or a trace edited since): the run's name, command, \
                 target, warmup window, end, processes and counters are not known; the \
                 window is the whole trace"
                    .into(),
            ),
            None => {}
        }
        run.import = Some(ImportInfo {
            format: self.format.into(),
            files: self.files,
            skipped: self.skipped,
            first_skipped: self.first_skipped,
            notes: self.notes,
        });
        Ok(run)
    }
}

/// A framelab export's run description put back: the run's metadata (the window
/// included: times are the exported run's own, relative to its launch), process table,
/// sources' status, counters, dropped records per thread and histograms.
fn restore(run: &mut Run, carried: Carried, notes: &mut Vec<String>) {
    match carried.meta() {
        Ok(mut meta) => {
            meta.id = 0;
            run.meta = meta;
        }
        Err(why) => notes.push(format!(
            "this framelab export's run metadata could not be restored ({why}): its name, \
             command, target, warmup window and end are not known"
        )),
    }
    run.processes = carried.processes;
    // Counters known by name only (Chrome JSON) get their series back: source, metric,
    // entity, label, unit and kind.
    let by_name: HashMap<String, &SampleSeries> = (carried.series.iter())
        .map(|s| (crate::formats::series_name(s), s))
        .collect();
    for s in &mut run.telemetry.series {
        if let Some(&exported) = by_name.get(&s.metric) {
            *s = exported.clone();
        }
    }
    if !carried.sources.is_empty() {
        run.telemetry.sources = carried.sources;
    }
    let counters = carried.counter_names.len();
    run.counter_names = carried.counter_names;
    let before = carried.counters.len();
    run.counters = (carried.counters.into_iter())
        .filter(|&(_, counter, _)| usize::from(counter) < counters)
        .map(|(frame, counter, value)| CounterValue {
            frame,
            counter,
            value,
        })
        .collect();
    if run.counters.len() < before {
        notes.push(format!(
            "{} counter values named no counter of the run description and were left out",
            before - run.counters.len()
        ));
    }
    for (pid, tid, dropped) in carried.dropped {
        if let Some(t) = run
            .threads
            .iter_mut()
            .find(|t| t.pid == pid && t.tid == tid)
        {
            t.dropped = dropped;
        }
    }
    run.histograms.extend(carried.histograms);
    if let Some(original) = carried.import {
        notes.push(format!(
            "the exported run was itself imported ({} from {})",
            original.format,
            original.files.join(", ")
        ));
        notes.extend(
            (original.notes.into_iter()).map(|n| format!("in the exported run's import: {n}")),
        );
    }
}

/// An error's text minus its advice to pass `--skip-bad`, for the report of a run that
/// was imported with it: `…: no "ph"; pass --skip-bad to skip such lines` → `…: no "ph"`.
fn without_skip_bad_advice(message: &str) -> String {
    let Some(at) = message.find("--skip-bad") else {
        return message.to_owned();
    };
    let before = &message[..at];
    let cut = ["; ", ", or ", " ("]
        .iter()
        .filter_map(|sep| before.rfind(sep))
        .max()
        .unwrap_or(at);
    message[..cut].trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::without_skip_bad_advice as trim;

    #[test]
    fn skip_bad_advice_is_left_out_of_the_report() {
        assert_eq!(
            trim("f:3: bad x; pass --skip-bad to skip such lines"),
            "f:3: bad x"
        );
        assert_eq!(
            trim("f:3: bad `[1.0] a@1.b()`, or pass --skip-bad to go on"),
            "f:3: bad `[1.0] a@1.b()`"
        );
        assert_eq!(
            trim("f: cut short (--skip-bad imports the events before it)"),
            "f: cut short"
        );
        assert_eq!(trim("f:3: plain"), "f:3: plain");
    }
}
