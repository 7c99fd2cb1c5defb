//! Perfetto protobuf traces: the track events an app writes with the Perfetto SDK (or
//! `framelab export --format perfetto` wrote), read packet by packet.
//!
//! - Threads and processes come from track descriptors. A slice is placed on the thread
//!   of the nearest track up its parent chain that describes a thread; slices on other
//!   tracks (a process's async tracks, a global track) go on thread `(pid, 0)` of the
//!   nearest process up the chain, or `(0, 0)` for tracks of no process.
//! - Slices are a stack per track: an END closes the latest open BEGIN on its track.
//!   Unclosed BEGINs and ENDs with nothing open are counted in a note each.
//! - Instants become events (key: the `--key` debug annotation, else 0); counters become
//!   samples, one series per counter track.
//! - Frames: the `--frame-arg` debug annotation, else `--frame-regex` on the name, else
//!   each slice its own frame. A framelab export (it starts with the launch marker
//!   instant) carries `frame` and `key` annotations that are used without being asked,
//!   and its counter tracks describe their series exactly (their `description`); the
//!   `description` of its `framelab` track gives back the rest of the run (name, target,
//!   window, processes, counters: `crate::formats::carried`).
//! - Times are the packets' timestamps in ns. Sequence-scoped incremental clocks (the
//!   SDK's default) are resolved through their sequence's clock snapshot; clocks are
//!   otherwise not converted into each other (noted when a trace mixes them).
//! - Memory: one packet is decoded at a time; what stays is the run being built, open
//!   slices, and per-sequence interned names.

pub use crate::formats::perfetto::proto;

use std::collections::HashSet;
use std::io::Read;
use std::rc::Rc;

use prost::Message;

use super::keys::key_of;
use super::{ImportError, Location, TraceBuilder};
use crate::fast_map::FastMap;
use crate::formats::perfetto::{read_pid, FRAME_ANNOTATION, KEY_ANNOTATION};
use crate::formats::LAUNCH_MARKER;
use crate::model::{SampleSeries, SeriesKind};
use proto::{
    ClockSnapshot, DebugAnnotation, InternedData, TracePacket, TrackDescriptor, TrackEvent,
    SEQ_INCREMENTAL_STATE_CLEARED, TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    UNIT_COUNT, UNIT_SIZE_BYTES, UNIT_TIME_NS,
};

/// Parent chains longer than this are taken as cycles (a damaged trace).
const MAX_TRACK_DEPTH: usize = 64;
/// The most one `compressed_packets` field may inflate to (Perfetto writes ~1 MB chunks).
const MAX_INFLATED: u64 = 64 << 20;
/// Sequence-scoped clock ids (the SDK's incremental clock is 64).
const SEQUENCE_CLOCKS: std::ops::Range<u32> = 64..128;

pub fn parse(input: &[u8], b: &mut TraceBuilder) -> Result<(), ImportError> {
    if input.is_empty() {
        return Err(b.error(
            Location::Whole,
            "the file is empty: a Perfetto trace holds at least one packet",
        ));
    }
    if input.first() != Some(&0x0A) {
        return Err(b.error(
            Location::Byte(0),
            "not a Perfetto protobuf trace: it does not start with a trace packet (byte 0x0A); \
             pass --format to read it as another format",
        ));
    }
    let mut importer = Importer::new(b);
    importer.read_top_level(input)?;
    importer.finish()
}

/// Where a track event lives: a described track, the thread of a sequence's legacy
/// thread descriptor, or nowhere in particular.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TrackRef {
    Uuid(u64),
    Thread(u32, u32),
    Global,
}

/// What a track belongs to, found up its parent chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Thread(u32, u32),
    Process(u32),
    Global,
}

impl Owner {
    fn pid(self) -> Option<u32> {
        match self {
            Owner::Thread(pid, _) | Owner::Process(pid) => Some(pid),
            Owner::Global => None,
        }
    }

    /// The thread a slice or instant on this owner's tracks is put on.
    fn thread(self) -> (u32, u32) {
        match self {
            Owner::Thread(pid, tid) => (pid, tid),
            Owner::Process(pid) => (pid, 0),
            Owner::Global => (0, 0),
        }
    }
}

#[derive(Default)]
struct TrackInfo {
    parent: Option<u64>,
    name: String,
    description: Option<String>,
    thread: Option<(u32, u32)>,
    process: Option<u32>,
    counter: Option<CounterInfo>,
}

struct CounterInfo {
    unit: String,
    multiplier: i64,
    incremental: bool,
}

/// A sequence-scoped clock defined by a clock snapshot: its values map to
/// `reference_ns + (value - snapshot_value) * multiplier` of the snapshot's trace clock.
struct SequenceClock {
    incremental: bool,
    value: u64,
    snapshot_value: u64,
    reference_ns: i128,
    multiplier: u64,
    reference_clock: u32,
}

/// What a `trusted_packet_sequence_id` carries from packet to packet.
#[derive(Default)]
struct Sequence {
    event_names: FastMap<u64, Rc<str>>,
    annotation_names: FastMap<u64, Rc<str>>,
    annotation_strings: FastMap<u64, Rc<str>>,
    default_track: Option<u64>,
    default_extra_counters: Vec<u64>,
    default_extra_double_counters: Vec<u64>,
    default_clock: Option<u32>,
    clocks: FastMap<u32, SequenceClock>,
    /// The deprecated `TracePacket.thread_descriptor`: the thread of track-less events.
    thread: Option<(u32, u32)>,
}

impl Sequence {
    /// `SEQ_INCREMENTAL_STATE_CLEARED`: interned data, defaults and clocks start over.
    fn clear_incremental_state(&mut self) {
        let thread = self.thread;
        *self = Sequence {
            thread,
            ..Sequence::default()
        };
    }

