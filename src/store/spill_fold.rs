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

/// Folds the spill beside `path` into it, if one is left and no recorder holds it.
pub fn fold_left_spill(path: &Path, conn: &Connection) -> anyhow::Result<()> {
    let spill = spill_path(path);
    let (header, file) = match file::open(&spill) {
        Ok(None) => return Ok(()),
        Ok(Some(opened)) => opened,
        Err(e) => {
            log::warn!(
                "{} is beside {} but cannot be folded into it: {e}; it is left there",
                spill.display(),
                path.display()
            );
            return Ok(());
        }
    };
    if file::held_by_recorder(&file) {
        return Ok(());
    }
    let cannot = |e: anyhow::Error| {
        one_line(format!(
            "{} holds records of a run that did not finish, which could not be folded into {}: {e:#}; make the file writable and open it again (the records stay in {})",
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
    let read = file::read_chunks(file.try_clone().map_err(|e| cannot(e.into()))?, |chunk| {
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
            Chunk::Records {
                pid,
                thread,
                clock,
                latest_end_ns,
                segments,
                records: chunk,
            } => {
                let ticks = clock == wire::CLOCK_TSC;
                if ticks && (segments == 0 || segments > conv.clock.segment_count()) {
                    anyhow::bail!("records use clock segments it does not hold");
                }
                conv.begin_drain(latest_end_ns, segments);
                conv.convert_records(pid, clock, thread, chunk);
                records += chunk.len() as u64;
                if conv.held() >= HOLD_RECORDS {
                    write_out(&mut conv, &mut writer).inspect_err(|_| write_failed = true)?;
                }
            }
        }
        Ok(())
    });
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
    let finished = write_out(&mut conv, &mut writer)
        .and_then(|()| writer.set_conversion_facts(conv.invalid_records, conv.first_span_ns));
    if let Err(e) = finished {
        writer.roll_back();
        return Err(cannot(e));
    }
    writer.finish().map_err(cannot)?;
    let _ = std::fs::remove_file(&spill);
    drop(file);
    let mut line = format!("folded {records} records left by a run that did not finish");
    if cut > 0 {
        line += &format!(" ({cut} more were cut short by the end of the spill)");
    }
    if let Some(e) = damaged {
        line += &format!(" (the rest of its spill is damaged: {e:#})");
    }
    log::info!("{line}");
    Ok(())
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
