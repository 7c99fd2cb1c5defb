//! A spill left beside a run file by a framelab that was killed (or lost its disk) while
//! recording, folded into the run by the next open of the file (`reading::open_for_reading`):
//! the spill's chunks converted as the drain would have (names and clock segments from the
//! spill, the run's name ids continued from its tables), the run's invalid-record count and
//! first span fixed, the spill removed, one line said. A spill its recorder still holds is
//! left alone (the run is still recording). A spill that is not one is said and left; a
//! run file that cannot take the fold is one error, and the spill stays for a later open.

use std::path::Path;

use framelab_probe::wire::{self, name_kind};
use rusqlite::Connection;

use super::file::one_line;
use super::writer::RunWriter;
use crate::model::ThreadInfo;
use crate::spill::clock::TickClock;
use crate::spill::convert::Converter;
use crate::spill::file::{self, spill_path, Chunk, SpillEnd};

/// Records converted between writes: the writer's batches.
const HOLD_RECORDS: usize = 1 << 16;

/// What the open of a run file found beside it.
#[derive(Debug, PartialEq, Eq)]
pub enum LeftSpill {
    /// No spill, or one folded in now, or one that is not a spill (said).
    None,
    /// A spill its recorder holds: the run is still recording.
    Recording,
}

/// Folds the spill beside `path` into it, if one is left and no recorder holds it.
pub fn fold_left_spill(path: &Path, conn: &Connection) -> anyhow::Result<LeftSpill> {
    let spill = spill_path(path);
    let (header, file) = match file::open(&spill) {
        Ok(None) => return Ok(LeftSpill::None),
        Ok(Some(opened)) => opened,
        Err(e) => {
            log::warn!(
                "{} is beside {} but cannot be folded into it: {e}; it is left there",
                spill.display(),
                path.display()
            );
            return Ok(LeftSpill::None);
        }
    };
    if file::held_by_recorder(&file) {
        return Ok(LeftSpill::Recording);
    }
    let (records, cut, damaged) = fold_into(path, conn, &spill, header, &file)?;
    file::remove(&spill);
    drop(file);
    let mut line = format!("folded {records} records left by a run that did not finish");
    if cut > 0 {
        line += &format!(" ({cut} more were cut short by the end of the spill)");
    }
    if let Some(e) = damaged {
        line += &format!(" (the rest of its spill is damaged: {e:#})");
    }
    log::info!("{line}");
    Ok(LeftSpill::None)
}

/// Folds what the spill of a run still recording holds so far into `copy` (a private copy
/// of its run file, `conn` open on it): a reader of a live run sees every record drained.
pub fn fold_recording_spill(run: &Path, copy: &Path, conn: &Connection) -> anyhow::Result<()> {
    let spill = spill_path(run);
    let Ok(Some((header, file))) = file::open(&spill) else {
        return Ok(());
    };
    fold_into(copy, conn, &spill, header, &file).map(drop)
}