    fn intern(&mut self, data: &InternedData) {
        let named = |names: &[proto::InternedName], into: &mut FastMap<u64, Rc<str>>| {
            for entry in names {
                if let (Some(iid), Some(name)) = (entry.iid, &entry.name) {
                    into.insert(iid, Rc::from(name.as_str()));
                }
            }
        };
        named(&data.event_names, &mut self.event_names);
        named(&data.debug_annotation_names, &mut self.annotation_names);
        for entry in &data.debug_annotation_string_values {
            if let (Some(iid), Some(bytes)) = (entry.iid, &entry.str) {
                let text = String::from_utf8_lossy(bytes);
                self.annotation_strings.insert(iid, Rc::from(text.as_ref()));
            }
        }
    }

    fn apply_defaults(&mut self, defaults: &proto::TracePacketDefaults) {
        self.default_clock = defaults.timestamp_clock_id;
        let track = defaults.track_event_defaults.clone().unwrap_or_default();
        self.default_track = track.track_uuid;
        self.default_extra_counters = track.extra_counter_track_uuids;
        self.default_extra_double_counters = track.extra_double_counter_track_uuids;
    }

    /// Sequence-scoped clocks of a snapshot, tied to its first trace-wide clock.
    fn define_clocks(&mut self, snapshot: &ClockSnapshot) {
        let reference = snapshot
            .clocks
            .iter()
            .find(|c| c.clock_id.is_some_and(|id| !SEQUENCE_CLOCKS.contains(&id)));
        for clock in &snapshot.clocks {
            let (Some(id), Some(value)) = (clock.clock_id, clock.timestamp) else {
                continue;
            };
            if !SEQUENCE_CLOCKS.contains(&id) {
                continue;
            }
            let multiplier = clock.unit_multiplier_ns.unwrap_or(1).max(1);
            // u64 × u64 fits in i128 only by saturating: such a clock is damaged anyway.
            let (reference_ns, reference_clock) = match reference {
                Some(r) => (
                    i128::from(r.timestamp.unwrap_or(0))
                        .saturating_mul(i128::from(r.unit_multiplier_ns.unwrap_or(1).max(1))),
                    r.clock_id.unwrap_or(0),
                ),
                None => (i128::from(value).saturating_mul(i128::from(multiplier)), id),
            };
            self.clocks.insert(
                id,
                SequenceClock {
                    incremental: clock.is_incremental.unwrap_or(false),
                    value,
                    snapshot_value: value,
                    reference_ns,
                    multiplier,
                    reference_clock,
                },
            );
        }
    }

    fn annotation_name<'a>(&'a self, a: &'a DebugAnnotation) -> Option<&'a str> {
        match (&a.name, a.name_iid) {
            (Some(name), _) => Some(name),
            (None, Some(iid)) => self.annotation_names.get(&iid).map(|n| &**n),
            (None, None) => None,
        }
    }

    /// The value of the annotation `name` as a frame id or event key.
    fn annotation_key(&self, event: &TrackEvent, name: &str) -> Option<u64> {
        let a = (event.debug_annotations.iter()).find(|a| self.annotation_name(a) == Some(name))?;
        if let Some(v) = a.uint_value.or(a.pointer_value) {
            return Some(v);
        }
        if let Some(v) = a.int_value {
            return Some(v as u64);
        }
        if let Some(v) = a.bool_value {
            return Some(u64::from(v));
        }
        if let Some(s) = &a.string_value {
            return Some(key_of(s));
        }
        if let Some(s) = a
            .string_value_iid
            .and_then(|iid| self.annotation_strings.get(&iid))
        {
            return Some(key_of(s));
        }
        let v = a.double_value?;
        Some(if v.fract() == 0.0 && v.abs() < 9.0e18 {
            v as i64 as u64
        } else {
            key_of(&v.to_string())
        })
    }
}

/// A slice's name: known, never given, or an interned id its sequence never defined.
enum EventName {
    Known(Rc<str>),
    Undefined,
}

struct OpenSlice {
    name: EventName,
    start_ns: i64,
    frame: Option<u64>,
    at: u64,
}

/// A record waiting for its track's descriptor (descriptors may come after events).
enum Pending {
    Span {
        track: TrackRef,
        name: Rc<str>,
        frame: Option<u64>,
        start_ns: i64,
        dur_ns: i64,
        at: u64,
    },
    Event {
        track: TrackRef,
        name: Rc<str>,
        key: u64,
        t_ns: i64,
        at: u64,
    },
    Sample {
        track: TrackRef,
        t_ns: i64,
        value: i64,
    },
}

/// Things counted for one note each.
#[derive(Default)]
struct Counts {
    packets: u64,
    other_packets: u64,
    unmatched_ends: u64,
    negative: u64,
    undefined_names: u64,
    unsupported_types: u64,
    missing_frame_arg: u64,
    other_process: u64,
    rounded_counters: u64,
    unrepresentable_counters: u64,
    unknown_tracks: u64,
    zstd: u64,
    unresolved_clock: u64,
    bad_ids: u64,
}

