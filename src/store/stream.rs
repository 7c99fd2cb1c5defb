//! A run whose spans, counter values and events stay in the file until asked for, then
//! arrive in chunks, in row order: what `report`, `hist` and the final report of `run`
//! analyse without holding every span (`analyze::compact`).
//!
//! SQLite decodes rows on one core per connection (~100-200 ns a row), so a big table of
//! rows (counters, events) is read in chunks of ids spread over a few connections on their
//! own threads, and handed on in order: a few chunks are in memory at a time, whatever the
//! run's size. Spans are blocks of a few hundred, decoded at a few ns a span: one
//! connection reads them, in chunks of about `CHUNK_IDS` spans; but a report reads them five
//! or six times, so its reads ([`DecodedOnThreads`]) take the blocks the same way as the
//! rows, and the caller's thread only analyses (issue 29: decoding took a fifth of the
//! report's time on that thread).

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use rusqlite::Connection;

use super::codec::{u64_from_sql, Cells};
use super::file::{self, one_line, sqlite_failure};
use super::reader::{inconsistent, read_span_blocks, read_span_blocks_into, IdRange, RunReader};
use crate::model::{CounterValue, EventRecord, Run, Span, SpanSource};

/// Ids per chunk: one query each, ~256 KB of spans.
const CHUNK_IDS: i64 = 8192;
/// Below this many rows one connection reads them all: threads would cost more.
#[cfg(not(test))]
const MIN_ROWS_FOR_THREADS: usize = 500_000;
/// Small enough that the tests' runs go through the threaded reader too.
#[cfg(test)]
const MIN_ROWS_FOR_THREADS: usize = 10_000;
/// Connections reading one table at once: 10M spans read in 1.2 s with 4, 0.5-0.85 s
/// with 8 on a 16-core host (BENCHMARKS.md).
const MAX_READERS: usize = 8;
/// Connections decoding one read of the spans: a block decodes several times faster than
/// the analysis takes its spans, so a few keep the reading thread fed; more would only
/// hold more memory (each its page cache and its chunks in flight).
const MAX_SPAN_READERS: usize = 3;
// Each reader is a worker of `for_each_spans_beside`.
const _: () = assert!(MAX_SPAN_READERS <= crate::model::BESIDE_WORKERS);
/// Chunks a reader may have decoded ahead of the one being used.
const AHEAD: usize = 2;

/// A run of a file, its big tables not loaded.
pub struct StoredRun {
    /// The run without its spans, counter values and events (left empty).
    pub head: Run,
    path: PathBuf,
    run_id: i64,
    spans_at: IdRange,
    counters_at: IdRange,
    events_at: IdRange,
    row_limit: usize,
}

/// Opens run `run_id` of `path` (its only or latest run when `None`) for streaming.
pub fn open_run(path: &Path, run_id: Option<i64>) -> anyhow::Result<StoredRun> {
    let conn = super::reading::open_for_reading(path)?;
    let reader = RunReader::choose(&conn, path, run_id)?;
    let (head, [spans_at, counters_at, events_at]) = reader.head()?;
    Ok(StoredRun {
        head,
        path: path.to_owned(),
        run_id: reader.run_id,
        spans_at,
        counters_at,
        events_at,
        row_limit: reader.row_limit,
    })
}

impl StoredRun {
    /// The run's events, checked as `load_run` checks them.
    pub fn events(&self) -> anyhow::Result<Vec<EventRecord>> {
        let (names, threads) = (self.head.event_names.len(), self.head.threads.len());
        let mut events = Vec::with_capacity(self.events_at.capacity(self.row_limit));
        self.stream(
            "events",
            "event_id, key, thread_id, t_ns",
            &self.events_at,
            &|c| {
                Ok(EventRecord {
                    event: c.small(0)?,
                    key: u64_from_sql(c.int(1)?),
                    thread: c.small(2)?,
                    t_ns: c.int(3)?,
                })
            },
            &mut |chunk: &[EventRecord]| {
                if let Some(e) = (chunk.iter())
                    .find(|e| usize::from(e.event) >= names || e.thread as usize >= threads)
                {
                    return Err(inconsistent(
                        &self.path,
                        anyhow::anyhow!(
                            "an event names event {} and thread {}, but the run has {names} \
                             event names and {threads} threads",
                            e.event,
                            e.thread
                        ),
                    ));
                }
                events.extend_from_slice(chunk);
                Ok(())
            },
        )?;
        Ok(events)
    }

