//! A run as a Perfetto protobuf trace (opens in the Perfetto UI), written packet by packet.
//!
//! One sequence holds everything: its first packet clears the incremental state and
//! interns every stage and event name. Then a track per process and per thread, the
//! launch marker at the run's zero, each span as a BEGIN/END pair on its thread's track
//! (debug annotation `frame`; the spans of one frame linked by a flow), events as
//! instants (annotation `key`), and each telemetry series as a counter track whose
//! `description` is the series as JSON, so `framelab import` gives the run back. The
//! `framelab` track's `description` carries the rest of the run (name, target, window,
//! processes, counters…: [`super::meta`]).
//!
//! Perfetto needs the slices of a track properly nested; framelab's spans on a thread
//! may overlap without nesting, so a span that does not nest goes on a child track of
//! its thread ("overlap N"), which the importer puts back on the thread.
//!
//! Times are the run's own (ns after launch), shifted up only when some are negative
//! (Perfetto's timestamps are unsigned); the marker sits at that shift.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Write;
use std::sync::mpsc;

use anyhow::{bail, Context};

use super::start_order::{for_each_in_start_order, OrderScan, StartKey};
use crate::fast_map::FastMap;
use crate::formats::perfetto::proto::{
    CounterDescriptor, DebugAnnotation, InternedData, InternedName, ProcessDescriptor,
    ThreadDescriptor, TracePacket, TrackDescriptor, TrackEvent, SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE, TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    UNIT_COUNT, UNIT_SIZE_BYTES, UNIT_TIME_NS,
};
use crate::formats::perfetto::{written_pid, FRAME_ANNOTATION, KEY_ANNOTATION};
use crate::formats::LAUNCH_MARKER;
use crate::model::{Run, SpanSource};
use crate::read_ahead::for_each_read_ahead;

/// The one packet sequence of the trace.
const SEQUENCE: u32 = 1;
/// Interned debug annotation names.
const FRAME_IID: u64 = 1;
const KEY_IID: u64 = 2;
/// Output is handed to the writer in chunks of about this size: as large as the
/// `BufWriter` of `export_to_path`, which then passes them on without copying.
const CHUNK: usize = 1 << 20;
/// Chunks encoded ahead of the one being written.
const CHUNKS_AHEAD: usize = 2;

/// `run` as a trace, encoded and written on this thread.
pub fn write(run: &Run, out: &mut dyn Write) -> anyhow::Result<()> {
    encode(run, run, PacketWriter::new(Out::Write(out), 0)).map(drop)
}

/// [`write`] of `head` (a run with its events, counter values and telemetry; its spans
/// are not read) with its spans from `source` (issue 29: a whole run in memory took ~40
/// bytes a span): read once for the earliest time, each frame's span count and the order
/// the spans come in, then again in start order as [`super::start_order`] hands them on,
/// whatever order they come in, without holding them. Returns the spans written.
pub fn write_from(
    head: &Run,
    source: &(dyn SpanSource + Sync),
    out: &mut dyn Write,
) -> anyhow::Result<u64> {
    // The trace is encoded on a thread of its own and written here, a few chunks behind:
    // writing a 10M-span trace (about 470 MB) took a third of the export's time.
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_AHEAD);
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
        let encoder = std::thread::Builder::new().spawn_scoped(scope, move || {
            let handoff = Out::Handoff {
                full: full_tx,
                empty: empty_rx,
            };
            encode(head, source, PacketWriter::new(handoff, 0))
        });
        // No thread to be had: encoded and written here.
        let Ok(encoder) = encoder else {
            return encode(head, source, PacketWriter::new(Out::Write(out), 0));
        };
        let mut written = Ok(());
        for chunk in &full_rx {
            if let Err(e) = out.write_all(&chunk) {
                written = Err(e);
                break;
            }
            let _ = empty_tx.send(chunk);
        }
        // The encoder stops at its next chunk when writing failed.
        drop(full_rx);
        let encoded = match encoder.join() {
            Ok(encoded) => encoded,
            Err(_) => anyhow::bail!("encoding the trace failed in a worker thread"),
        };
        written?;
        let spans = encoded?;
        out.flush()?;
        Ok(spans)
    })
}

/// The trace of `head` with the spans of `source`, through `w`.
fn encode(
    head: &Run,
    source: &(dyn SpanSource + Sync),
    mut w: PacketWriter,
) -> anyhow::Result<u64> {
    let scan = SpanScan::of(source)?;
    w.shift = time_shift(head, scan.order.earliest)?;
    let iids = NameIids::new(head);
    w.packet(&iids.first_packet(head))?;
    let tracks = Tracks::describe(head, &mut w)?;
    w.instant(tracks.framelab, iids.marker, None, 0)?;
    let spans = write_spans(source, scan, &tracks, &iids, &mut w)?;
    for e in &head.events {
        let track = *(tracks.threads.get(e.thread as usize))
            .with_context(|| format!("an event names thread {}, which the run lacks", e.thread))?;
        let key = (e.key != 0).then_some(e.key);
        w.instant(track, iids.event(e.event), key, e.t_ns)?;
    }
    write_counters(head, &mut w)?;
    w.finish()?;
    Ok(spans)
}