struct Importer<'b> {
    b: &'b mut TraceBuilder,
    tracks: FastMap<u64, TrackInfo>,
    sequences: FastMap<u32, Sequence>,
    stacks: FastMap<TrackRef, Vec<OpenSlice>>,
    threads: FastMap<(u32, u32), u32>,
    thread_names: FastMap<(u32, u32), String>,
    process_names: FastMap<u32, String>,
    series: FastMap<TrackRef, u32>,
    counter_totals: FastMap<TrackRef, i64>,
    pending: Vec<Pending>,
    /// Tracks with pending samples: their later samples wait too, to stay in order.
    pending_counter_tracks: HashSet<TrackRef>,
    /// The trace is a framelab export: `frame`/`key` annotations and series descriptions.
    framelab: bool,
    /// The debug annotations holding frame ids and event keys (see `set_args`).
    frame_arg: Option<Rc<str>>,
    key_arg: Option<Rc<str>>,
    /// `owner` of tracks met so far; cleared when a descriptor comes.
    owners: FastMap<TrackRef, Owner>,
    stage_ids: FastMap<Rc<str>, u16>,
    /// The packet being read, reused (a `TracePacket` is large to move around).
    scratch: Option<Box<TracePacket>>,
    first_clock: Option<u32>,
    other_clocks: HashSet<u32>,
    counts: Counts,
}

