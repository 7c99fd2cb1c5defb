//! The drain's side of a spill (`spill::file`): each ring's new records kept raw, with what
//! a fold needs beside them (the names files' bytes as read, the tick clock's segments, the
//! threads).
//!
//! A drain plans every ring (its header read and checked: the records `[tail, head)`), then
//! reads the names of the processes that have records (after the heads: every name a
//! record uses is in its file by then), writes those chunks, and copies each ring's records
//! into the spill with `sendfile`: one copy in the kernel, none through framelab; a ring's
//! records of 256 KiB or more are written from its pages past the page cache instead
//! (`spill::direct`), where the filesystem takes direct writes. Only once
//! a ring's records are all in the spill is its tail written back. A copy that fails leaves
//! no half chunk (the spill is cut back) and the records in the ring: a ring the program
//! cut is read as far as it can be and set aside, a spill that cannot be written is the
//! caller's to fold. Where the kernel refuses `sendfile` for these files, the records are
//! read (`pread`) and written with the drain's other chunks (one `writev`) for the rest of
//! the run.
//!
//! Frames are counted from the records for the progress line only (records whose local
//! name is the first stage's; the run's frames are the fold's): without a progress line a
//! spilling drain reads no record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use framelab_probe::wire::{kind, name_kind, Record};

use super::rings::{Planned, Ring, CHUNK_RECORDS};
use crate::spill::clock::TickClock;
use crate::spill::convert::Converter;
use crate::spill::file::{
    spill_path, CopyFailed, Reserved, RingDrain, SpillHeader, SpillWriter, MAX_CHUNK_RECORDS,
};

/// A ring's records are written past the page cache from this many bytes a drain. Below it
/// the writer thread's two wakeups a write cost more than the copy they save: with 64 KiB,
/// 100k spans/s (160 KB a drain) read 1.03× and 1.16× the copying build's window CPU on the
/// GPU host. At 1M spans/s a producer wakes the collector every 512 KB.
const DIRECT_MIN_BYTES: u64 = 256 << 10;
/// A direct write waits for the disk, where a copy into the page cache does not, and its
/// ring fills meanwhile: so a ring more than half full is copied (its room back at memory
/// speed), a write still going when its ring passes half full is given up, and after a
/// write slower than `DIRECT_SLOW` or one given up (a busy disk) every ring is copied for
/// `DIRECT_PAUSE`.
const DIRECT_SLOW: Duration = Duration::from_millis(10);
const DIRECT_PAUSE: Duration = Duration::from_secs(2);

pub struct Spilling {
    writer: SpillWriter,
    /// Clock segments the spill holds.
    segments: usize,
    /// Records go in by `sendfile`; false once the kernel refused it (then read, written).
    by_sendfile: bool,
    /// No direct write before this (the last one was slow, or given up).
    direct_paused_until: Option<Instant>,
    /// A direct write that took longer than this was slow (`DIRECT_SLOW`; tests of which
    /// path records take, not of the disk's speed, make it never).
    slow_write: Duration,
    /// Rings whose records are on their way past the page cache, by path.
    in_flight: HashMap<PathBuf, InFlight>,
    /// The run is ending (`settle`): no direct write starts, and one still going is given up.
    ending: bool,
    /// A progress line is shown: frames are counted from the records spilled.
    counts_frames: bool,
    /// Frames counted in the records spilled (the progress line's).
    pub frames: u64,
    first_stage: Option<String>,
    /// Per process, the first stage's local id, once its names say.
    first_stage_local: HashMap<u32, Option<u16>>,
}

/// A ring's records on their way past the page cache (`spill::direct`): taken from the ring
/// once every part's write is over and its chunk confirmed.
struct InFlight {
    plan: Planned,
    parts: Vec<Reserved>,
}

/// What became of a ring's direct write at a drain.
enum Landed {
    /// Still going: the ring waits, its records counted as the drain's.
    Waiting,
    /// Over and confirmed: the records taken from the ring.
    Taken(Result<u64, String>),
    /// Given up (too slow, the ring cut, refused): the records are copied as without it.
    GivenUp,
}

/// When a drain is made: what its headers are checked against, and what its records are
/// converted with when folded.
#[derive(Clone, Copy, Debug)]
pub struct DrainAt {
    /// No thread drops more than this (one record per ns of the run, and a second).
    pub max_dropped: u64,
    /// No span read now ends later than this.
    pub latest_end_ns: i64,
    /// The clock's segments now.
    pub segments: usize,
}