/// What the first read of the spans tells the second.
struct SpanScan {
    order: OrderScan,
    flows: FrameFlows,
}

impl SpanScan {
    fn of(source: &(dyn SpanSource + Sync)) -> anyhow::Result<SpanScan> {
        let mut scan = SpanScan {
            order: OrderScan::default(),
            flows: FrameFlows::expecting(source.span_count_hint()),
        };
        for_each_read_ahead(source, &mut |chunk| {
            for s in chunk {
                scan.order.see(s);
                scan.flows.count(s.frame);
            }
            Ok(())
        })?;
        Ok(scan)
    }
}

/// How far times are moved up so that none is negative.
fn time_shift(run: &Run, earliest_span: Option<i64>) -> anyhow::Result<i64> {
    let earliest = (earliest_span.into_iter())
        .chain(run.events.iter().map(|e| e.t_ns))
        .chain(run.telemetry.samples.iter().map(|s| s.t_ns))
        .min()
        .unwrap_or(0);
    earliest
        .min(0)
        .checked_neg()
        .context("a time in the run is out of range")
}

/// Iids of the interned event names: stages first, then event names, then the marker.
struct NameIids {
    stages: u64,
    events: u64,
    marker: u64,
}

impl NameIids {
    fn new(run: &Run) -> NameIids {
        let stages = 1;
        let events = stages + run.stages.len() as u64;
        NameIids {
            stages,
            events,
            marker: events + run.event_names.len() as u64,
        }
    }

    fn stage(&self, stage: u16) -> u64 {
        self.stages + u64::from(stage)
    }

    fn event(&self, event: u16) -> u64 {
        self.events + u64::from(event)
    }

    /// Starts the sequence: state cleared, every name interned.
    fn first_packet(&self, run: &Run) -> TracePacket {
        let name = |iid: u64, name: &str| InternedName {
            iid: Some(iid),
            name: Some(name.to_owned()),
        };
        let event_names = (run.stages.iter().enumerate())
            .map(|(i, s)| name(self.stages + i as u64, s))
            .chain(
                (run.event_names.iter().enumerate()).map(|(i, e)| name(self.events + i as u64, e)),
            )
            .chain([name(self.marker, LAUNCH_MARKER)])
            .collect();
        TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            first_packet_on_sequence: Some(true),
            interned_data: Some(InternedData {
                event_names,
                debug_annotation_names: vec![
                    name(FRAME_IID, FRAME_ANNOTATION),
                    name(KEY_IID, KEY_ANNOTATION),
                ],
                ..InternedData::default()
            }),
            ..TracePacket::default()
        }
    }
}

/// Track uuids: the marker's track, one per thread (`run.threads` order), and the
/// overlap tracks made as needed.
struct Tracks {
    framelab: u64,
    threads: Vec<u64>,
    next_uuid: u64,
}

impl Tracks {
    /// Writes the descriptors of the marker's track, the processes and the threads.
    fn describe(run: &Run, w: &mut PacketWriter) -> anyhow::Result<Tracks> {
        let mut tracks = Tracks {
            framelab: 1,
            threads: Vec::with_capacity(run.threads.len()),
            next_uuid: 2,
        };
        w.descriptor(TrackDescriptor {
            uuid: Some(tracks.framelab),
            name: Some("framelab".into()),
            description: Some(serde_json::to_string(
                &crate::formats::carried::Carried::of(run)?,
            )?),
            ..TrackDescriptor::default()
        })?;
        let mut processes = BTreeMap::new();
        for thread in &run.threads {
            processes.entry(thread.pid).or_insert(0);
        }
        for (&pid, uuid) in processes.iter_mut() {
            *uuid = tracks.new_uuid();
            w.descriptor(TrackDescriptor {
                uuid: Some(*uuid),
                process: Some(ProcessDescriptor {
                    pid: Some(written_pid(pid)),
                    process_name: process_name(run, pid),
                    ..ProcessDescriptor::default()
                }),
                ..TrackDescriptor::default()
            })?;
        }
        for thread in &run.threads {
            let uuid = tracks.new_uuid();
            tracks.threads.push(uuid);
            w.descriptor(TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: processes.get(&thread.pid).copied(),
                thread: Some(ThreadDescriptor {
                    pid: Some(written_pid(thread.pid)),
                    tid: Some(i64::from(thread.tid)),
                    thread_name: Some(thread.name.clone()).filter(|n| !n.is_empty()),
                }),
                ..TrackDescriptor::default()
            })?;
        }
        Ok(tracks)
    }

    fn new_uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid - 1
    }
}

/// The process's name as the run knows it, else its main thread's, else any thread's.
fn process_name(run: &Run, pid: u32) -> Option<String> {
    let named = |name: &String| !name.is_empty();
    let stats = run
        .processes
        .iter()
        .find(|p| p.pid == pid && named(&p.name));
    let threads = || {
        run.threads
            .iter()
            .filter(|t| t.pid == pid && named(&t.name))
    };
    stats
        .map(|p| p.name.clone())
        .or_else(|| threads().find(|t| t.tid == pid).map(|t| t.name.clone()))
        .or_else(|| threads().next().map(|t| t.name.clone()))
}

/// One track of a thread: lane 0 is the thread's own, others are overlap tracks.
struct Lane {
    uuid: u64,
    /// End times of the open slices, outermost first.
    open: Vec<i64>,
}