impl<'b> Importer<'b> {
    fn new(b: &'b mut TraceBuilder) -> Importer<'b> {
        let mut importer = Importer {
            b,
            tracks: FastMap::default(),
            sequences: FastMap::default(),
            stacks: FastMap::default(),
            threads: FastMap::default(),
            thread_names: FastMap::default(),
            process_names: FastMap::default(),
            series: FastMap::default(),
            counter_totals: FastMap::default(),
            pending: Vec::new(),
            pending_counter_tracks: HashSet::new(),
            framelab: false,
            frame_arg: None,
            key_arg: None,
            owners: FastMap::default(),
            stage_ids: FastMap::default(),
            scratch: Some(Box::default()),
            first_clock: None,
            other_clocks: HashSet::new(),
            counts: Counts::default(),
        };
        importer.set_args();
        importer
    }

    /// The annotation holding frame ids: `--frame-arg`, else (unless `--frame-regex`
    /// was given) a framelab export's `frame`; event keys: `--key`, else its `key`.
    fn set_args(&mut self) {
        let opts = &self.b.opts;
        self.frame_arg = match &opts.frame_arg {
            Some(arg) => Some(Rc::from(arg.as_str())),
            None if self.framelab && opts.frame_regex.is_none() => Some(Rc::from(FRAME_ANNOTATION)),
            None => None,
        };
        self.key_arg = match &opts.key {
            Some(key) => Some(Rc::from(key.as_str())),
            None if self.framelab => Some(Rc::from(KEY_ANNOTATION)),
            None => None,
        };
    }

    /// The file's packets in order. A packet that does not decode is a bad record; a
    /// broken length framing ends the file (an error, or with `--skip-bad` a note).
    fn read_top_level(&mut self, input: &[u8]) -> Result<(), ImportError> {
        let mut pos = 0;
        while pos < input.len() {
            let at = pos as u64;
            match next_record(input, &mut pos) {
                Ok(Record::Packet(packet)) => self.packet_at(packet, at, true)?,
                Ok(Record::Other) => {}
                Ok(Record::Bad(why)) => self.b.bad(Location::Byte(at), why)?,
                Err(why) => {
                    let kept = self.counts.packets;
                    self.b.bad(
                        Location::Byte(at),
                        format!(
                            "{why}: the trace is damaged or cut short here; --skip-bad keeps \
                             the {kept} packets before it"
                        ),
                    )?;
                    self.b.note(format!(
                        "the trace's framing broke at byte {at}: its last {} bytes were not read",
                        input.len() as u64 - at
                    ));
                    break;
                }
            }
        }
        if self.counts.packets == 0 {
            return Err(self.b.error(
                Location::Whole,
                "no trace packets (field 1 of a Perfetto Trace) in the file: is it a Perfetto \
                 protobuf trace? Pass --format to read it as another format",
            ));
        }
        Ok(())
    }

    /// Packets inside a `compressed_packets` field; errors point at the outer packet.
    fn read_compressed(&mut self, deflated: &[u8], at: u64) -> Result<(), ImportError> {
        let mut inflated = Vec::new();
        let read = flate2::read::ZlibDecoder::new(deflated)
            .take(MAX_INFLATED + 1)
            .read_to_end(&mut inflated);
        if let Err(e) = read {
            return self.b.bad(
                Location::Byte(at),
                format!("its compressed packets do not inflate ({e}); --skip-bad skips them"),
            );
        }
        if inflated.len() as u64 > MAX_INFLATED {
            return self.b.bad(
                Location::Byte(at),
                format!(
                    "its compressed packets inflate past {} MiB, more than Perfetto writes in \
                     one; --skip-bad skips them",
                    MAX_INFLATED >> 20
                ),
            );
        }
        let mut pos = 0;
        while pos < inflated.len() {
            match next_record(&inflated, &mut pos) {
                Ok(Record::Packet(packet)) => self.packet_at(packet, at, false)?,
                Ok(Record::Other) => {}
                Ok(Record::Bad(why)) | Err(why) => {
                    let message = format!("in its compressed packets: {why}");
                    return self.b.bad(Location::Byte(at), message);
                }
            }
        }
        Ok(())
    }

    /// One packet's bytes (`at`: where it starts, or its bundle; `top`: not inside a
    /// compressed bundle, which may not nest another).
    fn packet_at(&mut self, bytes: &[u8], at: u64, top: bool) -> Result<(), ImportError> {
        self.counts.packets += 1;
        let mut packet = self.scratch.take().unwrap_or_default();
        packet.clear();
        let read = match packet.merge(bytes) {
            Ok(()) => self.read_packet(&packet, at, top),
            Err(e) => self.b.bad(
                Location::Byte(at),
                format!("not a valid Perfetto TracePacket ({e}); --skip-bad skips such packets"),
            ),
        };
        self.scratch = Some(packet);
        read
    }

    fn read_packet(&mut self, packet: &TracePacket, at: u64, top: bool) -> Result<(), ImportError> {
        let seq_id = packet.trusted_packet_sequence_id.unwrap_or(0);
        let mut used = packet.interned_data.is_some()
            || packet.trace_packet_defaults.is_some()
            || packet.clock_snapshot.is_some()
            || packet.thread_descriptor.is_some()
            || packet.sequence_flags.is_some()
            || packet.incremental_state_cleared.is_some();
        self.sequence_state(seq_id, packet);
        if let Some(descriptor) = &packet.track_descriptor {
            used = true;
            self.describe(descriptor);
        }
        // Every timestamp moves its sequence's incremental clock, used or not.
        let time = self.packet_time(seq_id, packet);
        if let Some(event) = &packet.track_event {
            used = true;
            let t_ns = match time.and_then(|time| self.event_time(time)) {
                Ok(t_ns) => t_ns,
                Err(why) => return self.b.bad(Location::Byte(at), why),
            };
            self.track_event(seq_id, event, t_ns, at)?;
        }
        if let Some(deflated) = &packet.compressed_packets {
            used = true;
            if top {
                self.read_compressed(deflated, at)?;
            }
        }
        if packet.zstd_compressed_packets.is_some() {
            used = true;
            self.counts.zstd += 1;
        }
        if !used {
            self.counts.other_packets += 1;
        }
        Ok(())
    }

    /// Interned names, defaults, clocks and the legacy thread a packet gives its sequence.
    fn sequence_state(&mut self, seq_id: u32, packet: &TracePacket) {
        let seq = self.sequences.entry(seq_id).or_default();
        let flags = packet.sequence_flags.unwrap_or(0);
        if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0
            || packet.incremental_state_cleared == Some(true)
        {
            seq.clear_incremental_state();
        }
        if let Some(defaults) = &packet.trace_packet_defaults {
            seq.apply_defaults(defaults);
        }
        if let Some(data) = &packet.interned_data {
            seq.intern(data);
        }
        if let Some(snapshot) = &packet.clock_snapshot {
            seq.define_clocks(snapshot);
        }
        if let Some(thread) = &packet.thread_descriptor {
            match thread_ids(thread) {
                Some(ids) => seq.thread = Some(ids),
                None => self.counts.bad_ids += 1,
            }
        }
    }

    /// The packet's time in ns and the clock it is in: its own clock (or its sequence's
    /// default), sequence clocks resolved through their snapshot.
    fn packet_time(
        &mut self,
        seq_id: u32,
        packet: &TracePacket,
    ) -> Result<Option<(i128, u32)>, String> {
        let Some(raw) = packet.timestamp else {
            return Ok(None);
        };
        let seq = self.sequences.entry(seq_id).or_default();
        let clock_id = packet.timestamp_clock_id.or(seq.default_clock).unwrap_or(0);
        let Some(clock) = seq.clocks.get_mut(&clock_id) else {
            if SEQUENCE_CLOCKS.contains(&clock_id) {
                self.counts.unresolved_clock += 1;
            }
            return Ok(Some((i128::from(raw), clock_id)));
        };
        clock.value = match clock.incremental {
            true => clock.value.checked_add(raw).ok_or_else(|| {
                format!("incremental clock {clock_id} overflows; the trace is damaged")
            })?,
            false => raw,
        };
        let units = i128::from(clock.value) - i128::from(clock.snapshot_value);
        let ns = (units.checked_mul(i128::from(clock.multiplier)))
            .and_then(|offset| clock.reference_ns.checked_add(offset))
            .ok_or_else(|| format!("clock {clock_id} runs past 2^127 ns; the trace is damaged"))?;
        Ok(Some((ns, clock.reference_clock)))
    }

    /// A track event's time: its packet must have one, within what a run holds. Notes
    /// the clocks events are in (they are not converted into each other).
    fn event_time(&mut self, time: Option<(i128, u32)>) -> Result<i64, String> {
        let (ns, clock) = time.ok_or_else(|| {
            "a track event without a timestamp; --skip-bad skips such packets".to_owned()
        })?;
        match self.first_clock {
            None => self.first_clock = Some(clock),
            Some(first) if first != clock => {
                self.other_clocks.insert(clock);
            }
            Some(_) => {}
        }
        i64::try_from(ns).map_err(|_| {
            format!(
                "timestamp {ns} ns is past what a run holds (2^63 ns); the trace is damaged; \
                 --skip-bad skips such packets"
            )
        })
    }

    fn describe(&mut self, d: &TrackDescriptor) {
        let Some(uuid) = d.uuid else {
            return;
        };
        self.owners.clear();
        let mut info = TrackInfo {
            parent: d.parent_uuid,
            name: (d.name.clone())
                .or_else(|| d.static_name.clone())
                .unwrap_or_default(),
            description: d.description.clone(),
            ..TrackInfo::default()
        };
        if d.counter.is_none() {
            if let Some(description) = &d.description {
                self.b.describe_run(description);
            }
        }
        if let Some(process) = &d.process {
            let Some(pid) = process.pid else {
                self.counts.bad_ids += 1;
                return;
            };
            let pid = read_pid(pid);
            info.process = Some(pid);
            let name = (process.process_name.clone())
                .or_else(|| process.cmdline.first().cloned())
                .filter(|n| !n.is_empty());
            if let Some(name) = name {
                self.b.name_process(pid, &name);
                self.process_names.insert(pid, name);
            }
        }
        if let Some(thread) = &d.thread {
            let Some(ids) = thread_ids(thread) else {
                self.counts.bad_ids += 1;
                return;
            };
            info.thread = Some(ids);
            if let Some(name) = thread.thread_name.as_ref().filter(|n| !n.is_empty()) {
                self.thread_names.insert(ids, name.clone());
            }
        }
        if let Some(counter) = &d.counter {
            info.counter = Some(CounterInfo {
                unit: counter_unit(counter),
                multiplier: counter.unit_multiplier.unwrap_or(1),
                incremental: counter.is_incremental.unwrap_or(false),
            });
        }
        self.tracks.insert(uuid, info);
    }

    fn track_event(
        &mut self,
        seq_id: u32,
        event: &TrackEvent,
        t_ns: i64,
        at: u64,
    ) -> Result<(), ImportError> {
        let frame_arg = self.frame_arg.clone();
        let key_arg = self.key_arg.clone();
        let seq = self.sequences.entry(seq_id).or_default();
        let track = match event.track_uuid.or(seq.default_track) {
            Some(uuid) => TrackRef::Uuid(uuid),
            None => seq
                .thread
                .map_or(TrackRef::Global, |(p, t)| TrackRef::Thread(p, t)),
        };
        let (kind, complete_ns) = match (event.r#type.unwrap_or(0), &event.legacy_event) {
            (0, Some(legacy)) => legacy_kind(legacy),
            (kind, _) => (kind, None),
        };
        let name = match kind {
            TYPE_SLICE_BEGIN | TYPE_INSTANT => Some(event_name(seq, event)),
            _ => None,
        };
        let frame = frame_arg.and_then(|arg| seq.annotation_key(event, &arg));
        let key = key_arg.and_then(|arg| seq.annotation_key(event, &arg));
        let extra = extra_counters(seq, event);
        match (kind, name) {
            (TYPE_SLICE_BEGIN, Some(name)) => {
                let open = OpenSlice {
                    name,
                    start_ns: t_ns,
                    frame,
                    at,
                };
                match complete_ns {
                    // A legacy `X`: begin and end in one event.
                    Some(dur_ns) => {
                        self.close_slice(track, open, t_ns.saturating_add(dur_ns), None)?
                    }
                    None => self.stacks.entry(track).or_default().push(open),
                }
            }
            (TYPE_SLICE_END, _) => {
                match self.stacks.get_mut(&track).and_then(Vec::pop) {
                    Some(open) => self.close_slice(track, open, t_ns, frame)?,
                    None => self.counts.unmatched_ends += 1,
                };
            }
            (TYPE_INSTANT, Some(name)) => self.instant(track, name, key, t_ns, at)?,
            (TYPE_COUNTER, _) => {
                if let Some(value) =
                    self.counter_value(event.counter_value, event.double_counter_value)
                {
                    self.sample(track, t_ns, value);
                }
            }
            _ => self.counts.unsupported_types += 1,
        }
        for (uuid, value) in extra {
            if let Some(value) = self.counter_value(value.0, value.1) {
                self.sample(TrackRef::Uuid(uuid), t_ns, value);
            }
        }
        Ok(())
    }

    fn close_slice(
        &mut self,
        track: TrackRef,
        open: OpenSlice,
        end_ns: i64,
        end_frame: Option<u64>,
    ) -> Result<(), ImportError> {
        let dur_ns = match end_ns.checked_sub(open.start_ns) {
            Some(d) if d >= 0 => d,
            _ => {
                self.counts.negative += 1;
                return Ok(());
            }
        };
        let name = match open.name {
            EventName::Known(name) => name,
            EventName::Undefined => {
                self.counts.undefined_names += 1;
                return Ok(());
            }
        };
        let span = Pending::Span {
            track,
            name,
            frame: open.frame.or(end_frame),
            start_ns: open.start_ns,
            dur_ns,
            at: open.at,
        };
        match self.owner(track) {
            Some(owner) => self.emit(owner, span),
            None => {
                self.pending.push(span);
                Ok(())
            }
        }
    }

    fn instant(
        &mut self,
        track: TrackRef,
        name: EventName,
        key: Option<u64>,
        t_ns: i64,
        at: u64,
    ) -> Result<(), ImportError> {
        let name = match name {
            EventName::Known(name) => name,
            EventName::Undefined => {
                self.counts.undefined_names += 1;
                return Ok(());
            }
        };
        if &*name == LAUNCH_MARKER {
            self.b.set_origin(t_ns);
            self.b.mark_framelab_export();
            if !self.framelab {
                self.framelab = true;
                self.set_args();
            }
            return Ok(());
        }
        let event = Pending::Event {
            track,
            name,
            key: key.unwrap_or(0),
            t_ns,
            at,
        };
        match self.owner(track) {
            Some(owner) => self.emit(owner, event),
            None => {
                self.pending.push(event);
                Ok(())
            }
        }
    }

    /// An integer counter value; doubles are rounded (counted) since samples are integers.
    fn counter_value(&mut self, int: Option<i64>, double: Option<f64>) -> Option<i64> {
        if let Some(v) = int {
            return Some(v);
        }
        let v = double?;
        if !v.is_finite() || v.abs() >= 9.2e18 {
            self.counts.unrepresentable_counters += 1;
            return None;
        }
        if v.fract() != 0.0 {
            self.counts.rounded_counters += 1;
        }
        Some(v.round() as i64)
    }

    fn sample(&mut self, track: TrackRef, t_ns: i64, value: i64) {
        let sample = Pending::Sample { track, t_ns, value };
        let owner = match self.pending_counter_tracks.contains(&track) {
            true => None,
            false => self.owner(track),
        };
        match owner {
            Some(owner) => {
                // Samples never fail: names are only interned for spans and events.
                let _ = self.emit(owner, sample);
            }
            None => {
                self.pending_counter_tracks.insert(track);
                self.pending.push(sample);
            }
        }
    }

    /// Who a track belongs to, or `None` while a track up its chain is undescribed.
    fn owner(&mut self, track: TrackRef) -> Option<Owner> {
        if let Some(&owner) = self.owners.get(&track) {
            return Some(owner);
        }
        let owner = self.find_owner(track)?;
        self.owners.insert(track, owner);
        Some(owner)
    }

    fn find_owner(&self, track: TrackRef) -> Option<Owner> {
        let mut uuid = match track {
            TrackRef::Uuid(uuid) => uuid,
            TrackRef::Thread(pid, tid) => return Some(Owner::Thread(pid, tid)),
            TrackRef::Global => return Some(Owner::Global),
        };
        for _ in 0..MAX_TRACK_DEPTH {
            let info = self.tracks.get(&uuid)?;
            if let Some((pid, tid)) = info.thread {
                return Some(Owner::Thread(pid, tid));
            }
            if let Some(pid) = info.process {
                return Some(Owner::Process(pid));
            }
            match info.parent {
                Some(parent) => uuid = parent,
                None => return Some(Owner::Global),
            }
        }
        Some(Owner::Global)
    }

    /// `--process`: records of other processes are left out (global tracks stay).
    fn wanted(&mut self, owner: Owner) -> bool {
        let (Some(want), Some(pid)) = (&self.b.opts.process, owner.pid()) else {
            return true;
        };
        let keep = self.process_names.get(&pid) == Some(want);
        if !keep {
            self.counts.other_process += 1;
        }
        keep
    }

    fn thread_id(&mut self, owner: Owner) -> u32 {
        let (pid, tid) = owner.thread();
        let b = &mut *self.b;
        *self
            .threads
            .entry((pid, tid))
            .or_insert_with(|| b.thread(pid, tid))
    }

    fn emit(&mut self, owner: Owner, record: Pending) -> Result<(), ImportError> {
        if !self.wanted(owner) {
            return Ok(());
        }
        match record {
            Pending::Span {
                name,
                frame,
                start_ns,
                dur_ns,
                at,
                ..
            } => {
                let (frame, stage) = self.frame_and_stage(&name, frame);
                let stage = self.stage_id(&stage, at)?;
                let frame = frame.unwrap_or_else(|| self.b.next_frame());
                let thread = self.thread_id(owner);
                self.b.span(frame, stage, thread, start_ns, dur_ns);
            }
            Pending::Event {
                name,
                key,
                t_ns,
                at,
                ..
            } => {
                let thread = self.thread_id(owner);
                self.b.event(&name, key, thread, t_ns, Location::Byte(at))?;
            }
            Pending::Sample { track, t_ns, value } => self.emit_sample(owner, track, t_ns, value),
        }
        Ok(())
    }

    fn stage_id(&mut self, stage: &str, at: u64) -> Result<u16, ImportError> {
        if let Some(&id) = self.stage_ids.get(stage) {
            return Ok(id);
        }
        let id = self.b.stage(stage, Location::Byte(at))?;
        self.stage_ids.insert(Rc::from(stage), id);
        Ok(id)
    }

    /// The frame (if the slice names one) and the stage, per the frame options.
    fn frame_and_stage<'n>(
        &mut self,
        name: &'n str,
        annotated: Option<u64>,
    ) -> (Option<u64>, std::borrow::Cow<'n, str>) {
        if let Some(frame) = annotated {
            return (Some(frame), name.into());
        }
        let asked_for_arg = self.b.opts.frame_arg.is_some();
        if let Some((frame, stage)) = self.b.opts.frame_in_name(name) {
            return (Some(frame), stage.into());
        }
        if asked_for_arg || self.framelab {
            self.counts.missing_frame_arg += 1;
        }
        (None, name.into())
    }