impl Spilling {
    /// Creates the spill beside `run_file` with what the run has so far: every process's
    /// names as read, the clock's segments, the threads of the rings open now. Frames are
    /// counted only when `counts_frames` (a progress line shows them).
    pub fn start<'a>(
        run_file: &Path,
        header: SpillHeader,
        conv: &Converter,
        session: &Path,
        threads: impl Iterator<Item = (u32, u32, u32, &'a str)>,
        counts_frames: bool,
    ) -> std::io::Result<Spilling> {
        let mut writer = SpillWriter::create(&spill_path(run_file), header)?;
        // `off`: every record copied through the page cache (to measure the two; the copy's
        // tests).
        if std::env::var_os("FRAMELAB_SPILL_DIRECT").is_none_or(|v| v != "off") {
            writer.start_direct();
        }
        for (&pid, names) in &conv.names {
            writer.names(pid, 0, &names.read_back(session, pid));
        }
        writer.clock(0, &conv.clock.encode_segments(0));
        for (index, pid, tid, name) in threads {
            writer.thread(index, pid, tid, name);
        }
        let written = writer.write();
        if let Err(e) = written {
            crate::spill::file::remove(writer.path());
            return Err(e);
        }
        Ok(Spilling {
            writer,
            segments: conv.clock.segment_count(),
            by_sendfile: true,
            direct_paused_until: None,
            slow_write: DIRECT_SLOW,
            in_flight: HashMap::new(),
            ending: false,
            counts_frames,
            frames: 0,
            first_stage: conv
                .first_stage
                .and_then(|id| conv.stage_name(id))
                .map(str::to_owned),
            first_stage_local: HashMap::new(),
        })
    }

    /// Drains `rings` into the spill: each ring's outcome in order, as `Ring::drain` gives
    /// it (records taken, or why the ring must be set aside). When the spill cannot be
    /// written, the error, with the outcomes of the rings drained before: the rings after
    /// them still hold their records, for the caller to convert.
    pub fn drain(
        &mut self,
        rings: &mut [Ring],
        at: DrainAt,
        conv: &mut Converter,
        buffer: &mut Vec<Record>,
    ) -> (Vec<Result<u64, String>>, Result<()>) {
        let plans: Vec<Result<Planned, String>> =
            rings.iter().map(|r| r.plan(at.max_dropped)).collect();
        let mut named: Vec<u32> = Vec::new();
        for (ring, plan) in rings.iter().zip(&plans) {
            if matches!(plan, Ok(p) if ring.planned(p) > 0) && !named.contains(&ring.pid) {
                named.push(ring.pid);
                self.names_of(ring.pid, conv);
            }
        }
        let mut outcomes = Vec::with_capacity(rings.len());
        if self.by_sendfile {
            // The names, clock and thread chunks before the records that need them.
            if let Err(e) = self.write() {
                return (outcomes, Err(e));
            }
        }
        // Rings retired since the last drain are not waited for.
        (self.in_flight).retain(|path, _| rings.iter().any(|r| &r.path == path));
        for (ring, plan) in rings.iter_mut().zip(plans) {
            let outcome = match plan {
                Ok(plan) => match self.copy(ring, &plan, at, conv, buffer) {
                    Ok(outcome) => outcome,
                    Err(e) => return (outcomes, Err(e)),
                },
                Err(problem) => {
                    self.in_flight.remove(&ring.path);
                    Err(problem)
                }
            };
            outcomes.push(outcome);
        }
        // What was read rather than copied, in one write.
        let written = self.write();
        (outcomes, written)
    }

    /// One ring's planned records into the spill, then taken from the ring. `Err` when the
    /// spill could not take them (the ring still holds them).
    fn copy(
        &mut self,
        ring: &mut Ring,
        plan: &Planned,
        at: DrainAt,
        conv: &Converter,
        buffer: &mut Vec<Record>,
    ) -> Result<Result<u64, String>> {
        let (mut landed, mut may_go_direct) = (0, true);
        if let Some(flight) = self.in_flight.remove(&ring.path) {
            match self.land(ring, flight, plan, conv, buffer)? {
                Landed::Waiting => return Ok(Ok(ring.planned(plan))),
                Landed::Taken(Ok(taken)) => landed = taken,
                Landed::Taken(Err(problem)) => return Ok(Err(problem)),
                Landed::GivenUp => may_go_direct = false,
            }
            // Woken by the write's end: what came since waits for the next drain unless it
            // is worth a direct write of its own or the ring fills.
            let rest = ring.planned(plan);
            let small = rest * (std::mem::size_of::<Record>() as u64) < DIRECT_MIN_BYTES;
            if landed > 0 && !self.ending && small && rest * 4 < ring.capacity() {
                return Ok(Ok(landed));
            }
        }
        let rest = self.copy_planned(ring, plan, at, conv, buffer, may_go_direct)?;
        Ok(rest.map(|taken| landed + taken))
    }

    /// What became of the ring's direct write (`flight`), with the ring planned to `plan`.
    fn land(
        &mut self,
        ring: &mut Ring,
        flight: InFlight,
        plan: &Planned,
        conv: &Converter,
        buffer: &mut Vec<Record>,
    ) -> Result<Landed> {
        if !flight.parts.iter().all(|part| part.outcome.is_over()) {
            if !self.ending && ring.planned(plan) * 2 <= ring.capacity() {
                self.in_flight.insert(ring.path.clone(), flight);
                return Ok(Landed::Waiting);
            }
            log::debug!("a direct write still going as its ring passed half full (or the run ended): given up, its records copied");
            self.pause_direct();
            return Ok(Landed::GivenUp);
        }
        for part in &flight.parts {
            let Some((result, took)) = part.outcome.take() else {
                continue;
            };
            if took > self.slow_write {
                log::debug!("a direct write took {took:?}");
                self.pause_direct();
            }
            match result {
                Ok(()) => {}
                // The ring was cut under the write: the copy finds how far.
                Err(e) if e.raw_os_error() == Some(libc::EFAULT) => return Ok(Landed::GivenUp),
                // Refused, or the disk full: the copy takes the path it always took, and
                // says what it finds.
                Err(e) => {
                    log::debug!("direct write failed ({e}): the spill goes through the page cache from now on");
                    self.writer.stop_direct();
                    return Ok(Landed::GivenUp);
                }
            }
        }
        if let Err(e) = self.writer.confirm_direct(&flight.parts) {
            return Err(self.unwritable(e));
        }
        Ok(Landed::Taken(self.taken(ring, &flight.plan, conv, buffer)))
    }