    /// The run's counter values, checked as `load_run` checks them: what an export that
    /// streams the spans carries beside them.
    pub fn counters(&self) -> anyhow::Result<Vec<CounterValue>> {
        let mut counters = Vec::with_capacity(self.counters_at.capacity(self.row_limit));
        self.for_each_counters(&mut |chunk| {
            counters.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(counters)
    }

    /// The rows of `table` with ids in `range` that belong to this run, decoded, to `sink`
    /// in id order.
    fn stream<T: Send>(
        &self,
        table: &'static str,
        columns: &str,
        range: &IdRange,
        decode: &(dyn Fn(&Cells) -> anyhow::Result<T> + Sync),
        sink: &mut dyn FnMut(&[T]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let (Some(first), Some(last)) = (range.first, range.last) else {
            return Ok(());
        };
        if last < first {
            return Ok(());
        }
        let sql =
            format!("SELECT {columns} FROM {table} WHERE id BETWEEN ?1 AND ?2 AND run_id = ?3");
        let readers = readers_for((first, last), range.capacity(self.row_limit));
        if readers < 2 {
            let conn = file::open_another_reader(&self.path)?;
            let mut chunk = Vec::with_capacity(CHUNK_IDS as usize);
            read_rows(
                &self.path,
                &conn,
                table,
                &sql,
                (first, last, self.run_id),
                decode,
                |r| {
                    chunk.push(r);
                    if chunk.len() == CHUNK_IDS as usize {
                        sink(&chunk)?;
                        chunk.clear();
                    }
                    Ok(())
                },
            )?;
            return if chunk.is_empty() {
                Ok(())
            } else {
                sink(&chunk)
            };
        }
        let fill = |_: usize, conn: &Connection, (lo, hi): (i64, i64), chunk: &mut Vec<T>| {
            read_rows(
                &self.path,
                conn,
                table,
                &sql,
                (lo, hi, self.run_id),
                decode,
                |r| {
                    chunk.push(r);
                    Ok(())
                },
            )
        };
        self.in_chunks(table, (first, last), readers, &fill, sink)
    }

    /// Ids `first..=last` read in chunks of [`CHUNK_IDS`] by `readers` connections on
    /// threads of their own (`fill` reads one chunk's), each chunk to `sink` in id order;
    /// a few chunks in memory at a time, whatever the run's size.
    fn in_chunks<T: Send>(
        &self,
        table: &'static str,
        (first, last): (i64, i64),
        readers: usize,
        fill: &FillChunk<'_, T>,
        sink: &mut dyn FnMut(&[T]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let ids = last as i128 - first as i128 + 1;
        let chunks = ((ids + CHUNK_IDS as i128 - 1) / CHUNK_IDS as i128) as usize;
        let bounds = |k: usize| {
            let lo = first + k as i64 * CHUNK_IDS;
            (lo, lo.saturating_add(CHUNK_IDS - 1).min(last))
        };
        let path = self.path.as_path();
        std::thread::scope(|scope| {
            let mut filled = Vec::with_capacity(readers);
            let mut returned = Vec::with_capacity(readers);
            let mut workers = Vec::with_capacity(readers);
            for w in 0..readers {
                let (full_tx, full_rx) = mpsc::sync_channel::<anyhow::Result<Vec<T>>>(AHEAD);
                let (back_tx, back_rx) = mpsc::channel::<Vec<T>>();
                workers.push(scope.spawn(move || {
                    let conn = match open_chunk_reader(path) {
                        Ok(conn) => conn,
                        Err(e) => return drop(full_tx.send(Err(e))),
                    };
                    for k in (w..chunks).step_by(readers) {
                        let mut chunk = back_rx
                            .try_recv()
                            .unwrap_or_else(|_| Vec::with_capacity(CHUNK_IDS as usize));
                        chunk.clear();
                        let read = fill(w, &conn, bounds(k), &mut chunk);
                        let failed = read.is_err();
                        if full_tx.send(read.map(|()| chunk)).is_err() || failed {
                            return;
                        }
                    }
                }));
                filled.push(full_rx);
                returned.push(back_tx);
            }
            let mut outcome = Ok(());
            for k in 0..chunks {
                let w = k % readers;
                let chunk = match filled[w].recv() {
                    Ok(Ok(chunk)) => chunk,
                    Ok(Err(e)) => {
                        outcome = Err(e);
                        break;
                    }
                    // A reader that stopped without a word panicked: said below.
                    Err(_) => break,
                };
                if let Err(e) = sink(&chunk) {
                    outcome = Err(e);
                    break;
                }
                let _ = returned[w].send(chunk);
            }
            // Readers still going stop at their next chunk.
            drop(filled);
            let mut panicked = false;
            for worker in workers {
                panicked |= worker.join().is_err();
            }
            if panicked && outcome.is_ok() {
                outcome = Err(one_line(format!(
                    "reading {table} of {} failed in a worker thread",
                    path.display()
                )));
            }
            outcome
        })
    }
}

/// Reads the chunk of ids `lo..=hi` into a vector with a connection of its own, on the
/// reader thread its first argument numbers.
type FillChunk<'a, T> =
    dyn Fn(usize, &Connection, (i64, i64), &mut Vec<T>) -> anyhow::Result<()> + Sync + 'a;

/// A connection of [`StoredRun::in_chunks`]: each of its pages is read once, in order, so
/// SQLite's page cache (2 MB by default, filled by then) keeps nothing worth its memory; a
/// small one keeps the b-tree's inner pages (issue 29: a report's peak stays as it was with
/// two reads at once, each on a few connections).
fn open_chunk_reader(path: &Path) -> anyhow::Result<Connection> {
    let conn = file::open_another_reader(path)?;
    conn.execute_batch(&format!("PRAGMA cache_size = -{CHUNK_READER_CACHE_KIB}"))
        .map_err(|e| sqlite_failure(path, "open", &e))?;
    Ok(conn)
}

/// KiB of page cache per connection of [`open_chunk_reader`].
const CHUNK_READER_CACHE_KIB: usize = 256;

/// Connections to read ids `first..=last` holding `rows` of the run with: 1 (the caller's
/// thread alone) for few rows, on one core, or where the ids are mostly other runs' (chunks
/// of ids only pay when they are mostly this run's rows).
fn readers_for((first, last): (i64, i64), rows: usize) -> usize {
    let ids = last as i128 - first as i128 + 1;
    let chunked = ids <= 2 * rows as i128 + CHUNK_IDS as i128;
    if rows < MIN_ROWS_FOR_THREADS || !chunked {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_READERS)
}

impl SpanSource for StoredRun {
    fn span_count_hint(&self) -> usize {
        self.spans_at.count_capacity(self.row_limit)
    }

    /// Checked as `load_run` checks them: every stage and thread named must exist.
    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.spans_read_by(1, &|_, _| Ok(()), sink)
    }

    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.counters_streamed(sink)
    }
}

/// A stored run whose span blocks each read decodes on a few threads of its own, so the
/// reading thread only takes the spans: for the report's analysis, which reads them five or
/// six times and spends a fifth of its time decoding on one connection (issue 29). Not for
/// readers that already read ahead or merge several reads at once (export, whatif): their
/// chunks in flight would multiply.
pub struct DecodedOnThreads<'a>(pub &'a StoredRun);

impl SpanSource for DecodedOnThreads<'_> {
    fn span_count_hint(&self) -> usize {
        self.0.span_count_hint()
    }

    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.0.spans_read_by(MAX_SPAN_READERS, &|_, _| Ok(()), sink)
    }

    fn for_each_spans_beside(
        &self,
        beside: &(dyn Fn(usize, &[Span]) -> anyhow::Result<()> + Sync),
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.0.spans_read_by(MAX_SPAN_READERS, beside, sink)
    }

    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.0.counters_streamed(sink)
    }
}