    fn emit_sample(&mut self, owner: Owner, track: TrackRef, t_ns: i64, value: i64) {
        let info = match track {
            TrackRef::Uuid(uuid) => self.tracks.get(&uuid),
            _ => None,
        };
        let counter = info.and_then(|i| i.counter.as_ref());
        let (multiplier, incremental) =
            counter.map_or((1, false), |c| (c.multiplier, c.incremental));
        let Some(mut value) = value.checked_mul(multiplier) else {
            self.counts.unrepresentable_counters += 1;
            return;
        };
        if incremental {
            let total = self.counter_totals.entry(track).or_insert(0);
            *total = total.saturating_add(value);
            value = *total;
        }
        let series = match self.series.get(&track) {
            Some(&series) => series,
            None => {
                let described = self.describe_series(owner, track);
                let series = self.b.series(described);
                self.series.insert(track, series);
                series
            }
        };
        self.b.sample(series, t_ns, value);
    }

    /// A counter track as a series: a framelab export's own description, else source
    /// `perfetto`, metric the track's name, entity its thread (`PID/TID`) or process.
    fn describe_series(&self, owner: Owner, track: TrackRef) -> SampleSeries {
        let info = match track {
            TrackRef::Uuid(uuid) => self.tracks.get(&uuid),
            _ => None,
        };
        if self.framelab {
            let exported = (info.and_then(|i| i.description.as_deref()))
                .and_then(|d| serde_json::from_str::<SampleSeries>(d).ok());
            if let Some(series) = exported {
                return series;
            }
        }
        let metric = match (info.map(|i| i.name.as_str()), track) {
            (Some(name), _) if !name.is_empty() => name.to_owned(),
            (_, TrackRef::Uuid(uuid)) => format!("track {uuid}"),
            _ => "counter".to_owned(),
        };
        let counter = info.and_then(|i| i.counter.as_ref());
        let (entity, label) = match owner {
            Owner::Thread(pid, tid) => (
                format!("{pid}/{tid}"),
                self.thread_names.get(&(pid, tid)).cloned(),
            ),
            Owner::Process(pid) => (pid.to_string(), self.process_names.get(&pid).cloned()),
            Owner::Global => (String::new(), None),
        };
        SampleSeries {
            source: "perfetto".into(),
            metric,
            entity,
            label: label.unwrap_or_default(),
            unit: counter.map(|c| c.unit.clone()).unwrap_or_default(),
            kind: match counter.is_some_and(|c| c.incremental) {
                true => SeriesKind::Counter,
                false => SeriesKind::Gauge,
            },
        }
    }