    /// No direct write for `DIRECT_PAUSE`: the disk is busy.
    fn pause_direct(&mut self) {
        self.direct_paused_until = Some(Instant::now() + DIRECT_PAUSE);
    }

    /// Calls `tell` after each direct write (the collector woken to take its records).
    pub fn when_written(&self, tell: Box<dyn Fn() + Send>) {
        self.writer.when_written(tell);
    }

    /// The run is ending: waits until `until` for the direct writes still going; the next
    /// drain takes those that are over and copies the rest, and starts none.
    pub fn settle(&mut self, until: Instant) {
        self.ending = true;
        for flight in self.in_flight.values() {
            for part in &flight.parts {
                part.outcome.wait_until(until);
            }
        }
    }

    /// The plan's records into the spill (after any direct write that landed), then taken;
    /// written direct only if `may_go_direct` (not right after one was given up).
    fn copy_planned(
        &mut self,
        ring: &mut Ring,
        plan: &Planned,
        at: DrainAt,
        conv: &Converter,
        buffer: &mut Vec<Record>,
        may_go_direct: bool,
    ) -> Result<Result<u64, String>> {
        if ring.planned(plan) == 0 {
            return Ok(ring.take(plan));
        }
        let pid = ring.pid;
        let of = RingDrain {
            pid,
            thread: ring.thread_index.unwrap_or(0),
            clock: ring.clock,
            latest_end_ns: at.latest_end_ns,
            segments: at.segments,
        };
        if self.by_sendfile {
            let parts = ring.parts(plan, MAX_CHUNK_RECORDS);
            let direct = may_go_direct && self.goes_direct(ring, plan);
            if let Some(pages) = direct.then(|| ring.pages()).flatten() {
                // Taken once the writes are over (`land`); counted as drained meanwhile.
                return match self.writer.begin_direct(pages, parts, of) {
                    Ok(parts) => {
                        let flight = InFlight { plan: *plan, parts };
                        self.in_flight.insert(ring.path.clone(), flight);
                        Ok(Ok(ring.planned(plan)))
                    }
                    Err(e) => Err(self.unwritable(e)),
                };
            }
            match self.writer.records_from(ring.file(), parts, of) {
                Ok(()) => return Ok(self.taken(ring, plan, conv, buffer)),
                // Read below as far as it can be, then set aside.
                Err(CopyFailed::SourceEnded) => {}
                Err(CopyFailed::Refused(e)) => {
                    log::debug!("sendfile refused ({e}): the spill's records are read and written from now on");
                    self.by_sendfile = false;
                }
                Err(CopyFailed::Spill(e)) => return Err(self.unwritable(e)),
            }
        }
        Ok(self.read_in(ring, plan, of, conv, buffer))
    }

    /// Whether the plan's records are written past the page cache (see `DIRECT_SLOW`).
    fn goes_direct(&self, ring: &Ring, plan: &Planned) -> bool {
        let records = ring.planned(plan);
        let bytes = records * std::mem::size_of::<Record>() as u64;
        self.writer.takes_direct()
            && !self.ending
            && bytes >= DIRECT_MIN_BYTES
            && records * 2 <= ring.capacity()
            && self
                .direct_paused_until
                .is_none_or(|until| Instant::now() >= until)
    }

    /// The plan's records are in the spill: counted for the progress line, taken from the
    /// ring.
    fn taken(
        &mut self,
        ring: &mut Ring,
        plan: &Planned,
        conv: &Converter,
        buffer: &mut Vec<Record>,
    ) -> Result<u64, String> {
        if self.counts_frames {
            // Read for the count alone; a ring cut since is found by the next plan.
            let _ = ring.read_planned(plan, CHUNK_RECORDS, buffer, |records| {
                self.count_frames(ring.pid, records, conv);
                true
            });
        }
        ring.take(plan)
    }

    /// The plan's records read and gathered, in the chunks a copy makes; a ring cut short
    /// hands what can be read, as a converting drain reads it.
    fn read_in(
        &mut self,
        ring: &mut Ring,
        plan: &Planned,
        of: RingDrain,
        conv: &Converter,
        buffer: &mut Vec<Record>,
    ) -> Result<u64, String> {
        let read = ring.read_planned(plan, MAX_CHUNK_RECORDS, buffer, |records| {
            self.keep(of, records, conv);
            true
        });
        read.and_then(|_| ring.take(plan))
    }

    /// A chunk of a ring's records, as read: written with the drain's other chunks.
    fn keep(&mut self, of: RingDrain, records: &[Record], conv: &Converter) {
        self.writer.records(of, records);
        if self.counts_frames {
            self.count_frames(of.pid, records, conv);
        }
    }