/// An open slice waiting for its END, ordered so that the heap pops the earliest end
/// and, of equal ends, the innermost (deepest) slice first.
type PendingEnd = Reverse<(i64, Reverse<usize>, u32, u32)>;

/// Spans in start order, longest first at equal starts (so parents open first), each
/// on the first track of its thread where it nests. ENDs come out in time order.
fn write_spans(
    source: &(dyn SpanSource + Sync),
    scan: SpanScan,
    tracks: &Tracks,
    iids: &NameIids,
    w: &mut PacketWriter,
) -> anyhow::Result<u64> {
    let mut slices = Slices {
        lanes: (tracks.threads.iter())
            .map(|&uuid| {
                vec![Lane {
                    uuid,
                    open: Vec::new(),
                }]
            })
            .collect(),
        next_uuid: tracks.next_uuid,
        ends: BinaryHeap::new(),
        flows: scan.flows,
    };
    let written =
        for_each_in_start_order(source, &scan.order, &mut |span| slices.open(span, iids, w))?;
    slices.close_all(w)?;
    Ok(written)
}

/// The threads' lanes, the slices open on them, and the frames' flows.
struct Slices {
    lanes: Vec<Vec<Lane>>,
    next_uuid: u64,
    ends: BinaryHeap<PendingEnd>,
    flows: FrameFlows,
}

impl Slices {
    /// Writes the span's BEGIN, after the ENDs of the slices that end by its start.
    fn open(
        &mut self,
        (start_ns, Reverse(dur_ns), thread, i, frame, stage): StartKey,
        iids: &NameIids,
        w: &mut PacketWriter,
    ) -> anyhow::Result<()> {
        if dur_ns < 0 {
            bail!("span {i} has a negative duration ({dur_ns} ns)");
        }
        let end = start_ns
            .checked_add(dur_ns)
            .context("a span ends past 2^63 ns")?;
        while let Some(&Reverse((t, _, thread, lane))) = self.ends.peek() {
            if t > start_ns {
                break;
            }
            self.ends.pop();
            close(&mut self.lanes, thread, lane, t, w)?;
        }
        let thread_lanes = (self.lanes.get_mut(thread as usize))
            .with_context(|| format!("span {i} names thread {thread}, which the run lacks"))?;
        let fits = |lane: &Lane| lane.open.last().is_none_or(|&top| top >= end);
        let lane = match thread_lanes.iter().position(fits) {
            Some(lane) => lane,
            None => {
                let parent = thread_lanes[0].uuid;
                let uuid = self.next_uuid;
                self.next_uuid += 1;
                w.descriptor(TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(parent),
                    name: Some(format!("overlap {}", thread_lanes.len())),
                    ..TrackDescriptor::default()
                })?;
                thread_lanes.push(Lane {
                    uuid,
                    open: Vec::new(),
                });
                thread_lanes.len() - 1
            }
        };
        let target = &mut thread_lanes[lane];
        self.ends.push(Reverse((
            end,
            Reverse(target.open.len()),
            thread,
            lane as u32,
        )));
        target.open.push(end);
        let flow = self.flows.next(frame);
        w.begin(target.uuid, iids.stage(stage), frame, flow, start_ns)
    }

    fn close_all(mut self, w: &mut PacketWriter) -> anyhow::Result<()> {
        while let Some(Reverse((t, _, thread, lane))) = self.ends.pop() {
            close(&mut self.lanes, thread, lane, t, w)?;
        }
        Ok(())
    }
}

fn close(
    lanes: &mut [Vec<Lane>],
    thread: u32,
    lane: u32,
    t: i64,
    w: &mut PacketWriter,
) -> anyhow::Result<()> {
    let lane = &mut lanes[thread as usize][lane as usize];
    lane.open.pop();
    w.end(lane.uuid, t)
}

/// The flow linking a frame's spans: each carries the frame's flow id, the last one
/// as terminating. Frames of one span have none.
struct FrameFlows {
    /// Per frame: spans not yet written, and `MANY` when it has more than one.
    left: FrameCounts,
    /// Spans counted.
    counted: u64,
}

/// Frame ids that count up from 0 (what framelab records) index a vector; others a map.
enum FrameCounts {
    Dense(Vec<u32>),
    Sparse(FastMap<u64, u32>),
}

const MANY: u32 = 1 << 31;

enum Flow {
    None,
    Continues(u64),
    Ends(u64),
}

impl FrameFlows {
    /// No frames counted yet; about `spans` spans to come.
    fn expecting(spans: usize) -> FrameFlows {
        FrameFlows {
            left: FrameCounts::Dense(Vec::with_capacity(spans.min(1 << 24))),
            counted: 0,
        }
    }

    /// Counts a span of `frame`. Ids that count up index a vector while they stay below
    /// four times the spans counted (plus 1024), else every count moves to a map.
    fn count(&mut self, frame: u64) {
        self.counted += 1;
        if let FrameCounts::Dense(counts) = &mut self.left {
            if frame >= counts.len() as u64 {
                if frame < self.counted.saturating_mul(4).saturating_add(1024) {
                    counts.resize(frame as usize + 1, 0);
                } else {
                    let map = (counts.iter().enumerate())
                        .filter(|&(_, &n)| n > 0)
                        .map(|(f, &n)| (f as u64, n))
                        .collect();
                    self.left = FrameCounts::Sparse(map);
                }
            }
        }
        if let Some(count) = self.left.get(frame) {
            *count = match *count {
                0 => 1,
                n => (n + 1) | MANY,
            };
        }
    }