    /// Records that waited for descriptors, thread names, and one note per count.
    fn finish(mut self) -> Result<(), ImportError> {
        for record in std::mem::take(&mut self.pending) {
            let track = match &record {
                Pending::Span { track, .. }
                | Pending::Event { track, .. }
                | Pending::Sample { track, .. } => *track,
            };
            let owner = self.owner(track).unwrap_or_else(|| {
                self.counts.unknown_tracks += 1;
                Owner::Global
            });
            self.emit(owner, record)?;
        }
        for &(pid, tid) in self.threads.keys() {
            if let Some(name) = self.thread_names.get(&(pid, tid)) {
                self.b.name_thread(pid, tid, name);
            }
        }
        if let Some(want) = &self.b.opts.process {
            if !self.process_names.values().any(|n| n == want) {
                let mut names: Vec<&str> = self.process_names.values().map(|n| &**n).collect();
                names.sort_unstable();
                names.dedup();
                return Err(self.b.error(
                    Location::Whole,
                    format!(
                        "no process named {want:?} in the trace (its processes: {}); check \
                         --process",
                        if names.is_empty() {
                            "none named".to_owned()
                        } else {
                            names.join(", ")
                        }
                    ),
                ));
            }
        }
        let unclosed: usize = self.stacks.values().map(Vec::len).sum();
        self.notes(unclosed as u64);
        Ok(())
    }