impl StoredRun {
    /// The spans in chunks to `sink`, read by up to `most_readers` connections on threads
    /// of their own (1: this thread's), checked as `load_run` checks them; each chunk to
    /// `beside` first, on the thread that read it.
    fn spans_read_by(
        &self,
        most_readers: usize,
        beside: &(dyn Fn(usize, &[Span]) -> anyhow::Result<()> + Sync),
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let (stages, threads) = (self.head.stages.len(), self.head.threads.len());
        let (Some(first), Some(last)) = (self.spans_at.first, self.spans_at.last) else {
            return Ok(());
        };
        let check = |chunk: &[Span]| match (chunk.iter())
            .find(|s| usize::from(s.stage) >= stages || s.thread as usize >= threads)
        {
            Some(s) => Err(inconsistent(
                &self.path,
                anyhow::anyhow!(
                    "a span of frame {} names stage {} and thread {}, but the run has \
                     {stages} stages and {threads} threads",
                    s.frame,
                    s.stage,
                    s.thread
                ),
            )),
            None => Ok(()),
        };
        let readers =
            readers_for((first, last), self.spans_at.capacity(self.row_limit)).min(most_readers);
        if readers >= 2 {
            // Blocks decoded and checked on threads of their own: the caller's thread only
            // analyses (the check was 8% of the analysing thread, issue 29). A chunk that
            // fails it is an error in its turn, after the chunks before it, as below.
            let fill = |w: usize, conn: &Connection, range: (i64, i64), chunk: &mut Vec<Span>| {
                read_span_blocks_into(&self.path, conn, self.run_id, range, chunk)?;
                check(chunk)?;
                beside(w, chunk)
            };
            return self.in_chunks("span_blocks", (first, last), readers, &fill, sink);
        }
        let mut checked = |chunk: &[Span]| {
            check(chunk)?;
            beside(0, chunk)?;
            sink(chunk)
        };
        let conn = file::open_another_reader(&self.path)?;
        let mut chunk = Vec::with_capacity(CHUNK_IDS as usize + super::blocks::MAX_BLOCK_SPANS);
        read_span_blocks(&self.path, &conn, self.run_id, (first, last), |_, block| {
            chunk.extend_from_slice(block);
            if chunk.len() >= CHUNK_IDS as usize {
                checked(&chunk)?;
                chunk.clear();
            }
            Ok(())
        })?;
        if chunk.is_empty() {
            Ok(())
        } else {
            checked(&chunk)
        }
    }