/// The spill's chunks converted into the run file `path` (`conn` open on it), in one
/// transaction: the records folded, those of a chunk cut short, and the damage that
/// ended the reading early.
fn fold_into(
    path: &Path,
    conn: &Connection,
    spill: &Path,
    header: file::SpillHeader,
    file: &std::fs::File,
) -> anyhow::Result<(u64, u64, Option<anyhow::Error>)> {
    let cannot = |e: anyhow::Error| {
        let (why, remedy) = match e.downcast_ref::<crate::store::DiskFull>() {
            Some(_) => (
                "the disk is full".to_owned(),
                format!(
                    "free space there, or move {} with the files beside it that begin with its name to another disk",
                    path.display()
                ),
            ),
            None => (format!("{e:#}"), "make the file writable".to_owned()),
        };
        one_line(format!(
            "{} holds records of a run that did not finish, which could not be folded into {}: {why}; {remedy}, and open it again (the records stay in {})",
            spill.display(),
            path.display(),
            spill.display()
        ))
    };
    let (invalid_records, first_span_ns): (i64, Option<i64>) = conn
        .query_row(
            "SELECT invalid_records, first_span_ns FROM runs WHERE run_id = ?1",
            [header.run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| {
            cannot(anyhow::anyhow!(
                "its run {} cannot be read ({e})",
                header.run_id
            ))
        })?;
    let mut writer = RunWriter::resume(path, header.run_id).map_err(cannot)?;
    let mut conv = Converter::new(header.origin_mono_ns, TickClock::replayed(), None);
    for (kind, table, id) in [
        (name_kind::STAGE, "stages", "stage_id"),
        (name_kind::COUNTER, "counter_names", "counter_id"),
        (name_kind::EVENT, "event_names", "event_id"),
    ] {
        conv.already_named(kind, names(conn, table, id, header.run_id).map_err(cannot)?);
    }
    conv.invalid_records = invalid_records as u64;
    conv.first_span_ns = first_span_ns;
    let mut records = 0u64;
    // A write that failed is the run file's problem, not the spill's.
    let mut write_failed = false;
    let data = file::open_data(spill);
    let read = file::read_chunks(
        file.try_clone().map_err(|e| cannot(e.into()))?,
        data.as_ref(),
        |chunk| {
            match chunk {
                Chunk::Names { pid, at, bytes } => {
                    if !conv.names.entry(pid).or_default().feed_at(at, bytes) {
                        anyhow::bail!("the names of process {pid} skip bytes");
                    }
                }
                Chunk::Clock { first, segments } => {
                    if !conv.clock.push_encoded(first, segments) {
                        anyhow::bail!("its clock segments do not follow on");
                    }
                }
                Chunk::Thread {
                    index,
                    pid,
                    tid,
                    name,
                } => {
                    while writer.thread_count() <= index as usize {
                        let thread = match writer.thread_count() == index as usize {
                            true => ThreadInfo {
                                pid,
                                tid,
                                name: name.clone(),
                                dropped: 0,
                            },
                            // A thread the spill does not name (its ring retired unrecorded).
                            false => ThreadInfo::default(),
                        };
                        writer
                            .add_thread(&thread)
                            .inspect_err(|_| write_failed = true)?;
                    }
                }
                Chunk::Records(drained) => {
                    let ticks = drained.of.clock == wire::CLOCK_TSC;
                    if ticks
                        && (drained.of.segments == 0
                            || drained.of.segments > conv.clock.segment_count())
                    {
                        anyhow::bail!("records use clock segments it does not hold");
                    }
                    conv.convert_drained(&drained);
                    records += drained.records.len() as u64;
                    if conv.held() >= HOLD_RECORDS {
                        write_out(&mut conv, &mut writer).inspect_err(|_| write_failed = true)?;
                    }
                }
            }
            Ok(())
        },
    );
    let (cut, damaged) = match read {
        Ok(SpillEnd::Whole) => (0, None),
        Ok(SpillEnd::Cut { records }) => (records, None),
        Err(e) if write_failed => {
            writer.roll_back();
            return Err(cannot(e));
        }
        // What came before the damage is folded; the rest cannot be read by anyone.
        Err(e) => (0, Some(e)),
    };
    // A fold cannot tell a refused name's records from bad ids (the names refused are
    // counted at the run's end, which a folded run never reached): both count as invalid.
    let invalid = conv.invalid_records + conv.refused_name_records;
    let finished = write_out(&mut conv, &mut writer)
        .and_then(|()| writer.set_conversion_facts(invalid, conv.first_span_ns));
    if let Err(e) = finished {
        writer.roll_back();
        return Err(cannot(e));
    }
    writer.finish().map_err(cannot)?;
    Ok((records, cut, damaged))
}

/// Names of a run's table, in id order.
fn names(conn: &Connection, table: &str, id: &str, run_id: i64) -> anyhow::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT name FROM {table} WHERE run_id = ?1 ORDER BY {id}"
    ))?;
    let names = stmt
        .query_map([run_id], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

/// What the converter holds, into the run: names first (the store's ids are given in
/// order, as the converter's were).
fn write_out(conv: &mut Converter, writer: &mut RunWriter) -> anyhow::Result<()> {
    for (kind, name) in conv.take_named() {
        match kind {
            name_kind::STAGE => writer.add_stage(&name)?,
            name_kind::COUNTER => writer.add_counter_name(&name)?,
            _ => writer.add_event_name(&name)?,
        };
    }
    writer.spans(&std::mem::take(&mut conv.spans))?;
    writer.counters(&std::mem::take(&mut conv.counters))?;
    writer.events(&std::mem::take(&mut conv.events))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use framelab_probe::wire::{kind, Record, CLOCK_MONO};

    use super::*;
    use crate::model::{RunMeta, Span};
    use crate::spill::file::{RingDrain, SpillHeader, SpillWriter};

    const ORIGIN: i64 = 1_000_000_000;

    /// A run file as a spilling run leaves it at its last commit: stage `decode` given,
    /// one thread, one span converted before the window opened.
    fn recorded_run(dir: &Path) -> (std::path::PathBuf, i64) {
        let path = dir.join("killed.framelab");
        let meta = RunMeta {
            origin_mono_ns: ORIGIN,
            first_span_ns: Some(500),
            invalid_records: 1,
            ..RunMeta::default()
        };
        let mut writer = RunWriter::create(&path, &meta).unwrap();
        writer.add_stage("decode").unwrap();
        writer
            .add_thread(&ThreadInfo {
                pid: 10,
                tid: 11,
                name: "main".into(),
                dropped: 0,
            })
            .unwrap();
        let before = Span {
            frame: 0,
            stage: 0,
            thread: 0,
            start_ns: 500,
            dur_ns: 100,
        };
        writer.spans(&[before]).unwrap();
        writer.commit().unwrap();
        let run_id = writer.run_id();
        // Killed: no finish.
        std::mem::forget(writer);
        (path, run_id)
    }

    fn spill(path: &Path, run_id: i64, cut_bytes: u64) -> SpillWriter {
        let header = SpillHeader {
            run_id,
            origin_mono_ns: ORIGIN,
        };
        let mut spill = SpillWriter::create(&spill_path(path), header).unwrap();
        spill.names(10, 0, b"1 s decode\n2 s encode\n3 c bytes\n");
        spill.thread(1, 10, 12, "worker");
        let span = |name, frame, start: i64, end: i64| {
            Record::new(
                kind::SPAN_NS,
                name,
                0,
                frame,
                (ORIGIN + start) as u64,
                (ORIGIN + end) as u64,
            )
        };
        let of_thread = |thread| RingDrain {
            pid: 10,
            thread,
            clock: CLOCK_MONO,
            latest_end_ns: i64::MAX,
            segments: 1,
        };
        spill.records(
            of_thread(0),
            &[span(2, 1, 1_000, 1_300), span(1, 2, 200, 250)],
        );
        spill.records(
            of_thread(1),
            &[span(7, 1, 0, 1), Record::new(kind::COUNTER, 3, 0, 1, 42, 0)],
        );
        spill.write().unwrap();
        if cut_bytes > 0 {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(spill_path(path))
                .unwrap();
            file.set_len(file.metadata().unwrap().len() - cut_bytes)
                .unwrap();
        }
        spill
    }

    #[test]
    fn a_killed_runs_spill_is_folded_into_its_file_by_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let (path, run_id) = recorded_run(dir.path());
        drop(spill(&path, run_id, 0));
        let (run, said) =
            crate::said_in_tests::said_while(|| crate::store::load_run(&path, None).unwrap());
        assert_eq!(
            said,
            [(
                log::Level::Info,
                "folded 4 records left by a run that did not finish".to_owned()
            )]
        );
        assert!(
            !spill_path(&path).exists(),
            "the spill is removed once folded"
        );
        let stages: Vec<&str> = run.stages.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            stages,
            ["decode", "encode"],
            "ids continue the run's, in order of first use"
        );
        let spans: Vec<(u64, u16, u32, i64, i64)> = run
            .spans
            .iter()
            .map(|s| (s.frame, s.stage, s.thread, s.start_ns, s.dur_ns))
            .collect();
        assert_eq!(
            spans,
            [
                (0, 0, 0, 500, 100),
                (1, 1, 0, 1_000, 300),
                (2, 0, 0, 200, 50)
            ]
        );
        assert_eq!(run.counters.len(), 1);
        assert_eq!(run.threads.len(), 2);
        assert_eq!(run.threads[1].name, "worker");
        assert_eq!(
            run.meta.invalid_records, 2,
            "the one before and the unknown name"
        );
        assert_eq!(run.meta.first_span_ns, Some(200));
        // Opened again: nothing left to fold, the same run.
        let again = crate::store::load_run(&path, None).unwrap();
        assert_eq!(again.spans, run.spans);
    }

    #[test]
    fn a_cut_spill_folds_its_whole_chunks_and_says_the_cut_one() {
        let dir = tempfile::tempdir().unwrap();
        let (path, run_id) = recorded_run(dir.path());
        drop(spill(&path, run_id, 8));
        let (run, said) =
            crate::said_in_tests::said_while(|| crate::store::load_run(&path, None).unwrap());
        assert_eq!(
            said[0].1,
            "folded 2 records left by a run that did not finish (2 more were cut short by the end of the spill)"
        );
        assert_eq!(run.spans.len(), 3);
        assert!(!spill_path(&path).exists());
    }

    #[test]
    fn a_spill_still_held_by_its_recorder_is_read_from_a_copy_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, run_id) = recorded_run(dir.path());
        let recording = spill(&path, run_id, 0);
        let (run, said) =
            crate::said_in_tests::said_while(|| crate::store::load_run(&path, None).unwrap());
        assert_eq!(
            run.spans.len(),
            3,
            "a run still recording is read with its spill so far"
        );
        assert!(said.is_empty(), "{said:?}");
        assert!(spill_path(&path).exists(), "the recorder's spill stays");
        let conn = rusqlite::Connection::open(&path).unwrap();
        let in_file: i64 = conn
            .query_row("SELECT span_count FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            in_file, 1,
            "folded into a private copy, not the file being recorded"
        );
        drop(recording);
        // Recorded to its end since (the spill folded by its recorder): the file itself.
        std::fs::remove_file(spill_path(&path)).unwrap();
        let run = crate::store::load_run(&path, None).unwrap();
        assert_eq!(run.spans.len(), 1, "the copy is no longer read");
    }

    #[test]
    fn a_spill_that_is_not_one_is_said_and_the_run_file_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = recorded_run(dir.path());
        std::fs::write(
            spill_path(&path),
            b"garbage, not a spill at all, of some length",
        )
        .unwrap();
        let (run, said) =
            crate::said_in_tests::said_while(|| crate::store::load_run(&path, None).unwrap());
        assert_eq!(run.spans.len(), 1, "the run file is still read");
        assert_eq!(said.len(), 1);
        assert!(said[0].1.contains("cannot be folded into it"), "{said:?}");
    }
}