    fn notes(&mut self, unclosed: u64) {
        let c = &self.counts;
        let process = self.b.opts.process.clone().unwrap_or_default();
        let clocks = {
            let mut other: Vec<u32> = self.other_clocks.iter().copied().collect();
            other.sort_unstable();
            other
        };
        let frame_arg = self.frame_arg.clone().unwrap_or_else(|| Rc::from(""));
        let notes = [
            (
                unclosed,
                format!("{unclosed} slices were never closed (a BEGIN with no END)"),
            ),
            (
                c.unmatched_ends,
                format!(
                    "{} slice ENDs had no open BEGIN on their track",
                    c.unmatched_ends
                ),
            ),
            (
                c.negative,
                format!("{} slices ended before they began", c.negative),
            ),
            (
                c.undefined_names,
                format!(
                    "{} slices and instants were named by an interned id their sequence never \
                     defined (data lost before them?) and were left out",
                    c.undefined_names
                ),
            ),
            (
                c.unsupported_types,
                format!(
                    "{} track events of other types (legacy counters and flows, or unspecified) were not read",
                    c.unsupported_types
                ),
            ),
            (
                c.missing_frame_arg,
                format!(
                    "{} slices had no {frame_arg:?} debug annotation: each became its own frame",
                    c.missing_frame_arg
                ),
            ),
            (
                c.other_process,
                format!(
                    "{} records of processes other than {process:?} were left out (--process)",
                    c.other_process
                ),
            ),
            (
                c.rounded_counters,
                format!(
                    "{} counter values had fractions and were rounded to integers",
                    c.rounded_counters
                ),
            ),
            (
                c.unrepresentable_counters,
                format!(
                    "{} counter values were not finite or too large for 64 bits and were left \
                     out",
                    c.unrepresentable_counters
                ),
            ),
            (
                c.unknown_tracks,
                format!(
                    "{} records were on tracks no descriptor described: put on thread 0/0",
                    c.unknown_tracks
                ),
            ),
            (
                c.zstd,
                format!(
                    "{} zstd-compressed packet bundles were not read: re-record with deflate \
                     or no compression",
                    c.zstd
                ),
            ),
            (
                c.unresolved_clock,
                format!(
                    "{} packets used a sequence clock with no clock snapshot on their \
                     sequence: their timestamps were taken as they are",
                    c.unresolved_clock
                ),
            ),
            (
                c.bad_ids,
                format!(
                    "{} process or thread descriptors had no pid or a tid past 32 bits and were \
                     not used",
                    c.bad_ids
                ),
            ),
            (
                clocks.len() as u64,
                format!(
                    "timestamps are in more than one clock (ids {:?} and {clocks:?}): taken as \
                     they are, without conversion between clocks",
                    self.first_clock.unwrap_or(0)
                ),
            ),
            (
                c.other_packets,
                format!(
                    "{} packets of other kinds (ftrace, process stats, ...) were not read: \
                     framelab reads track events",
                    c.other_packets
                ),
            ),
        ];
        for (count, note) in notes {
            if count > 0 {
                self.b.note(note);
            }
        }
        let frames_defined =
            self.framelab || self.b.opts.frame_arg.is_some() || self.b.opts.frame_regex.is_some();
        if !frames_defined {
            self.b.note(crate::model::ImportInfo::NO_FRAMES);
        }
    }
}