    fn count_frames(&mut self, pid: u32, records: &[Record], conv: &Converter) {
        let is_span = |r: &Record| matches!(r.kind(), kind::SPAN | kind::SPAN_NS);
        if self.first_stage.is_none() {
            // No span converted yet: the first spilled span whose name is known names it.
            let names = conv.names.get(&pid);
            self.first_stage = records.iter().filter(|r| is_span(r)).find_map(|r| {
                match names?.names.get(&r.name()) {
                    Some((name_kind::STAGE, name)) => Some(name.clone()),
                    _ => None,
                }
            });
        }
        let Some(first) = self.first_stage.as_deref() else {
            return;
        };
        let local = *self
            .first_stage_local
            .entry(pid)
            .or_insert_with(|| conv.first_stage_local(pid, first));
        if let Some(local) = local {
            let frames = records
                .iter()
                .filter(|r| is_span(r) && r.name() == local)
                .count();
            self.frames += frames as u64;
        }
    }

    /// Every process's names read again (at each commit): a fold without the collector
    /// has every name the run had.
    pub fn refresh_names(&mut self, conv: &mut Converter) -> Result<()> {
        let pids: Vec<u32> = conv.names.keys().copied().collect();
        for pid in pids {
            self.names_of(pid, conv);
        }
        self.write()
    }

    fn names_of(&mut self, pid: u32, conv: &mut Converter) {
        if let Some((at, bytes)) = conv.refresh_names(pid) {
            self.writer.names(pid, at, &bytes);
            if self.first_stage_local.get(&pid) == Some(&None) {
                self.first_stage_local.remove(&pid);
            }
        }
    }

    /// The clock gained segments: the spill gets them before the records that use them.
    pub fn clock_grew(&mut self, clock: &TickClock) {
        if clock.segment_count() > self.segments {
            self.writer
                .clock(self.segments, &clock.encode_segments(self.segments));
            self.segments = clock.segment_count();
        }
    }

    /// A ring found while spilling: its thread, and its process's names as first read.
    pub fn new_thread(&mut self, ring: &Ring, names: Option<(u64, Vec<u8>)>) {
        if let Some(index) = ring.thread_index {
            self.writer
                .thread(index, ring.pid, ring.tid, &ring.thread_name);
        }
        if let Some((at, bytes)) = names {
            self.writer.names(ring.pid, at, &bytes);
        }
    }

    fn write(&mut self) -> Result<()> {
        self.writer.write().map_err(|e| self.unwritable(e))
    }

    fn unwritable(&self, e: std::io::Error) -> anyhow::Error {
        anyhow!(
            "the records' spill {} could not be written ({e})",
            self.writer.path().display()
        )
    }