    fn counters_streamed(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let names = self.head.counter_names.len();
        self.stream(
            "counters",
            "frame, counter_id, value",
            &self.counters_at,
            &|c| {
                Ok(CounterValue {
                    frame: u64_from_sql(c.int(0)?),
                    counter: c.small(1)?,
                    value: c.int(2)?,
                })
            },
            &mut |chunk: &[CounterValue]| {
                if let Some(c) = chunk.iter().find(|c| usize::from(c.counter) >= names) {
                    return Err(inconsistent(
                        &self.path,
                        anyhow::anyhow!(
                            "a counter value names counter {}, but the run has {names}",
                            c.counter
                        ),
                    ));
                }
                sink(chunk)
            },
        )
    }
}

/// Passes each row of this run with an id in `lo..=hi` to `sink`, in id order.
fn read_rows<T>(
    path: &Path,
    conn: &Connection,
    table: &'static str,
    sql: &str,
    (lo, hi, run_id): (i64, i64, i64),
    decode: &(dyn Fn(&Cells) -> anyhow::Result<T> + Sync),
    mut sink: impl FnMut(T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let fail = |e: rusqlite::Error| sqlite_failure(path, "reading the run's records", &e);
    let mut stmt = conn.prepare_cached(sql).map_err(fail)?;
    let mut rows = stmt.query((lo, hi, run_id)).map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let record = decode(&Cells { row, table }).map_err(|e| inconsistent(path, e))?;
        sink(record)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RunMeta, ThreadInfo};

    #[test]
    fn chunks_read_by_several_connections_arrive_whole_and_in_order() {
        // More rows than MIN_ROWS_FOR_THREADS under test: the threaded reader.
        let spans: Vec<Span> = (0..40_000u64)
            .map(|i| Span {
                frame: i / 3,
                stage: (i % 3) as u16,
                thread: (i % 2) as u32,
                start_ns: i as i64 * 7,
                dur_ns: (i % 11) as i64,
            })
            .collect();
        let run = Run {
            meta: RunMeta::default(),
            stages: vec!["a".into(), "b".into(), "c".into()],
            threads: vec![ThreadInfo::default(), ThreadInfo::default()],
            spans,
            ..Run::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.framelab");
        crate::store::write_run(&path, &run).unwrap();
        let stored = open_run(&path, None).unwrap();
        // One connection on this thread, and the blocks decoded on threads of their own.
        let sources: [&dyn SpanSource; 2] = [&stored, &DecodedOnThreads(&stored)];
        for source in sources {
            let mut streamed = Vec::new();
            let mut chunks = 0;
            source
                .for_each_spans(&mut |chunk| {
                    chunks += 1;
                    streamed.extend_from_slice(chunk);
                    Ok(())
                })
                .unwrap();
            assert_eq!(streamed, run.spans);
            assert!(chunks >= 4, "{chunks} chunks");
            // A sink that fails stops the readers and its error comes back.
            let mut seen = 0;
            let err = source
                .for_each_spans(&mut |_| {
                    seen += 1;
                    anyhow::ensure!(seen < 2, "enough");
                    Ok(())
                })
                .unwrap_err();
            assert_eq!(err.to_string(), "enough");
        }
    }
}
