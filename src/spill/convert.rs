//! Ring records into the run's spans, counters and events: names resolved per process to
//! run-level ids (given in order of first appearance), ticks converted to nanoseconds since
//! launch, records the program damaged counted as invalid. One converter serves the drain
//! of a run that converts as it goes, the fold of its spill at the end, and the fold of a
//! spill a killed run left (`store::spill_fold`): fed the same records in the same order
//! with the same names and clock segments, it gives the same run.

use std::collections::HashMap;
use std::path::PathBuf;

use framelab_probe::wire::{self, kind, name_kind, Record};

use super::clock::TickClock;
use super::names::{NamesFiles, ProcessNames};
use crate::model::{CounterValue, EventRecord, Span};

/// Clock reads around the launch are not perfectly ordered: allow this much before it.
const LAUNCH_SLACK_NS: i64 = 1_000_000;

/// Per process, local name id → (kind, run-level id): an array index per record, no hashing.
type LocalIds = Vec<Option<(char, u16)>>;

pub struct Converter {
    origin_mono_ns: i64,
    pub clock: TickClock,
    /// The clock's segments a record may pick: those there were when it was drained.
    segments: usize,
    /// No span drained now can end after this (ns after launch; set at each drain).
    latest_end_ns: i64,
    pub names: HashMap<u32, ProcessNames>,
    ids: HashMap<u32, LocalIds>,
    run_ids: HashMap<(char, String), u16>,
    /// Names of each kind given so far: the next id of that kind.
    names_added: HashMap<char, u16>,
    /// Names given run-level ids and not yet taken (`take_named`): the store adds them in
    /// this order, so its ids are the converter's.
    named: Vec<(char, String)>,
    /// The names files, read again when a record names an id not yet read (kept open);
    /// none in a fold, whose names come from the spill.
    names_files: Option<NamesFiles>,
    pub first_stage: Option<u16>,
    pub frames_seen: u64,
    /// With `--warmup-frames N`: N + 1, and the start of that frame once seen.
    pub opening_frame: Option<(u64, Option<i64>)>,
    pub invalid_records: u64,
    /// Records under a name the SDK refused (id 0: its table was full): missing, not invalid.
    pub refused_name_records: u64,
    pub first_span_ns: Option<i64>,
    /// Converted, held until the caller takes them.
    pub spans: Vec<Span>,
    pub counters: Vec<CounterValue>,
    pub events: Vec<EventRecord>,
    /// Problems worth a line, in order; the caller says each once.
    pub warnings: Vec<String>,
}