    fn next(&mut self, frame: u64) -> Flow {
        let Some(count) = self.left.get(frame) else {
            return Flow::None;
        };
        if *count & MANY == 0 {
            return Flow::None;
        }
        *count -= 1;
        match *count & !MANY {
            0 => Flow::Ends(flow_id(frame)),
            _ => Flow::Continues(flow_id(frame)),
        }
    }
}

impl FrameCounts {
    fn get(&mut self, frame: u64) -> Option<&mut u32> {
        match self {
            FrameCounts::Dense(counts) => counts.get_mut(usize::try_from(frame).ok()?),
            FrameCounts::Sparse(counts) => Some(counts.entry(frame).or_insert(0)),
        }
    }
}

/// A frame's flow id: a bijective mix of the frame id (distinct frames, distinct flows).
fn flow_id(frame: u64) -> u64 {
    let mut z = frame.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Perfetto's own unit where it has one (the UI then shows `cpu_time` as a duration, bytes
/// as sizes), else the unit's name; `framelab import` reads either back as the same unit.
fn counter_descriptor(unit: &str) -> CounterDescriptor {
    let builtin = match unit {
        "ns" => Some(UNIT_TIME_NS),
        "count" => Some(UNIT_COUNT),
        "B" => Some(UNIT_SIZE_BYTES),
        _ => None,
    };
    CounterDescriptor {
        unit: builtin,
        unit_name: Some(unit.to_owned()).filter(|u| builtin.is_none() && !u.is_empty()),
        ..CounterDescriptor::default()
    }
}

/// A counter track per series, named as in every export (`formats::series_name`), its
/// readings in order.
fn write_counters(run: &Run, w: &mut PacketWriter) -> anyhow::Result<()> {
    let first_uuid = 1u64 << 62;
    for (i, series) in run.telemetry.series.iter().enumerate() {
        let name = crate::formats::series_name(series);
        w.descriptor(TrackDescriptor {
            uuid: Some(first_uuid + i as u64),
            name: Some(name),
            description: Some(serde_json::to_string(series)?),
            counter: Some(counter_descriptor(&series.unit)),
            ..TrackDescriptor::default()
        })?;
    }
    for s in &run.telemetry.samples {
        if s.series as usize >= run.telemetry.series.len() {
            bail!("a sample names series {}, which the run lacks", s.series);
        }
        w.counter(first_uuid + u64::from(s.series), s.value, s.t_ns)?;
    }
    Ok(())
}

/// Where a [`PacketWriter`]'s chunks go.
enum Out<'a> {
    /// Straight to a writer, on the thread that encodes.
    Write(&'a mut dyn Write),
    /// To the thread that writes them, the buffers it is done with coming back.
    Handoff {
        full: mpsc::SyncSender<Vec<u8>>,
        empty: mpsc::Receiver<Vec<u8>>,
    },
}

/// Encodes packets into a reused buffer, handing it to `out` in chunks; event packets
/// reuse one `TracePacket` so that a span costs no allocation.
struct PacketWriter<'a> {
    out: Out<'a>,
    buf: Vec<u8>,
    shift: i64,
    event: TracePacket,
}