    /// The spill, still locked, for the fold (its last chunks not yet written).
    /// The spill file.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    pub fn into_writer(self) -> SpillWriter {
        self.writer
    }

    /// Records spilled so far.
    pub fn records(&self) -> u64 {
        self.writer.records_written
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::fs::File;
    use std::os::unix::fs::FileExt;

    use framelab_probe::wire::{kind, Record};

    use super::super::rings::fixture::RingFile;
    use super::*;
    use crate::spill::direct::{DirectFile, DirectWriter};
    use crate::spill::file::{read_chunks, Chunk, SpillEnd};
    use std::sync::mpsc;

    const AT: DrainAt = DrainAt {
        max_dropped: 1_000_000,
        latest_end_ns: i64::MAX,
        segments: 1,
    };

    /// A span of process-local name `name`, frame `frame`.
    fn span(name: u16, frame: u64) -> Record {
        Record::new(kind::SPAN, name, 0, frame, frame * 10, frame * 10 + 5)
    }

    fn append(dir: &Path, pid: u32, text: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("n-{pid}")))
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    /// A session directory, its converter and a spill beside a run file in it.
    fn started(dir: &Path, clock: TickClock, counts_frames: bool) -> (Converter, Spilling) {
        let conv = Converter::new(0, clock, Some(dir.to_owned()));
        let header = SpillHeader {
            run_id: 1,
            origin_mono_ns: 0,
        };
        let run = dir.join("run.framelab");
        let spill =
            Spilling::start(&run, header, &conv, dir, std::iter::empty(), counts_frames).unwrap();
        (conv, spill)
    }

    fn open(ring: &RingFile, index: u32) -> Ring {
        let mut ring = Ring::open(&ring.path).unwrap().unwrap();
        ring.thread_index = Some(index);
        ring
    }

    /// The kind of every chunk of a spill, in order; how reading it ended.
    fn chunks(path: &Path) -> (Vec<char>, SpillEnd) {
        let (_, file) = crate::spill::file::open(path).unwrap().unwrap();
        let mut out = Vec::new();
        let end = read_chunks(
            file,
            crate::spill::file::open_data(path).as_ref(),
            |chunk| {
                out.push(match chunk {
                    Chunk::Records(_) => 'r',
                    Chunk::Names { .. } => 'n',
                    Chunk::Clock { .. } => 'c',
                    Chunk::Thread { .. } => 't',
                });
                Ok(())
            },
        )
        .unwrap();
        (out, end)
    }

    /// The frames of the records spilled for each thread, in order.
    fn frames_by_thread(path: &Path) -> HashMap<u32, Vec<u64>> {
        let (_, file) = crate::spill::file::open(path).unwrap().unwrap();
        let mut out: HashMap<u32, Vec<u64>> = HashMap::new();
        read_chunks(
            file,
            crate::spill::file::open_data(path).as_ref(),
            |chunk| {
                if let Chunk::Records(d) = chunk {
                    let frames = out.entry(d.of.thread).or_default();
                    frames.extend(d.records.iter().map(|r| r.frame));
                }
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Copying {
        Sendfile,
        /// The kernel refuses `sendfile` (EINVAL) at its first call.
        Refused,
        /// Read and written, as before `sendfile`.
        Read,
    }

    fn refused(_: &File, _: &File, _: u64, _: usize) -> std::io::Result<usize> {
        Err(std::io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// A scripted run: three rings of two processes (8 records each, so they wrap), four
    /// drains, names interned and clock segments added between them; the spill's bytes.
    fn scripted_spill(copying: Copying, full: &TickClock) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let one_segment = full.encode_segments(0).len() / full.segment_count();
        let mut clock = TickClock::replayed();
        assert!(clock.push_encoded(0, &full.encode_segments(0)[..one_segment]));
        append(dir.path(), 10, "1 s decode\n");
        append(dir.path(), 20, "1 s render\n");
        let (mut conv, mut spill) = started(dir.path(), clock, false);
        match copying {
            Copying::Sendfile => {}
            Copying::Refused => spill.writer.copy_with(refused),
            Copying::Read => spill.by_sendfile = false,
        }
        let mut files = [
            RingFile::create(dir.path(), 10, 1, 8),
            RingFile::create(dir.path(), 10, 2, 8),
            RingFile::create(dir.path(), 20, 3, 8),
        ];
        let mut rings: Vec<Ring> = files.iter().zip(0..).map(|(f, i)| open(f, i)).collect();
        let mut frame = 0;
        let mut buffer = Vec::new();
        for drain in 0..4u64 {
            for (index, file) in files.iter_mut().enumerate() {
                // 5, 6 or 7 records a drain: the rings' arrays wrap on the second.
                let count = 5 + (drain + index as u64) % 3;
                let records: Vec<Record> = (0..count)
                    .map(|i| {
                        frame += 1;
                        span(1 + (i % 2) as u16, frame)
                    })
                    .collect();
                file.publish(&records);
            }
            if drain == 1 {
                append(dir.path(), 10, "2 s encode\n");
            }
            if drain == 2 {
                append(dir.path(), 20, "2 c bytes\n3 s present\n");
                let from = conv.clock.segment_count();
                assert!(conv.clock.push_encoded(from, &full.encode_segments(from)));
                spill.clock_grew(&conv.clock);
            }
            let at = DrainAt {
                segments: conv.segments_now(),
                ..AT
            };
            let (outcomes, written) = spill.drain(&mut rings, at, &mut conv, &mut buffer);
            written.unwrap();
            assert_eq!(outcomes.len(), 3);
            assert!(outcomes.iter().all(|o| matches!(o, Ok(5..=7))));
        }
        assert_eq!(spill.by_sendfile, copying == Copying::Sendfile);
        assert!(
            files.iter().all(|f| f.tail() == f.head),
            "every tail written back"
        );
        let path = spill.writer.path().to_owned();
        let (chunks, end) = chunks(&path);
        assert_eq!(end, SpillEnd::Whole);
        // A chunk per ring and drain, two where its records wrap.
        assert!(chunks.iter().filter(|&&c| c == 'r').count() > 12);
        assert_eq!(chunks.iter().filter(|&&c| c == 'n').count(), 2 + 2);
        assert_eq!(chunks.iter().filter(|&&c| c == 'c').count(), 2);
        // Each thread's records once each, in order, across the wraps.
        let frames = frames_by_thread(&path);
        let all: usize = frames.values().map(Vec::len).sum();
        assert_eq!(all as u64, frame);
        for thread in frames.values() {
            assert!(thread.windows(2).all(|w| w[0] < w[1]), "{thread:?}");
        }
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn the_spill_by_sendfile_is_byte_for_byte_the_spill_read_and_written() {
        // A clock of three segments: the spill gets the first, then the others.
        let mut clock = TickClock::new();
        clock.refresh();
        clock.refresh();
        let by_sendfile = scripted_spill(Copying::Sendfile, &clock);
        assert!(by_sendfile == scripted_spill(Copying::Read, &clock));
        // Refused by the kernel: read and written from then on, the same bytes.
        assert!(by_sendfile == scripted_spill(Copying::Refused, &clock));
    }

    thread_local! {
        /// Bytes the failing copy copies before it fails.
        static COPY_BUDGET: Cell<usize> = const { Cell::new(0) };
    }

    /// A copy through a buffer that runs out of room (ENOSPC) after `COPY_BUDGET` bytes.
    fn copy_until_full(
        out: &File,
        input: &File,
        offset: u64,
        len: usize,
    ) -> std::io::Result<usize> {
        use std::io::Write;
        let room = COPY_BUDGET.get();
        if room == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let mut bytes = vec![0; len.min(room)];
        let got = input.read_at(&mut bytes, offset)?;
        (&*out).write_all(&bytes[..got])?;
        COPY_BUDGET.set(room - got);
        Ok(got)
    }

    #[test]
    fn a_copy_failing_part_way_leaves_no_half_chunk_and_every_record_once() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), 7, "1 s decode\n");
        let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), false);
        let mut files = [
            RingFile::create(dir.path(), 7, 1, 64),
            RingFile::create(dir.path(), 7, 2, 64),
            RingFile::create(dir.path(), 7, 3, 64),
        ];
        let mut rings: Vec<Ring> = files.iter().zip(0..).map(|(f, i)| open(f, i)).collect();
        for (n, file) in files.iter_mut().enumerate() {
            let records: Vec<Record> = (0..40).map(|i| span(1, n as u64 * 1000 + i)).collect();
            file.publish(&records);
        }
        // The first ring goes in whole; the second stops 300 bytes into its records.
        COPY_BUDGET.set(40 * 32 + 300);
        spill.writer.copy_with(copy_until_full);
        let mut buffer = Vec::new();
        let (outcomes, written) = spill.drain(&mut rings, AT, &mut conv, &mut buffer);
        let problem = written.unwrap_err().to_string();
        assert!(problem.contains("could not be written"), "{problem}");
        assert_eq!(
            outcomes,
            [Ok(40)],
            "the rings after the failure are not drained"
        );
        assert_eq!(
            [files[0].tail(), files[1].tail(), files[2].tail()],
            [40, 0, 0]
        );
        let path = spill.writer.path().to_owned();
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            spill.writer.written_bytes()
        );
        let (_, end) = chunks(&path);
        assert_eq!(end, SpillEnd::Whole, "no half chunk");
        assert_eq!(frames_by_thread(&path)[&0].len(), 40);
        assert_eq!(spill.records(), 40);

        // The space back: the next drain takes the rest, none twice.
        COPY_BUDGET.set(usize::MAX);
        files[0].publish(&[span(1, 40)]);
        let (outcomes, written) = spill.drain(&mut rings, AT, &mut conv, &mut buffer);
        written.unwrap();
        assert_eq!(outcomes, [Ok(1), Ok(40), Ok(40)]);
        let frames = frames_by_thread(&path);
        assert_eq!(frames[&0], (0..41).collect::<Vec<_>>());
        assert_eq!(frames[&1], (1000..1040).collect::<Vec<_>>());
        assert_eq!(frames[&2], (2000..2040).collect::<Vec<_>>());

        // A failure in the chunk's header alone: nothing of it stays either.
        files[2].publish(&[span(1, 2040)]);
        COPY_BUDGET.set(0);
        let before = spill.writer.written_bytes();
        let (outcomes, written) = spill.drain(&mut rings, AT, &mut conv, &mut buffer);
        assert!(written.is_err());
        assert_eq!(outcomes, [Ok(0), Ok(0)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), before);
        assert_eq!(files[2].tail(), 40);
    }

    /// A real `sendfile` once the ring's file is cut to 1500 of its records: what the
    /// program does between the drain's plan and its copy.
    fn cut_then_sendfile(
        out: &File,
        input: &File,
        offset: u64,
        len: usize,
    ) -> std::io::Result<usize> {
        let records = framelab_probe::wire::HEADER_BYTES as u64 + 1500 * 32;
        if input.metadata()?.len() > records {
            input.set_len(records)?;
        }
        let mut offset = offset as libc::off_t;
        // SAFETY: as `spill::file`'s sendfile.
        let n = unsafe {
            libc::sendfile(
                std::os::fd::AsRawFd::as_raw_fd(out),
                std::os::fd::AsRawFd::as_raw_fd(input),
                &mut offset,
                len,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    #[test]
    fn a_ring_cut_between_plan_and_copy_gives_what_was_readable_and_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), 7, "1 s decode\n");
        let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), false);
        let mut file = RingFile::create(dir.path(), 7, 1, 4096);
        file.publish(&(0..2000).map(|i| span(1, i)).collect::<Vec<_>>());
        let mut rings = vec![open(&file, 0)];
        spill.writer.copy_with(cut_then_sendfile);
        let (outcomes, written) = spill.drain(&mut rings, AT, &mut conv, &mut Vec::new());
        written.unwrap();
        let problem = outcomes[0].clone().unwrap_err();
        assert!(problem.contains("cut to"), "{problem}");
        assert_eq!(file.tail(), 0);
        // As a drain reading the ring hands over: its whole chunks of 1024 records read.
        let path = spill.writer.path().to_owned();
        assert_eq!(frames_by_thread(&path)[&0], (0..1024).collect::<Vec<_>>());
        assert_eq!(chunks(&path).1, SpillEnd::Whole);
        assert!(spill.by_sendfile, "a cut ring is no refusal");

        // Read rather than copied (sendfile refused): read in pieces of up to 65,536
        // records, yet every whole read before the cut is handed over.
        let mut file = RingFile::create(dir.path(), 7, 2, 4096);
        file.publish(&(5000..7000).map(|i| span(1, i)).collect::<Vec<_>>());
        let mut rings = vec![open(&file, 1)];
        spill.by_sendfile = false;
        let cut_at = framelab_probe::wire::HEADER_BYTES as u64 + 1500 * 32;
        File::options()
            .write(true)
            .open(&file.path)
            .unwrap()
            .set_len(cut_at)
            .unwrap();
        let (outcomes, written) = spill.drain(&mut rings, AT, &mut conv, &mut Vec::new());
        written.unwrap();
        assert!(outcomes[0].clone().unwrap_err().contains("cut to"));
        assert_eq!(
            frames_by_thread(&path)[&1],
            (5000..6024).collect::<Vec<_>>()
        );
    }

    /// `spill`'s direct writes through a plain descriptor where the filesystem takes none
    /// (the same layout); `gate`d when given (a disk that writes only when told, and whose
    /// slowness the test makes). Ungated, the test's disk is the machine's: how long its
    /// writes take on a loaded machine must not decide which path the records take.
    fn writing_direct(spill: &mut Spilling, gate: Option<mpsc::Receiver<()>>) {
        let path = spill.writer.path().to_owned();
        if gate.is_none() {
            spill.slow_write = Duration::MAX;
        }
        match gate {
            Some(gate) => (spill.writer).direct_with(DirectWriter::gated(
                DirectFile::buffered(&crate::spill::file::data_path(&path)),
                gate,
            )),
            None if !spill.writer.takes_direct() => (spill.writer).direct_with(
                DirectWriter::start(DirectFile::buffered(&crate::spill::file::data_path(&path)))
                    .unwrap(),
            ),
            None => {}
        }
    }

    /// Publishes records `from..to` into `file`, then drains `rings`: the first ring's
    /// outcome.
    fn publish_and_drain(
        spill: &mut Spilling,
        conv: &mut Converter,
        file: &mut RingFile,
        rings: &mut [Ring],
        frames: std::ops::Range<u64>,
    ) -> Result<u64, String> {
        file.publish(&frames.map(|i| span(1, i)).collect::<Vec<_>>());
        let (outcomes, written) = spill.drain(rings, AT, conv, &mut Vec::new());
        written.unwrap();
        outcomes[0].clone()
    }

    /// Waits for the direct writes going on.
    fn writes_over(spill: &Spilling) {
        let until = Instant::now() + Duration::from_secs(60);
        for flight in spill.in_flight.values() {
            for part in &flight.parts {
                assert!(part.outcome.wait_until(until));
            }
        }
    }

    /// Records in `DIRECT_MIN_BYTES`: the fewest a drain writes direct.
    const M: u64 = DIRECT_MIN_BYTES / 32;

    #[test]
    fn a_drain_of_256_kib_or_more_goes_past_the_page_cache_and_a_ring_cut_under_it_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), 7, "1 s decode\n");
        let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), false);
        writing_direct(&mut spill, None);
        let mut file = RingFile::create(dir.path(), 7, 1, 8 * M);
        let mut rings = vec![open(&file, 0)];
        let mut drain = |spill: &mut Spilling, file: &mut RingFile, frames| {
            publish_and_drain(spill, &mut conv, file, &mut rings, frames)
        };
        // One record short of DIRECT_MIN_BYTES: copied. Then written from the ring's pages
        // (counted as drained at once, taken from the ring at the next drain once over),
        // the last 2M wrapping past the array's end.
        let mut n = M - 1;
        assert_eq!(drain(&mut spill, &mut file, 0..n), Ok(n));
        assert_eq!(drain(&mut spill, &mut file, n..n + 3 * M), Ok(3 * M));
        assert_eq!(file.tail(), n, "taken once over");
        writes_over(&spill);
        n += 3 * M;
        assert_eq!(drain(&mut spill, &mut file, n..n + 3 * M), Ok(6 * M));
        assert_eq!(file.tail(), n);
        writes_over(&spill);
        n += 3 * M;
        assert_eq!(drain(&mut spill, &mut file, n..n + 2 * M), Ok(5 * M));
        writes_over(&spill);
        n += 2 * M;
        assert_eq!(drain(&mut spill, &mut file, n..n), Ok(2 * M));
        assert_eq!(file.tail(), n);
        assert_eq!(spill.writer.records_direct, 8 * M);
        // The program cuts its ring under the next write: what is readable is read, as a
        // converting drain reads it (no whole read of 1024 records here), and the ring is
        // set aside with its tail where it was.
        file.publish(&(n..n + 3 * M).map(|i| span(1, i)).collect::<Vec<_>>());
        File::options()
            .write(true)
            .open(&file.path)
            .unwrap()
            .set_len(framelab_probe::wire::HEADER_BYTES as u64 + 1500 * 32)
            .unwrap();
        assert_eq!(drain(&mut spill, &mut file, n..n), Ok(3 * M));
        writes_over(&spill);
        let problem = drain(&mut spill, &mut file, n..n).unwrap_err();
        assert!(problem.contains("cut to"), "{problem}");
        assert_eq!(file.tail(), n);
        assert!(spill.writer.takes_direct(), "a cut ring is no refusal");
        assert_eq!(spill.writer.records_direct, 8 * M);
        let path = spill.writer.path().to_owned();
        assert_eq!(frames_by_thread(&path)[&0], (0..n).collect::<Vec<_>>());
        assert_eq!(chunks(&path).1, SpillEnd::Whole);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            spill.writer.written_bytes()
        );
    }

    #[test]
    fn a_direct_write_still_going_at_half_full_or_at_the_end_is_given_up_for_a_copy() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), 7, "1 s decode\n");
        let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), false);
        let (go, gate) = mpsc::channel();
        writing_direct(&mut spill, Some(gate));
        let mut file = RingFile::create(dir.path(), 7, 1, 8 * M);
        let mut rings = vec![open(&file, 0)];
        let mut drain = |spill: &mut Spilling, file: &mut RingFile, frames| {
            publish_and_drain(spill, &mut conv, file, &mut rings, frames)
        };
        // Over half the ring: copied, to get the room back at memory speed.
        let mut n = 4 * M + 1;
        assert_eq!(drain(&mut spill, &mut file, 0..n), Ok(n));
        // Written direct, and the disk holds the write: the ring waits.
        assert_eq!(drain(&mut spill, &mut file, n..n + M), Ok(M));
        assert_eq!(drain(&mut spill, &mut file, n + M..n + M), Ok(M));
        assert_eq!(file.tail(), n);
        // Past half full with the write still going: given up, every record copied.
        assert_eq!(
            drain(&mut spill, &mut file, n + M..n + 4 * M + 1),
            Ok(4 * M + 1)
        );
        n += 4 * M + 1;
        assert_eq!(file.tail(), n);
        // The given-up write lands late, into a chunk read past; the disk was busy, so the
        // next drains copy.
        go.send(()).unwrap();
        assert_eq!(drain(&mut spill, &mut file, n..n + M), Ok(M));
        n += M;
        assert_eq!(spill.writer.records_direct, 0);
        // A write that took longer than DIRECT_SLOW pauses direct writes too.
        spill.direct_paused_until = None;
        assert_eq!(drain(&mut spill, &mut file, n..n + M), Ok(M));
        n += M;
        std::thread::sleep(DIRECT_SLOW * 2);
        go.send(()).unwrap();
        writes_over(&spill);
        assert_eq!(drain(&mut spill, &mut file, n..n), Ok(M));
        assert_eq!(spill.writer.records_direct, M);
        assert!(spill.direct_paused_until.is_some());
        // The run's end: a write still going is waited for (not for ever), then copied.
        spill.direct_paused_until = None;
        assert_eq!(drain(&mut spill, &mut file, n..n + M), Ok(M));
        n += M;
        spill.settle(Instant::now() + Duration::from_millis(20));
        assert_eq!(drain(&mut spill, &mut file, n..n), Ok(M));
        assert_eq!(file.tail(), n);
        let path = spill.writer.path().to_owned();
        assert_eq!(frames_by_thread(&path)[&0], (0..n).collect::<Vec<_>>());
        assert_eq!(chunks(&path).1, SpillEnd::Whole);
    }

    #[test]
    fn a_direct_write_that_fails_is_copied_and_no_other_is_tried() {
        let dir = tempfile::tempdir().unwrap();
        append(dir.path(), 7, "1 s decode\n");
        let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), false);
        let path = spill.writer.path().to_owned();
        let data = crate::spill::file::data_path(&path);
        let _ = std::fs::remove_file(&data);
        spill
            .writer
            .direct_with(DirectWriter::start(DirectFile::refusing(&data)).unwrap());
        let mut file = RingFile::create(dir.path(), 7, 1, 8 * M);
        let mut rings = vec![open(&file, 0)];
        assert_eq!(
            publish_and_drain(&mut spill, &mut conv, &mut file, &mut rings, 0..M),
            Ok(M)
        );
        writes_over(&spill);
        assert_eq!(
            publish_and_drain(&mut spill, &mut conv, &mut file, &mut rings, M..2 * M),
            Ok(2 * M)
        );
        assert!(!spill.writer.takes_direct());
        assert_eq!(file.tail(), 2 * M);
        assert_eq!(spill.writer.records_direct, 0);
        assert_eq!(frames_by_thread(&path)[&0], (0..2 * M).collect::<Vec<_>>());
    }

    #[test]
    fn frames_are_counted_from_the_spilled_records_of_the_first_stage_with_a_progress_line() {
        for counts_frames in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            append(dir.path(), 7, "1 s decode\n2 s encode\n");
            let (mut conv, mut spill) = started(dir.path(), TickClock::replayed(), counts_frames);
            let mut file = RingFile::create(dir.path(), 7, 1, 16);
            let mut rings = vec![open(&file, 0)];
            // No span converted yet: the first spilled span names the first stage.
            let records: Vec<Record> = (0..10)
                .map(|i| Record::new(kind::SPAN, 1 + (i % 2) as u16, 0, i / 2, i, i + 1))
                .collect();
            for part in [&records[..], &records[..3]] {
                file.publish(part);
                let (_, written) = spill.drain(&mut rings, AT, &mut conv, &mut Vec::new());
                written.unwrap();
            }
            let expected = if counts_frames { 5 + 2 } else { 0 };
            assert_eq!(spill.frames, expected, "decode's spans: frames");
            assert_eq!(spill.records(), 13);
            assert_eq!(conv.frames_seen, 0, "nothing converted");
        }
    }
}
