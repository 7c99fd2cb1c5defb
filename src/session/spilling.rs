//! The drain's side of a spill (`spill::file`): each ring's new records kept raw, with what
//! a fold needs beside them (the names files' bytes as read, the tick clock's segments, the
//! threads), one write per drain. Frames are counted from the records for the progress
//! line only (records whose local name is the first stage's): the run's frames are the
//! fold's.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use framelab_probe::wire::{kind, name_kind, Record};

use crate::spill::clock::TickClock;
use crate::spill::convert::Converter;
use crate::spill::file::{spill_path, SpillHeader, SpillWriter};

pub struct Spilling {
    writer: SpillWriter,
    /// Clock segments the spill holds.
    segments: usize,
    /// Frames counted in the records spilled (the progress line's).
    pub frames: u64,
    first_stage: Option<String>,
    /// Per process, the first stage's local id, once its names say.
    first_stage_local: HashMap<u32, Option<u16>>,
    /// Processes whose rings gave records in this drain: their names are read after.
    fresh_pids: Vec<u32>,
}

impl Spilling {
    /// Creates the spill beside `run_file` with what the run has so far: every process's
    /// names as read, the clock's segments, the threads of the rings open now.
    pub fn start<'a>(
        run_file: &Path,
        header: SpillHeader,
        conv: &Converter,
        session: &Path,
        threads: impl Iterator<Item = (u32, u32, u32, &'a str)>,
    ) -> std::io::Result<Spilling> {
        let mut writer = SpillWriter::create(&spill_path(run_file), header)?;
        for (&pid, names) in &conv.names {
            writer.names(pid, 0, &names.read_back(session, pid));
        }
        writer.clock(0, &conv.clock.encode_segments(0));
        for (index, pid, tid, name) in threads {
            writer.thread(index, pid, tid, name);
        }
        let written = writer.write();
        if let Err(e) = written {
            let _ = std::fs::remove_file(writer.path());
            return Err(e);
        }
        Ok(Spilling {
            writer,
            segments: conv.clock.segment_count(),
            frames: 0,
            first_stage: conv
                .first_stage
                .and_then(|id| conv.stage_name(id))
                .map(str::to_owned),
            first_stage_local: HashMap::new(),
            fresh_pids: Vec::new(),
        })
    }

    /// A chunk of a ring's records, as drained.
    #[allow(clippy::too_many_arguments)]
    pub fn keep(
        &mut self,
        pid: u32,
        thread: u32,
        clock: u32,
        latest_end_ns: i64,
        segments: usize,
        records: &[Record],
        conv: &Converter,
    ) {
        self.writer
            .records(pid, thread, clock, latest_end_ns, segments, records);
        if !self.fresh_pids.contains(&pid) {
            self.fresh_pids.push(pid);
        }
        self.count_frames(pid, records, conv);
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

    /// After a drain: the names of the processes that gave records, read after the records
    /// (any name they use is in the file by then), then the drain's one write.
    pub fn end_drain(&mut self, conv: &mut Converter, session: &Path) -> Result<()> {
        for pid in std::mem::take(&mut self.fresh_pids) {
            self.names_of(pid, conv, session);
        }
        self.write()
    }

    /// Every process's names read again (at each commit): a fold without the collector
    /// has every name the run had.
    pub fn refresh_names(&mut self, conv: &mut Converter, session: &Path) -> Result<()> {
        let pids: Vec<u32> = conv.names.keys().copied().collect();
        for pid in pids {
            self.names_of(pid, conv, session);
        }
        self.write()
    }

    fn names_of(&mut self, pid: u32, conv: &mut Converter, session: &Path) {
        if let Some((at, bytes)) = conv.names.entry(pid).or_default().refresh(session, pid) {
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
    pub fn new_thread(&mut self, ring: &super::rings::Ring, names: Option<(u64, Vec<u8>)>) {
        if let Some(index) = ring.thread_index {
            self.writer
                .thread(index, ring.pid, ring.tid, &ring.thread_name);
        }
        if let Some((at, bytes)) = names {
            self.writer.names(ring.pid, at, &bytes);
        }
    }

    fn write(&mut self) -> Result<()> {
        self.writer.write().map_err(|e| {
            anyhow!(
                "the records' spill {} could not be written ({e})",
                self.writer.path().display()
            )
        })
    }

    /// The spill, still locked, for the fold (its last chunks not yet written).
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
    use framelab_probe::wire::{kind, Record, CLOCK_MONO};

    use super::*;

    #[test]
    fn frames_are_counted_from_the_spilled_records_of_the_first_stage() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n-7"), "1 s decode\n2 s encode\n").unwrap();
        let mut conv = Converter::new(0, TickClock::replayed(), Some(dir.path().to_owned()));
        conv.names.entry(7).or_default().refresh(dir.path(), 7);
        let run = dir.path().join("run.framelab");
        let header = SpillHeader {
            run_id: 1,
            origin_mono_ns: 0,
        };
        let mut spill =
            Spilling::start(&run, header, &conv, dir.path(), std::iter::empty()).unwrap();
        // No span converted yet: the first spilled span names the first stage.
        let records: Vec<Record> = (0..10)
            .map(|i| Record::new(kind::SPAN, 1 + (i % 2) as u16, 0, i / 2, i, i + 1))
            .collect();
        spill.keep(7, 0, CLOCK_MONO, i64::MAX, 1, &records, &conv);
        spill.keep(7, 0, CLOCK_MONO, i64::MAX, 1, &records[..3], &conv);
        spill.end_drain(&mut conv, dir.path()).unwrap();
        assert_eq!(spill.frames, 5 + 2, "decode's spans: frames");
        assert_eq!(spill.records(), 13);
        assert_eq!(conv.frames_seen, 0, "nothing converted");
        let writer = spill.into_writer();
        assert!(crate::spill::file::spill_path(&run).exists());
        drop(writer);
    }
}