impl<'a> PacketWriter<'a> {
    fn new(out: Out<'a>, shift: i64) -> PacketWriter<'a> {
        PacketWriter {
            out,
            buf: Vec::with_capacity(CHUNK + 4096),
            shift,
            event: TracePacket {
                trusted_packet_sequence_id: Some(SEQUENCE),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                track_event: Some(TrackEvent::default()),
                ..TracePacket::default()
            },
        }
    }

    fn packet(&mut self, packet: &TracePacket) -> anyhow::Result<()> {
        prost::encoding::message::encode(1, packet, &mut self.buf);
        self.flush_if_full()
    }

    fn flush_if_full(&mut self) -> anyhow::Result<()> {
        if self.buf.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Passes the buffer on; it is empty after.
    fn hand_over(&mut self) -> anyhow::Result<()> {
        match &mut self.out {
            Out::Write(out) => {
                out.write_all(&self.buf)?;
                self.buf.clear();
            }
            Out::Handoff { full, empty } => {
                let next = match empty.try_recv() {
                    Ok(mut used) => {
                        used.clear();
                        used
                    }
                    Err(_) => Vec::with_capacity(CHUNK + 4096),
                };
                let chunk = std::mem::replace(&mut self.buf, next);
                // Writing failed: the writer says why.
                full.send(chunk)
                    .map_err(|_| anyhow::anyhow!("the trace's writer stopped"))?;
            }
        }
        Ok(())
    }

    fn descriptor(&mut self, descriptor: TrackDescriptor) -> anyhow::Result<()> {
        self.packet(&TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            track_descriptor: Some(descriptor),
            ..TracePacket::default()
        })
    }

    /// Writes the reused event packet at run time `t_ns` after `fill` set its event.
    fn event(&mut self, t_ns: i64, fill: impl FnOnce(&mut TrackEvent)) -> anyhow::Result<()> {
        let t = t_ns
            .checked_add(self.shift)
            .context("a time past 2^63 ns")?;
        let packet = &mut self.event;
        packet.timestamp = Some(t as u64);
        let event = packet.track_event.get_or_insert_with(TrackEvent::default);
        event.name_iid = None;
        event.counter_value = None;
        event.flow_ids.clear();
        event.terminating_flow_ids.clear();
        event.debug_annotations.clear();
        fill(event);
        prost::encoding::message::encode(1, &self.event, &mut self.buf);
        self.flush_if_full()
    }

    /// A SLICE_BEGIN, encoded by hand: the hot path (prost's generic encoding of the same
    /// packet took a third of the export's time). `the_hand_encoding_is_prosts` checks
    /// that the bytes are exactly prost's.
    fn begin(
        &mut self,
        track: u64,
        name: u64,
        frame: u64,
        flow: Flow,
        t: i64,
    ) -> anyhow::Result<()> {
        self.event_packet(t, |buf| {
            // debug_annotations (4) { name_iid (1), uint_value (3) }
            let annotation = 2 + varint_len(FRAME_IID) + varint_len(frame);
            buf.extend_from_slice(&[0x22, annotation as u8, 0x08]);
            put_varint(buf, FRAME_IID);
            buf.push(0x18);
            put_varint(buf, frame);
            // type (9), name_iid (10), track_uuid (11)
            buf.extend_from_slice(&[0x48, TYPE_SLICE_BEGIN as u8, 0x50]);
            put_varint(buf, name);
            buf.push(0x58);
            put_varint(buf, track);
            // flow_ids (47) and terminating_flow_ids (48): fixed64, unpacked.
            let (key, id) = match flow {
                Flow::None => return,
                Flow::Continues(id) => ([0xF9, 0x02], id),
                Flow::Ends(id) => ([0x81, 0x03], id),
            };
            buf.extend_from_slice(&key);
            buf.extend_from_slice(&id.to_le_bytes());
        })
    }

    /// A SLICE_END, by hand like `begin`.
    fn end(&mut self, track: u64, t: i64) -> anyhow::Result<()> {
        self.event_packet(t, |buf| {
            buf.extend_from_slice(&[0x48, TYPE_SLICE_END as u8, 0x58]);
            put_varint(buf, track);
        })
    }

    /// `packet (1) { timestamp (8), trusted_packet_sequence_id (10), track_event (11),
    /// sequence_flags (13) }` around the track event `event` encodes. A slice's packet
    /// is under 128 bytes (its six varints, a fixed64, tags and lengths: at most 66), so
    /// both lengths are one byte, written once the contents are.
    fn event_packet(&mut self, t: i64, event: impl FnOnce(&mut Vec<u8>)) -> anyhow::Result<()> {
        let t = t.checked_add(self.shift).context("a time past 2^63 ns")?;
        let buf = &mut self.buf;
        let packet_start = buf.len();
        buf.extend_from_slice(&[0x0A, 0, 0x40]);
        put_varint(buf, t as u64);
        buf.extend_from_slice(&[0x50, SEQUENCE as u8, 0x5A, 0]);
        let event_start = buf.len();
        event(buf);
        let event_len = buf.len() - event_start;
        buf.extend_from_slice(&[0x68, SEQ_NEEDS_INCREMENTAL_STATE as u8]);
        let packet_len = buf.len() - packet_start - 2;
        debug_assert!(packet_len < 128);
        buf[event_start - 1] = event_len as u8;
        buf[packet_start + 1] = packet_len as u8;
        self.flush_if_full()
    }

    fn instant(&mut self, track: u64, name: u64, key: Option<u64>, t: i64) -> anyhow::Result<()> {
        self.event(t, |e| {
            e.r#type = Some(TYPE_INSTANT);
            e.track_uuid = Some(track);
            e.name_iid = Some(name);
            if let Some(key) = key {
                e.debug_annotations.push(uint_annotation(KEY_IID, key));
            }
        })
    }

    fn counter(&mut self, track: u64, value: i64, t: i64) -> anyhow::Result<()> {
        self.event(t, |e| {
            e.r#type = Some(TYPE_COUNTER);
            e.track_uuid = Some(track);
            e.counter_value = Some(value);
        })
    }

    fn finish(mut self) -> anyhow::Result<()> {
        if !self.buf.is_empty() {
            self.hand_over()?;
        }
        match &mut self.out {
            Out::Write(out) => Ok(out.flush()?),
            Out::Handoff { .. } => Ok(()),
        }
    }
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn varint_len(v: u64) -> usize {
    prost::encoding::encoded_len_varint(v)
}

fn uint_annotation(name_iid: u64, value: u64) -> DebugAnnotation {
    DebugAnnotation {
        name_iid: Some(name_iid),
        uint_value: Some(value),
        ..DebugAnnotation::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::span;
    use crate::import::{parse_bytes, Format, ImportOptions};
    use crate::model::{EventRecord, Sample, SampleSeries, SeriesKind, Span, ThreadInfo};
    use prost::Message;
    use std::cmp::Reverse;

    fn thread(pid: u32, tid: u32, name: &str) -> ThreadInfo {
        ThreadInfo {
            pid,
            tid,
            name: name.into(),
            dropped: 0,
        }
    }

    /// Nested, overlapping-but-not-nested, zero-length and before-launch spans, events
    /// and two telemetry series.
    fn sample_run() -> Run {
        let mut run = Run {
            stages: vec!["decode".into(), "render".into(), "present".into()],
            event_names: vec!["vsync".into()],
            threads: vec![
                thread(100, 100, "main"),
                thread(100, 101, "worker"),
                thread(7, 7, "other"),
            ],
            spans: vec![
                span(0, 0, 0, 1_000, 500),
                span(0, 1, 0, 1_100, 200), // nested in the decode above
                span(0, 2, 1, 1_400, 300),
                span(1, 0, 0, 1_450, 100), // overlaps decode 0's end: does not nest
                span(1, 1, 0, 1_500, 0),
                span(1, 2, 1, 1_600, 50),
                span(2, 0, 2, -300, 1_000), // before launch
                span(3, 0, 0, 1_460, 10),   // nests in frame 1's decode, on the overlap track
            ],
            events: vec![
                EventRecord {
                    event: 0,
                    key: 42,
                    thread: 0,
                    t_ns: 1_234,
                },
                EventRecord {
                    event: 0,
                    key: 0,
                    thread: 1,
                    t_ns: 2_000,
                },
            ],
            ..Run::default()
        };
        run.telemetry.series = vec![
            SampleSeries {
                source: "nvml".into(),
                metric: "sm_clock".into(),
                entity: "0".into(),
                label: "NVIDIA H100".into(),
                unit: "MHz".into(),
                kind: SeriesKind::Gauge,
            },
            SampleSeries {
                source: "rapl".into(),
                metric: "energy".into(),
                entity: "package-0".into(),
                label: String::new(),
                unit: "uJ".into(),
                kind: SeriesKind::Counter,
            },
        ];
        run.telemetry.samples = vec![
            Sample {
                series: 0,
                t_ns: 0,
                value: 1_980,
            },
            Sample {
                series: 0,
                t_ns: 1_000,
                value: -5,
            },
            Sample {
                series: 1,
                t_ns: 500,
                value: 1 << 40,
            },
        ];
        run
    }

    fn export(run: &Run) -> Vec<u8> {
        let mut out = Vec::new();
        write(run, &mut out).unwrap();
        out
    }

    fn events_of(run: &Run) -> Vec<(String, u64, u32, u32, i64)> {
        let mut events: Vec<_> = (run.events.iter())
            .map(|e| {
                let t = &run.threads[e.thread as usize];
                (
                    run.event_names[e.event as usize].clone(),
                    e.key,
                    t.pid,
                    t.tid,
                    e.t_ns,
                )
            })
            .collect();
        events.sort();
        events
    }

    fn samples_of(run: &Run) -> Vec<(SampleSeries, i64, i64)> {
        let mut samples: Vec<_> = (run.telemetry.samples.iter())
            .map(|s| {
                (
                    run.telemetry.series[s.series as usize].clone(),
                    s.t_ns,
                    s.value,
                )
            })
            .collect();
        samples.sort_by_key(|(series, t, v)| (series.metric.clone(), *t, *v));
        samples
    }

    #[test]
    fn round_trip_gives_the_same_spans_events_and_samples_to_the_nanosecond() {
        let run = sample_run();
        let bytes = export(&run);
        let back = parse_bytes(Format::Perfetto, &bytes, ImportOptions::default()).unwrap();
        assert_eq!(&back.named_spans(), &run.named_spans());
        assert_eq!(events_of(&back), events_of(&run));
        assert_eq!(samples_of(&back), samples_of(&run));
        let info = back.import.unwrap();
        assert!(info.notes.is_empty(), "{:?}", info.notes);
        assert_eq!(info.skipped, 0);
    }

    /// Perfetto's UI formats a counter by its built-in unit only (a time, a size);
    /// framelab's import reads built-in units and names back as the same unit.
    #[test]
    fn counter_units_are_perfettos_own_where_it_has_them() {
        for (unit, builtin, name) in [
            ("ns", Some(UNIT_TIME_NS), None),
            ("count", Some(UNIT_COUNT), None),
            ("B", Some(UNIT_SIZE_BYTES), None),
            ("MHz", None, Some("MHz")),
            ("", None, None),
        ] {
            let d = super::counter_descriptor(unit);
            assert_eq!((d.unit, d.unit_name.as_deref()), (builtin, name), "{unit}");
        }
    }

    #[test]
    fn a_span_that_does_not_nest_goes_on_a_child_track_of_its_thread() {
        let bytes = export(&sample_run());
        let trace = crate::formats::perfetto::proto::Trace::decode(&bytes[..]).unwrap();
        let overlap: Vec<&TrackDescriptor> = (trace.packet.iter())
            .filter_map(|p| p.track_descriptor.as_ref())
            .filter(|d| d.name.as_deref() == Some("overlap 1"))
            .collect();
        assert_eq!(overlap.len(), 1);
        let main_uuid = (trace.packet.iter())
            .filter_map(|p| p.track_descriptor.as_ref())
            .find(|d| d.thread.as_ref().is_some_and(|t| t.tid == Some(100)))
            .and_then(|d| d.uuid);
        assert_eq!(overlap[0].parent_uuid, main_uuid);
        // Per track, BEGINs and ENDs nest properly in file order.
        let mut open: std::collections::HashMap<u64, Vec<u64>> = Default::default();
        for p in &trace.packet {
            let Some(e) = &p.track_event else { continue };
            let stack = open.entry(e.track_uuid.unwrap()).or_default();
            match e.r#type {
                Some(TYPE_SLICE_BEGIN) => stack.push(p.timestamp.unwrap()),
                Some(TYPE_SLICE_END) => assert!(stack.pop().unwrap() <= p.timestamp.unwrap()),
                _ => {}
            }
        }
        assert!(open.values().all(Vec::is_empty));
    }

    #[test]
    fn counter_tracks_are_named_as_the_chrome_export_names_its_counters() {
        let trace =
            crate::formats::perfetto::proto::Trace::decode(&export(&sample_run())[..]).unwrap();
        let names: Vec<&str> = (trace.packet.iter())
            .filter_map(|p| p.track_descriptor.as_ref())
            .filter(|d| d.counter.is_some())
            .filter_map(|d| d.name.as_deref())
            .collect();
        assert_eq!(
            names,
            ["nvml.sm_clock[0] (MHz)", "rapl.energy[package-0] (uJ)"]
        );
    }

    #[test]
    fn times_are_the_runs_own_unless_some_are_negative() {
        let trace =
            |run: &Run| crate::formats::perfetto::proto::Trace::decode(&export(run)[..]).unwrap();
        let marker_time = |t: &crate::formats::perfetto::proto::Trace| {
            (t.packet.iter())
                .find(|p| {
                    p.track_event
                        .as_ref()
                        .is_some_and(|e| e.r#type == Some(TYPE_INSTANT))
                })
                .and_then(|p| p.timestamp)
        };
        let mut run = sample_run();
        assert_eq!(marker_time(&trace(&run)), Some(300));
        run.spans.retain(|s| s.start_ns >= 0);
        assert_eq!(marker_time(&trace(&run)), Some(0));
    }

    #[test]
    fn the_spans_of_a_frame_are_linked_by_one_flow_ending_on_the_last() {
        let trace =
            crate::formats::perfetto::proto::Trace::decode(&export(&sample_run())[..]).unwrap();
        let begins: Vec<&TrackEvent> = (trace.packet.iter())
            .filter_map(|p| p.track_event.as_ref())
            .filter(|e| e.r#type == Some(TYPE_SLICE_BEGIN))
            .collect();
        let frame = |e: &TrackEvent| e.debug_annotations[0].uint_value.unwrap();
        let of_frame = |f: u64| begins.iter().filter(move |e| frame(e) == f);
        // Frame 0: decode, render, present; the last (present, 1400) terminates.
        let flows: Vec<(Vec<u64>, Vec<u64>)> = (of_frame(0))
            .map(|e| (e.flow_ids.clone(), e.terminating_flow_ids.clone()))
            .collect();
        let id = flow_id(0);
        assert_eq!(
            flows,
            vec![(vec![id], vec![]), (vec![id], vec![]), (vec![], vec![id])]
        );
        // Frame 2 has one span: no flow.
        assert!(of_frame(2).all(|e| e.flow_ids.is_empty() && e.terminating_flow_ids.is_empty()));
    }

    #[test]
    fn the_hand_encoding_is_prosts() {
        let values = [0, 1, 127, 128, 300, 1 << 35, u64::MAX >> 1, u64::MAX];
        for (i, &v) in values.iter().enumerate() {
            let w = values[(i + 3) % values.len()];
            let t = (v >> 1) as i64;
            let flows = [Flow::None, Flow::Continues(w), Flow::Ends(v)];
            for flow in flows {
                let (flow_ids, terminating_flow_ids) = match flow {
                    Flow::None => (vec![], vec![]),
                    Flow::Continues(id) => (vec![id], vec![]),
                    Flow::Ends(id) => (vec![], vec![id]),
                };
                let mut ours = Vec::new();
                let mut writer = PacketWriter::new(Out::Write(&mut ours), 0);
                writer.begin(w, v, w, flow, t).unwrap();
                writer.end(v, t).unwrap();
                writer.finish().unwrap();
                let packet = |event: TrackEvent| TracePacket {
                    timestamp: Some(t as u64),
                    trusted_packet_sequence_id: Some(SEQUENCE),
                    sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                    track_event: Some(event),
                    ..TracePacket::default()
                };
                let mut theirs = Vec::new();
                let begin = TrackEvent {
                    r#type: Some(TYPE_SLICE_BEGIN),
                    track_uuid: Some(w),
                    name_iid: Some(v),
                    debug_annotations: vec![uint_annotation(FRAME_IID, w)],
                    flow_ids,
                    terminating_flow_ids,
                    ..TrackEvent::default()
                };
                let end = TrackEvent {
                    r#type: Some(TYPE_SLICE_END),
                    track_uuid: Some(v),
                    ..TrackEvent::default()
                };
                prost::encoding::message::encode(1, &packet(begin), &mut theirs);
                prost::encoding::message::encode(1, &packet(end), &mut theirs);
                assert_eq!(ours, theirs, "values {v} {w}");
            }
        }
    }

    #[test]
    fn flows_work_for_frame_ids_that_are_not_small_counters() {
        let mut run = sample_run();
        for s in &mut run.spans {
            s.frame = crate::import::keys::fnv1a(&s.frame.to_le_bytes());
        }
        let back = parse_bytes(Format::Perfetto, &export(&run), ImportOptions::default()).unwrap();
        assert_eq!(&back.named_spans(), &run.named_spans());
        let trace = crate::formats::perfetto::proto::Trace::decode(&export(&run)[..]).unwrap();
        let ends = (trace.packet.iter())
            .filter_map(|p| p.track_event.as_ref())
            .filter(|e| !e.terminating_flow_ids.is_empty())
            .count();
        assert_eq!(ends, 2, "frames 0 and 1 have several spans");
    }

    #[test]
    fn an_empty_run_is_a_valid_trace_with_just_the_marker() {
        let bytes = export(&Run::default());
        let back = parse_bytes(Format::Perfetto, &bytes, ImportOptions::default()).unwrap();
        assert!(back.spans.is_empty() && back.events.is_empty());
    }

    #[test]
    fn a_span_on_a_thread_the_run_lacks_is_an_error() {
        let mut run = sample_run();
        run.spans[0].thread = 9;
        let err = write(&run, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("thread 9"), "{err}");
    }

    /// 20,000 spans on two threads, nested and overlapping, some starting together.
    fn many_spans() -> Vec<Span> {
        (0..20_000u64)
            .map(|i| Span {
                frame: i / 4,
                stage: (i % 3) as u16,
                thread: (i % 2) as u32,
                start_ns: (i as i64 / 2) * 1_000 + (i as i64 % 5) * 100,
                dur_ns: 50 + (i as i64 * 7919 % 2_500),
            })
            .collect()
    }

    #[test]
    fn spans_far_out_of_order_give_the_bytes_of_the_sorted_run() {
        // Chunks of 8,192 spans are streamed. Reversed, every span is overtaken by one
        // read later: they are sorted whole. In blocks of one thread at a time, as a
        // collector's drains leave them, only a block's worth waits.
        let mut sorted = sample_run();
        sorted.spans = many_spans();
        sorted
            .spans
            .sort_by_key(|s| (s.start_ns, Reverse(s.dur_ns), s.thread));
        let expected = export(&sorted);
        let mut reversed = sorted.clone();
        reversed.spans.reverse();
        assert!(export(&reversed) == expected);
        let mut drained = sorted.clone();
        drained
            .spans
            .sort_by_key(|s| (s.start_ns / 500_000, s.thread));
        assert!(export(&drained) == expected);
    }

    #[test]
    fn the_span_index_named_in_an_error_is_its_place_in_the_run() {
        let mut run = sample_run();
        run.spans = many_spans();
        run.spans[12_345].dur_ns = -1;
        let err = write(&run, &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "span 12345 has a negative duration (-1 ns)"
        );
    }

    #[test]
    fn the_trace_encoded_on_another_thread_is_the_same_and_a_failing_writer_says_why() {
        // 100,000 spans: several chunks handed over.
        let mut run = sample_run();
        run.spans = (0..5)
            .flat_map(|k| {
                many_spans().into_iter().map(move |mut s| {
                    s.frame += k * 5_000;
                    s.start_ns += k as i64 * 10_000_000;
                    s
                })
            })
            .collect();
        let mut threaded = Vec::new();
        assert_eq!(write_from(&run, &run, &mut threaded).unwrap(), 100_000);
        assert!(threaded.len() > 2 * CHUNK);
        assert!(threaded == export(&run));
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("no space left"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let err = write_from(&run, &run, &mut Full).unwrap_err();
        assert_eq!(err.to_string(), "no space left");
    }

    #[test]
    fn a_run_file_written_thread_by_thread_exports_the_bytes_of_its_loaded_run() {
        // The file's spans come thread by thread (two sorted stretches, merged as they are
        // read) or reversed (windows).
        let dir = tempfile::tempdir().unwrap();
        let mut run = sample_run();
        run.spans = many_spans();
        run.spans
            .sort_by_key(|s| (s.thread, s.start_ns, Reverse(s.dur_ns)));
        let mut reversed = run.clone();
        reversed.spans.reverse();
        for (k, run) in [run, reversed].iter().enumerate() {
            let path = dir.path().join(format!("{k}.framelab"));
            crate::store::write_run(&path, run).unwrap();
            let mut stored = crate::store::open_run(&path, None).unwrap();
            let out = dir.path().join(format!("{k}.pftrace"));
            let spans = crate::export::export_stored(
                &mut stored,
                crate::render::Format::Perfetto,
                &out,
                None,
            )
            .unwrap();
            assert_eq!(spans, 20_000);
            // The loaded run put in start order by a stable sort: it is written as it comes.
            let mut loaded = crate::store::load_run(&path, None).unwrap();
            (loaded.spans).sort_by_key(|s| (s.start_ns, Reverse(s.dur_ns), s.thread));
            assert!(std::fs::read(&out).unwrap() == export(&loaded), "run {k}");
        }
    }
}