impl Converter {
    pub fn new(origin_mono_ns: i64, clock: TickClock, names_dir: Option<PathBuf>) -> Converter {
        Converter {
            origin_mono_ns,
            segments: clock.segment_count(),
            clock,
            latest_end_ns: i64::MAX,
            names: HashMap::new(),
            ids: HashMap::new(),
            run_ids: HashMap::new(),
            names_added: HashMap::new(),
            named: Vec::new(),
            names_files: names_dir.map(NamesFiles::new),
            first_stage: None,
            frames_seen: 0,
            opening_frame: None,
            invalid_records: 0,
            refused_name_records: 0,
            first_span_ns: None,
            spans: Vec::new(),
            counters: Vec::new(),
            events: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Names the run already has, in id order per kind (a fold into a run file continues
    /// its ids).
    pub fn already_named(&mut self, kind: char, names: impl IntoIterator<Item = String>) {
        for name in names {
            let next = self.names_added.entry(kind).or_insert(0);
            self.run_ids.insert((kind, name), *next);
            *next += 1;
        }
    }

    /// Whether a record naming an id not yet read reads its names file again (the live
    /// drain), or takes only the names given (`ProcessNames::feed_at`, a fold).
    pub fn read_names_from(&mut self, dir: Option<PathBuf>) {
        self.names_files = dir.map(NamesFiles::new);
    }

    /// Process `pid`'s names appended since they were last read, taken in; the bytes and
    /// where in its file they began (nothing when nothing is new, or in a fold).
    pub fn refresh_names(&mut self, pid: u32) -> Option<(u64, Vec<u8>)> {
        let files = self.names_files.as_mut()?;
        self.names.entry(pid).or_default().refresh(files, pid)
    }

    /// Process `pid` has no ring left: its names file is closed.
    pub fn close_names_file(&mut self, pid: u32) {
        if let Some(files) = self.names_files.as_mut() {
            files.close(pid);
        }
    }

    /// Names files kept open now.
    pub fn names_files_open(&self) -> usize {
        self.names_files.as_ref().map_or(0, NamesFiles::open_count)
    }

    /// Before a drain's records: the latest end a span may have, and the clock's segments
    /// they convert on (both as they were at the drain).
    pub fn begin_drain(&mut self, latest_end_ns: i64, segments: usize) {
        self.latest_end_ns = latest_end_ns;
        self.segments = segments;
    }

    /// The clock's segments now (what `begin_drain` takes for a drain made now).
    pub fn segments_now(&self) -> usize {
        self.clock.segment_count()
    }

    /// Names given run-level ids since the last call, in the order given.
    pub fn take_named(&mut self) -> Vec<(char, String)> {
        std::mem::take(&mut self.named)
    }

    /// Records, all of process `pid`'s thread `thread` whose ring stamps `clock`.
    pub fn convert_records(&mut self, pid: u32, clock: u32, thread: u32, records: &[Record]) {
        let mut ids = self.ids.remove(&pid).unwrap_or_default();
        for record in records {
            self.convert(&mut ids, pid, clock, thread, record);
        }
        self.ids.insert(pid, ids);
    }

    /// A spilled chunk, converted as the drain that spilled it would have.
    pub fn convert_drained(&mut self, chunk: &super::file::Drained) {
        let of = &chunk.of;
        self.begin_drain(of.latest_end_ns, of.segments);
        self.convert_records(of.pid, of.clock, of.thread, chunk.records);
    }

    #[inline]
    fn to_ns(&self, ticks: u64, clock_kind: u32) -> i64 {
        // Saturating: the values are the program's, and may be anything.
        if clock_kind == wire::CLOCK_TSC {
            self.clock
                .to_mono_ns_within(ticks, self.segments)
                .saturating_sub(self.origin_mono_ns)
        } else {
            (ticks.min(i64::MAX as u64) as i64).saturating_sub(self.origin_mono_ns)
        }
    }

    #[inline]
    fn convert(&mut self, ids: &mut LocalIds, pid: u32, clock: u32, thread: u32, record: &Record) {
        match record.kind() {
            kind::SPAN | kind::SPAN_NS => {
                let Some(stage) = self.resolve(ids, pid, record.name(), name_kind::STAGE) else {
                    self.unresolved(record.name());
                    return;
                };
                let clock_kind = if record.kind() == kind::SPAN_NS {
                    wire::CLOCK_MONO
                } else {
                    clock
                };
                let start_ns = self.to_ns(record.a, clock_kind);
                let end_ns = self.to_ns(record.b, clock_kind);
                let Some(dur_ns) = end_ns.checked_sub(start_ns).filter(|&d| d >= 0) else {
                    self.invalid_records += 1;
                    return;
                };
                // Stamped by the SDK after launch, and not later than now: anything else in
                // a ring is garbage the program wrote over its records.
                if record.kind() == kind::SPAN
                    && (start_ns < -LAUNCH_SLACK_NS || end_ns > self.latest_end_ns)
                {
                    self.invalid_records += 1;
                    return;
                }
                // Nothing the command did can start before it was launched: a given span that
                // does is in another clock or unit (TSC ticks, µs, a GPU's own clock).
                if record.kind() == kind::SPAN_NS && start_ns < -LAUNCH_SLACK_NS {
                    self.invalid_records += 1;
                    self.warnings.push(format!(
                        "spans given with record_ns/fl_span_ns start before the command was launched (e.g. {:.3} s before): give CLOCK_MONOTONIC nanoseconds; they are counted as invalid",
                        -start_ns as f64 / 1e9
                    ));
                    return;
                }
                self.keep_span(Span {
                    frame: record.frame,
                    stage,
                    thread,
                    start_ns,
                    dur_ns,
                });
            }
            kind::COUNTER => match self.resolve(ids, pid, record.name(), name_kind::COUNTER) {
                Some(counter) => self.counters.push(CounterValue {
                    frame: record.frame,
                    counter,
                    value: record.a as i64,
                }),
                None => self.unresolved(record.name()),
            },
            kind::EVENT => match self.resolve(ids, pid, record.name(), name_kind::EVENT) {
                Some(event) => {
                    let t_ns = self.to_ns(record.a, clock);
                    self.events.push(EventRecord {
                        event,
                        key: record.frame,
                        thread,
                        t_ns,
                    });
                }
                None => self.unresolved(record.name()),
            },
            _ => self.invalid_records += 1,
        }
    }

    /// Counts a record whose name id resolves to no name of its kind.
    fn unresolved(&mut self, local: u16) {
        if local == 0 {
            self.refused_name_records += 1;
        } else {
            self.invalid_records += 1;
        }
    }

    /// Keeps a span, counting frames by the first stage seen (what `--warmup-frames`
    /// waits for).
    pub fn keep_span(&mut self, span: Span) {
        let (stage, start_ns) = (span.stage, span.start_ns);
        if self.first_span_ns.is_none_or(|first| start_ns < first) {
            self.first_span_ns = Some(start_ns);
        }
        if self.first_stage.is_none() {
            self.first_stage = Some(stage);
        }
        if self.first_stage == Some(stage) {
            self.frames_seen += 1;
            if let Some((n, start @ None)) = &mut self.opening_frame {
                if *n == self.frames_seen {
                    *start = Some(start_ns);
                }
            }
        }
        self.spans.push(span);
    }

    /// The run-level id of a process's local name id, reading its names file again on a miss.
    /// The hit, every record but a name's first, is inlined into the drain's loop; the rest
    /// is out of line (measured: a call per record, its answer through memory, was 3.5% of
    /// framelab's samples at 1M spans/s).
    #[inline(always)]
    fn resolve(&mut self, ids: &mut LocalIds, pid: u32, local: u16, kind: char) -> Option<u16> {
        match ids.get(local as usize) {
            Some(Some((k, id))) if *k == kind => Some(*id),
            Some(Some(_)) => None,
            _ if local == 0 => None,
            _ => self.resolve_unseen(ids, pid, local, kind),
        }
    }

    /// `resolve` of a local id not yet given a run-level id: its names file read again.
    #[cold]
    #[inline(never)]
    fn resolve_unseen(
        &mut self,
        ids: &mut LocalIds,
        pid: u32,
        local: u16,
        kind: char,
    ) -> Option<u16> {
        let names = self.names.entry(pid).or_default();
        if !names.names.contains_key(&local) {
            if let Some(files) = self.names_files.as_mut() {
                names.refresh(files, pid);
            }
        }
        // Not interned (yet): not cached, a later refresh may find it.
        let (name_kind, name) = names.names.get(&local).cloned()?;
        let id = self.run_id(name_kind, &name);
        if ids.len() <= local as usize {
            ids.resize(local as usize + 1, None);
        }
        ids[local as usize] = Some((name_kind, id));
        (name_kind == kind).then_some(id)
    }

    /// The run's id of a name of `kind`, given (and queued for the store) the first time.
    pub fn run_id(&mut self, name_kind: char, name: &str) -> u16 {
        if let Some(&id) = self.run_ids.get(&(name_kind, name.to_owned())) {
            return id;
        }
        let next = self.names_added.entry(name_kind).or_insert(0);
        let id = *next;
        *next = next.wrapping_add(1);
        self.named.push((name_kind, name.to_owned()));
        self.run_ids.insert((name_kind, name.to_owned()), id);
        id
    }

    /// The run's id of a name already given.
    pub fn given_id(&self, name_kind: char, name: &str) -> Option<u16> {
        self.run_ids.get(&(name_kind, name.to_owned())).copied()
    }

    /// Process `pid`'s local id of the first stage, where its names say (a spilling drain
    /// counts frames with it, converting nothing).
    pub fn first_stage_local(&self, pid: u32, first_stage_name: &str) -> Option<u16> {
        self.names
            .get(&pid)?
            .names
            .iter()
            .find_map(|(&local, (k, n))| {
                (*k == name_kind::STAGE && n == first_stage_name).then_some(local)
            })
    }

    /// The name of a stage given run-level id `id`.
    pub fn stage_name(&self, id: u16) -> Option<&str> {
        self.run_ids
            .iter()
            .find(|((k, _), &v)| *k == name_kind::STAGE && v == id)
            .map(|((_, n), _)| n.as_str())
    }

    /// Records held (spans, counters and events).
    pub fn held(&self) -> usize {
        self.spans.len() + self.counters.len() + self.events.len()
    }
}