/// The name of a BEGIN or INSTANT: inline, or interned on its sequence.
/// The track-event type a legacy event's phase stands for, and for `X` its duration.
/// Phases that are neither slices nor instants (flows, async, metadata) stay unsupported.
fn legacy_kind(legacy: &proto::LegacyEvent) -> (i32, Option<i64>) {
    let phase = legacy.phase.and_then(|p| u8::try_from(p).ok()).unwrap_or(0);
    match phase {
        b'B' => (TYPE_SLICE_BEGIN, None),
        b'E' => (TYPE_SLICE_END, None),
        b'X' => match legacy.duration_us.and_then(|us| us.checked_mul(1000)) {
            Some(dur_ns) if dur_ns >= 0 => (TYPE_SLICE_BEGIN, Some(dur_ns)),
            _ => (0, None),
        },
        b'I' | b'i' | b'n' | b'R' => (TYPE_INSTANT, None),
        _ => (0, None),
    }
}

fn event_name(seq: &Sequence, event: &TrackEvent) -> EventName {
    if let Some(name) = &event.name {
        return EventName::Known(Rc::from(name.as_str()));
    }
    let legacy_iid = event.legacy_event.as_ref().and_then(|l| l.name_iid);
    match event.name_iid.or(legacy_iid) {
        Some(iid) => match seq.event_names.get(&iid) {
            Some(name) => EventName::Known(name.clone()),
            None => EventName::Undefined,
        },
        None => EventName::Known(Rc::from("(unnamed)")),
    }
}

/// A counter value as the event gives it: an integer or a double.
type CounterReading = (Option<i64>, Option<f64>);

/// An event's extra counter values with their tracks (the sequence's defaults when the
/// event names none).
fn extra_counters(seq: &Sequence, event: &TrackEvent) -> Vec<(u64, CounterReading)> {
    if event.extra_counter_values.is_empty() && event.extra_double_counter_values.is_empty() {
        return Vec::new();
    }
    let pick = |own: &Vec<u64>, default: &Vec<u64>| -> Vec<u64> {
        if own.is_empty() {
            default.clone()
        } else {
            own.clone()
        }
    };
    let ints = pick(
        &event.extra_counter_track_uuids,
        &seq.default_extra_counters,
    );
    let doubles = pick(
        &event.extra_double_counter_track_uuids,
        &seq.default_extra_double_counters,
    );
    let ints = (ints.into_iter()).zip(event.extra_counter_values.iter().map(|&v| (Some(v), None)));
    let doubles = (doubles.into_iter()).zip(
        event
            .extra_double_counter_values
            .iter()
            .map(|&v| (None, Some(v))),
    );
    ints.chain(doubles).collect()
}

/// (pid, tid) of a thread descriptor; pids and tids of 32 bits, signed or not.
fn thread_ids(thread: &proto::ThreadDescriptor) -> Option<(u32, u32)> {
    let pid = read_pid(thread.pid?);
    let tid = thread.tid?;
    let tid = u32::try_from(tid)
        .ok()
        .or_else(|| i32::try_from(tid).ok().map(|t| t as u32))?;
    Some((pid, tid))
}

fn counter_unit(counter: &proto::CounterDescriptor) -> String {
    if let Some(unit) = counter.unit_name.as_ref().filter(|u| !u.is_empty()) {
        return unit.clone();
    }
    match counter.unit {
        Some(UNIT_TIME_NS) => "ns",
        Some(UNIT_COUNT) => "count",
        Some(UNIT_SIZE_BYTES) => "B",
        _ => "",
    }
    .to_owned()
}

/// One field of a `Trace` message.
enum Record<'a> {
    /// Field 1: a `TracePacket`'s bytes.
    Packet(&'a [u8]),
    /// Another well-framed field (none is defined: skipped).
    Other,
    /// Field 1 framed as something else than bytes: skipped with `--skip-bad`.
    Bad(String),
}

/// The field of a `Trace` at `*pos`, advancing `*pos` past it; `Err` when the framing
/// itself is broken (nothing after it can be found).
fn next_record<'a>(input: &'a [u8], pos: &mut usize) -> Result<Record<'a>, String> {
    let rest = input.get(*pos..).unwrap_or_default();
    let mut cursor = rest;
    let key = prost::encoding::decode_varint(&mut cursor)
        .map_err(|_| "a packet header that is not a valid protobuf varint".to_owned())?;
    let (field, wire) = (key >> 3, key & 7);
    if field == 0 || field > u64::from(u32::MAX >> 3) {
        return Err(format!(
            "field number {field}, which no protobuf message has: this is not (any more) a \
             Perfetto trace"
        ));
    }
    let skip = match wire {
        0 => {
            prost::encoding::decode_varint(&mut cursor)
                .map_err(|_| format!("field {field}: a value that is not a valid varint"))?;
            0
        }
        1 => 8,
        5 => 4,
        2 => {
            let len = prost::encoding::decode_varint(&mut cursor)
                .map_err(|_| "a packet length that is not a valid varint".to_owned())?;
            if len > cursor.len() as u64 {
                return Err(format!(
                    "a packet of {len} bytes but only {} bytes are left in the file",
                    cursor.len()
                ));
            }
            len as usize
        }
        _ => {
            return Err(format!(
                "field {field} has wire type {wire}, which a Perfetto trace never holds"
            ))
        }
    };
    let header = rest.len() - cursor.len();
    let body = (cursor.get(..skip))
        .ok_or_else(|| format!("field {field} is cut short by the end of the file"))?;
    *pos = pos.saturating_add(header).saturating_add(skip);
    Ok(match (field, wire) {
        (1, 2) => Record::Packet(body),
        (1, _) => Record::Bad(format!(
            "a packet (field 1) with wire type {wire} instead of 2 (length-delimited); \
             --skip-bad skips such packets"
        )),
        _ => Record::Other,
    })
}

#[cfg(test)]
mod tests;
