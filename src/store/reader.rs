//! Loads runs back, refusing files that are not framelab files, corrupt, or too new.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::codec::{self, u64_from_sql, Cells, META_COLUMNS};
use super::file::{self, one_line, sqlite_failure};
use crate::model::{
    CounterValue, CpuSource, EventRecord, Histogram, ImportInfo, ProcessStats, Run, RunMeta,
    Sample, SampleSeries, SourceStatus, Span, Telemetry, ThreadInfo,
};

/// Loads run `run_id` of `path`, or its only/latest run when `None`.
pub fn load_run(path: &Path, run_id: Option<i64>) -> anyhow::Result<Run> {
    let conn = super::reading::open_for_reading(path)?;
    RunReader::choose(&conn, path, run_id)?.load()
}

/// The runs a file holds, oldest first.
pub fn list_runs(path: &Path) -> anyhow::Result<Vec<RunMeta>> {
    let conn = super::reading::open_for_reading(path)?;
    let sql = format!(
        "SELECT run_id, {} FROM runs ORDER BY run_id",
        META_COLUMNS.join(", ")
    );
    let fail = |e: rusqlite::Error| sqlite_failure(path, "reading the runs", &e);
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let mut rows = stmt.query([]).map_err(fail)?;
    let mut runs = Vec::new();
    while let Some(row) = rows.next().map_err(fail)? {
        runs.push(codec::meta_from_row(row).map_err(|e| inconsistent(path, e))?);
    }
    drop(rows);
    for meta in &mut runs {
        meta.session = session_facts(&conn, path, meta.id)?;
        meta.tags = super::tags::load_tags(&conn, meta.id)
            .map_err(|e| sqlite_failure(path, "reading the run's tags", &e))?;
    }
    Ok(runs)
}

/// A run's `SessionFacts` (the `framelab` table's `session_facts.<run_id>`), empty when absent.
fn session_facts(
    conn: &Connection,
    path: &Path,
    run_id: i64,
) -> anyhow::Result<crate::model::SessionFacts> {
    let key = codec::session_facts_key(run_id);
    let json: Option<String> = conn
        .query_row("SELECT value FROM framelab WHERE key = ?1", [&key], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| sqlite_failure(path, "reading the run", &e))?;
    match json {
        None => Ok(Default::default()),
        Some(json) => serde_json::from_str(&json).map_err(|e| {
            inconsistent(
                path,
                anyhow::anyhow!("framelab.{key} is not the JSON of a run's session facts ({e})"),
            )
        }),
    }
}

fn run_ids(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT run_id FROM runs ORDER BY run_id")?;
    let ids = stmt.query_map([], |r| r.get(0))?.collect();
    ids
}

/// The run to load: the one asked for if the file has it, else the latest.
fn choose_run(path: &Path, wanted: Option<i64>, ids: &[i64]) -> anyhow::Result<i64> {
    let p = path.display();
    let Some(&latest) = ids.last() else {
        return Err(one_line(format!(
            "{p} holds no runs; record one with `framelab run -o {p} -- COMMAND`"
        )));
    };
    match wanted {
        None => Ok(latest),
        Some(id) if ids.binary_search(&id).is_ok() => Ok(id),
        Some(id) => Err(one_line(format!(
            "{p} has no run {id}; it holds run{} {}: pass one of those",
            if ids.len() == 1 { "" } else { "s" },
            describe_ids(ids)
        ))),
    }
}

/// "1, 2, 3" or, for a long history, the first and last few with a count.
fn describe_ids(ids: &[i64]) -> String {
    let list = |ids: &[i64]| {
        ids.iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if ids.len() <= 12 {
        list(ids)
    } else {
        format!(
            "{}, …, {} ({} in all)",
            list(&ids[..5]),
            list(&ids[ids.len() - 5..]),
            ids.len()
        )
    }
}

/// A row count no file of this size can exceed (a row takes more than 8 bytes on disk):
/// caps preallocation when a damaged `runs` row claims absurd counts.
fn row_limit(path: &Path) -> usize {
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let bytes = size(path) + size(Path::new(&wal));
    usize::try_from(bytes / 8).unwrap_or(usize::MAX)
}

pub(super) fn inconsistent(path: &Path, e: anyhow::Error) -> anyhow::Error {
    one_line(format!(
        "{} is damaged or was edited by hand: {e}; restore an intact copy or record the run again",
        path.display()
    ))
}

/// Where a run's rows of one big table are, as recorded by the writer.
pub(super) struct IdRange {
    pub count: i64,
    pub first: Option<i64>,
    pub last: Option<i64>,
}

impl IdRange {
    /// Whether every id of the range is one of the run's rows.
    fn is_dense(&self) -> bool {
        match (self.first, self.last) {
            (Some(first), Some(last)) => {
                last.checked_sub(first).and_then(|d| d.checked_add(1)) == Some(self.count)
            }
            _ => false,
        }
    }

    /// Spans to preallocate: the recorded count, bounded by what the file allows (a span
    /// takes more than 8 bytes in a block). Ids in a range of blocks are dense, but a
    /// hand-edited count is not trusted.
    pub fn count_capacity(&self, row_limit: usize) -> usize {
        usize::try_from(self.count).unwrap_or(0).min(row_limit)
    }

    /// Rows to preallocate: the recorded count, bounded by what the range and file allow.
    pub fn capacity(&self, row_limit: usize) -> usize {
        let span = match (self.first, self.last) {
            (Some(first), Some(last)) if last >= first => last
                .checked_sub(first)
                .map_or(i64::MAX, |d| d.saturating_add(1)),
            _ => 0,
        };
        let count = usize::try_from(self.count.min(span)).unwrap_or(0);
        count.min(row_limit)
    }
}

/// Passes each block of spans of `run_id` whose first id is in `range`, in id order, with
/// that first id, to `sink`; a sink's error comes back as it is.
pub(super) fn read_span_blocks(
    path: &Path,
    conn: &Connection,
    run_id: i64,
    range: (i64, i64),
    sink: impl FnMut(i64, &[Span]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use super::block_rows::{read_blocks, ReadError};
    read_blocks(conn, run_id, range, sink).map_err(|e| match e {
        ReadError::Sql(e) => sqlite_failure(path, "reading the run's spans", &e),
        ReadError::Damaged(e) => inconsistent(path, e),
        ReadError::Sink(e) => e,
    })
}

/// [`read_span_blocks`]' spans appended to `out`, each block decoded straight into it.
pub(super) fn read_span_blocks_into(
    path: &Path,
    conn: &Connection,
    run_id: i64,
    range: (i64, i64),
    out: &mut Vec<Span>,
) -> anyhow::Result<()> {
    use super::block_rows::{read_blocks_into, ReadError};
    read_blocks_into(conn, run_id, range, out).map_err(|e| match e {
        ReadError::Sql(e) => sqlite_failure(path, "reading the run's spans", &e),
        ReadError::Damaged(e) => inconsistent(path, e),
        ReadError::Sink(e) => e,
    })
}

/// Rows per parallel part: below this a thread and a connection cost more than they save.
const MIN_ROWS_PER_PART: usize = 500_000;
/// Connections reading one table at once.
const MAX_PARTS: usize = 4;

/// `first..=last` cut into contiguous parts, one per core, for `rows` expected rows.
fn split_range(first: i64, last: i64, rows: usize) -> Vec<(i64, i64)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let parts = (rows / MIN_ROWS_PER_PART).clamp(1, cores.min(MAX_PARTS));
    let width = (last as i128 - first as i128 + 1) as u128;
    (0..parts)
        .map(|i| {
            let lo = first as i128 + (width * i as u128 / parts as u128) as i128;
            let hi = first as i128 + (width * (i as u128 + 1) / parts as u128) as i128 - 1;
            (lo as i64, hi as i64)
        })
        .collect()
}

pub(super) struct RunReader<'a> {
    conn: &'a Connection,
    path: &'a Path,
    pub run_id: i64,
    pub row_limit: usize,
}

impl<'a> RunReader<'a> {
    /// A reader of run `run_id` of the file, or of its latest run when `None`.
    pub fn choose(
        conn: &'a Connection,
        path: &'a Path,
        run_id: Option<i64>,
    ) -> anyhow::Result<RunReader<'a>> {
        let ids = run_ids(conn).map_err(|e| sqlite_failure(path, "reading the runs", &e))?;
        Ok(RunReader {
            conn,
            path,
            run_id: choose_run(path, run_id, &ids)?,
            row_limit: row_limit(path),
        })
    }
}

impl RunReader<'_> {
    /// The run without its spans, counter values and events, and where those are: the
    /// caller streams them (`stream::StoredRun`).
    pub fn head(&self) -> anyhow::Result<(Run, [IdRange; 3])> {
        let (meta, spans_at, counters_at, events_at) = self.meta()?;
        let run = Run {
            meta,
            stages: self.names("stages", "stage_id")?,
            counter_names: self.names("counter_names", "counter_id")?,
            event_names: self.names("event_names", "event_id")?,
            threads: self.threads()?,
            processes: self.processes()?,
            telemetry: self.telemetry()?,
            import: self.import_info()?,
            histograms: self.histograms()?,
            ..Run::default()
        };
        let fail = self.sql_error("reading metrics and output");
        let run = Run {
            metrics: super::outputs::load_metrics(self.conn, self.run_id).map_err(&fail)?,
            outputs: super::outputs::load_outputs(self.conn, self.run_id).map_err(&fail)?,
            ..run
        };
        let run = Run {
            sched: self.sched(&run.telemetry)?,
            ..run
        };
        check_references(&run).map_err(|e| inconsistent(self.path, e))?;
        Ok((run, [spans_at, counters_at, events_at]))
    }

    fn load(&self) -> anyhow::Result<Run> {
        let (meta, spans_at, counters_at, events_at) = self.meta()?;
        let stages = self.names("stages", "stage_id")?;
        let counter_names = self.names("counter_names", "counter_id")?;
        let event_names = self.names("event_names", "event_id")?;
        let threads = self.threads()?;
        let spans = self.spans(&spans_at)?;
        let counters = self.counters(&counters_at)?;
        let events = self.events(&events_at)?;
        let processes = self.processes()?;
        let telemetry = self.telemetry()?;
        let import = self.import_info()?;
        let histograms = self.histograms()?;
        let fail = self.sql_error("reading metrics and output");
        let metrics = super::outputs::load_metrics(self.conn, self.run_id).map_err(&fail)?;
        let outputs = super::outputs::load_outputs(self.conn, self.run_id).map_err(&fail)?;
        let sched = self.sched(&telemetry)?;
        let run = Run {
            meta,
            stages,
            counter_names,
            event_names,
            threads,
            spans,
            counters,
            events,
            processes,
            telemetry,
            import,
            histograms,
            metrics,
            outputs,
            sched,
        };
        check_references(&run).map_err(|e| inconsistent(self.path, e))?;
        Ok(run)
    }

    fn sql_error(&self, doing: &str) -> impl Fn(rusqlite::Error) -> anyhow::Error + '_ {
        let doing = doing.to_string();
        move |e| sqlite_failure(self.path, &doing, &e)
    }

    fn meta(&self) -> anyhow::Result<(RunMeta, IdRange, IdRange, IdRange)> {
        let sql = format!(
            "SELECT run_id, {}, span_count, span_id_first, span_id_last, \
             counter_count, counter_id_first, counter_id_last, \
             event_count, event_id_first, event_id_last FROM runs WHERE run_id = ?1",
            META_COLUMNS.join(", ")
        );
        let fail = self.sql_error("reading the run");
        let mut stmt = self.conn.prepare(&sql).map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let row = rows
            .next()
            .map_err(&fail)?
            .ok_or_else(|| one_line(format!("run {} vanished while loading", self.run_id)))?;
        let mut meta = codec::meta_from_row(row).map_err(|e| inconsistent(self.path, e))?;
        meta.session = session_facts(self.conn, self.path, self.run_id)?;
        meta.tags = super::tags::load_tags(self.conn, self.run_id)
            .map_err(|e| sqlite_failure(self.path, "reading the run's tags", &e))?;
        let c = Cells { row, table: "runs" };
        let at = META_COLUMNS.len() + 1;
        let range = |i: usize| -> anyhow::Result<IdRange> {
            Ok(IdRange {
                count: c.int(i)?,
                first: c.opt_int(i + 1)?,
                last: c.opt_int(i + 2)?,
            })
        };
        let ranges = (|| Ok::<_, anyhow::Error>((range(at)?, range(at + 3)?, range(at + 6)?)))()
            .map_err(|e| inconsistent(self.path, e))?;
        Ok((meta, ranges.0, ranges.1, ranges.2))
    }

    /// A name table (`stages`, ...) as a vector indexed by id; ids must be 0..n.
    fn names(&self, table: &'static str, id_column: &str) -> anyhow::Result<Vec<String>> {
        let fail = self.sql_error("reading names");
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {id_column}, name FROM {table} WHERE run_id = ?1 ORDER BY {id_column}"
            ))
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut names = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells { row, table };
            let read = || -> anyhow::Result<String> {
                let id = c.int(0)?;
                if id != names.len() as i64 {
                    anyhow::bail!("{table}.{id_column} {id} is out of sequence");
                }
                c.text(1)
            };
            let name = read().map_err(|e| inconsistent(self.path, e))?;
            names.push(name);
        }
        Ok(names)
    }

    fn threads(&self) -> anyhow::Result<Vec<ThreadInfo>> {
        let fail = self.sql_error("reading threads");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT thread_id, pid, tid, name, dropped FROM threads \
                 WHERE run_id = ?1 ORDER BY thread_id",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut threads = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "threads",
            };
            let read = || -> anyhow::Result<ThreadInfo> {
                if c.int(0)? != threads.len() as i64 {
                    anyhow::bail!("threads.thread_id {} is out of sequence", c.int(0)?);
                }
                Ok(ThreadInfo {
                    pid: c.small(1)?,
                    tid: c.small(2)?,
                    name: c.text(3)?,
                    dropped: u64_from_sql(c.int(4)?),
                })
            };
            let thread = read().map_err(|e| inconsistent(self.path, e))?;
            threads.push(thread);
        }
        Ok(threads)
    }

    /// Reads one big table's rows of this run, seeking by the recorded id range.
    fn bulk<T: Copy + Default + Send>(
        &self,
        table: &'static str,
        columns: &str,
        range: &IdRange,
        decode: impl Fn(&Cells) -> anyhow::Result<T> + Sync,
    ) -> anyhow::Result<Vec<T>> {
        let (Some(first), Some(last)) = (range.first, range.last) else {
            return Ok(Vec::new());
        };
        let capacity = range.capacity(self.row_limit);
        let select = format!("SELECT {columns} FROM {table} WHERE id BETWEEN ?1 AND ?2");
        if range.is_dense() && capacity as i64 == range.count {
            if let Some(rows) = self.dense(table, &select, (first, last), capacity, &decode)? {
                return Ok(rows);
            }
        }
        // Another run's rows interleave (two recordings into one file at once), or rows
        // were deleted by hand: test run_id on every row.
        let sql = format!("{select} AND run_id = {}", self.run_id);
        let mut out = Vec::with_capacity(capacity);
        read_part(
            self.path,
            self.conn,
            table,
            &sql,
            (first, last),
            &decode,
            |r| {
                out.push(r);
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Reads a range that holds exactly this run's rows (runs recorded one at a time),
    /// straight into place. SQLite decodes rows on one core per connection (~100-200 ns
    /// a row), so a large range is cut into parts read on their own connections at once.
    /// `None` if a part holds fewer rows than its ids promise.
    fn dense<T: Copy + Default + Send>(
        &self,
        table: &'static str,
        sql: &str,
        (first, last): (i64, i64),
        count: usize,
        decode: &(impl Fn(&Cells) -> anyhow::Result<T> + Sync),
    ) -> anyhow::Result<Option<Vec<T>>> {
        let mut all = Vec::with_capacity(count);
        advise_huge_pages(&all);
        all.resize(count, T::default());
        let parts = split_range(first, last, count);
        let mut slices = Vec::with_capacity(parts.len());
        let mut rest = all.as_mut_slice();
        for &(lo, hi) in &parts {
            let (slice, tail) = rest.split_at_mut(((hi - lo + 1) as usize).min(rest.len()));
            slices.push(slice);
            rest = tail;
        }
        let path = self.path;
        let fill = |conn: &Connection, part: (i64, i64), slice: &mut [T]| {
            let mut filled = 0;
            read_part(path, conn, table, sql, part, decode, |record| {
                let slot = slice.get_mut(filled).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{table} holds more rows between ids {} and {} than ids",
                        part.0,
                        part.1
                    )
                })?;
                *slot = record;
                filled += 1;
                Ok(())
            })?;
            Ok::<bool, anyhow::Error>(filled == slice.len())
        };
        let complete = std::thread::scope(|scope| {
            let mut slices = slices.into_iter();
            let first_slice = slices.next();
            let workers: Vec<_> = parts[1..]
                .iter()
                .zip(slices)
                .map(|(&part, slice)| {
                    scope.spawn(move || fill(&file::open_another_reader(path)?, part, slice))
                })
                .collect();
            let mut complete = match first_slice {
                Some(slice) => fill(self.conn, parts[0], slice)?,
                None => true,
            };
            for worker in workers {
                let done = worker.join().unwrap_or_else(|_| {
                    Err(one_line(format!(
                        "reading {table} failed in a worker thread"
                    )))
                })?;
                complete &= done;
            }
            Ok::<bool, anyhow::Error>(complete)
        })?;
        Ok(complete.then_some(all))
    }

    /// The run's spans, decoded from its blocks (a few ns a span: one thread suffices).
    fn spans(&self, range: &IdRange) -> anyhow::Result<Vec<Span>> {
        let (Some(first), Some(last)) = (range.first, range.last) else {
            return Ok(Vec::new());
        };
        let mut spans = Vec::with_capacity(range.count_capacity(self.row_limit));
        advise_huge_pages(&spans);
        read_span_blocks(
            self.path,
            self.conn,
            self.run_id,
            (first, last),
            |_, block| {
                spans.extend_from_slice(block);
                Ok(())
            },
        )?;
        Ok(spans)
    }

    fn counters(&self, range: &IdRange) -> anyhow::Result<Vec<CounterValue>> {
        self.bulk("counters", "frame, counter_id, value", range, |c| {
            Ok(CounterValue {
                frame: u64_from_sql(c.int(0)?),
                counter: c.small(1)?,
                value: c.int(2)?,
            })
        })
    }

    fn events(&self, range: &IdRange) -> anyhow::Result<Vec<EventRecord>> {
        self.bulk("events", "event_id, key, thread_id, t_ns", range, |c| {
            Ok(EventRecord {
                event: c.small(0)?,
                key: u64_from_sql(c.int(1)?),
                thread: c.small(2)?,
                t_ns: c.int(3)?,
            })
        })
    }

    fn processes(&self) -> anyhow::Result<Vec<ProcessStats>> {
        let fail = self.sql_error("reading processes");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT pid, ppid, name, role, user_ns, sys_ns, wall_ns, peak_rss_bytes, \
                 cpu_resolution_ns, cpu_source, note, service, watch_role \
                 FROM processes WHERE run_id = ?1 ORDER BY process_index",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut processes = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "processes",
            };
            let read = || -> anyhow::Result<ProcessStats> {
                let role_text = c.text(3)?;
                Ok(ProcessStats {
                    pid: c.small(0)?,
                    ppid: c.small(1)?,
                    name: c.text(2)?,
                    role: codec::role_from_name(&role_text).ok_or_else(|| {
                        anyhow::anyhow!("processes.role {role_text:?} is unknown")
                    })?,
                    user_ns: c.int(4)?,
                    sys_ns: c.int(5)?,
                    wall_ns: c.int(6)?,
                    peak_rss_bytes: u64_from_sql(c.int(7)?),
                    cpu_resolution_ns: c.int(8)?,
                    cpu_source: {
                        let text = c.text(9)?;
                        CpuSource::from_name(&text).ok_or_else(|| {
                            anyhow::anyhow!("processes.cpu_source {text:?} is unknown")
                        })?
                    },
                    note: c.text(10)?,
                    service: c.text(11)?,
                    watch_role: c.text(12)?,
                })
            };
            processes.push(read().map_err(|e| inconsistent(self.path, e))?);
        }
        Ok(processes)
    }
}

impl RunReader<'_> {
    /// Where an imported run came from (schema 2); `None` for recorded runs.
    fn import_info(&self) -> anyhow::Result<Option<ImportInfo>> {
        let fail = self.sql_error("reading the import record");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT format, files_json, skipped, first_skipped, notes_json \
                 FROM imports WHERE run_id = ?1",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let Some(row) = rows.next().map_err(&fail)? else {
            return Ok(None);
        };
        let c = Cells {
            row,
            table: "imports",
        };
        let read = || -> anyhow::Result<ImportInfo> {
            Ok(ImportInfo {
                format: c.text(0)?,
                files: serde_json::from_str(&c.text(1)?)?,
                skipped: u64_from_sql(c.int(2)?),
                first_skipped: row.get(3)?,
                notes: serde_json::from_str(&c.text(4)?)?,
            })
        };
        Ok(Some(read().map_err(|e| inconsistent(self.path, e))?))
    }

    /// Histograms imported as such (schema 2), in the order they were imported.
    fn histograms(&self) -> anyhow::Result<Vec<Histogram>> {
        let fail = self.sql_error("reading histograms");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name, unit, buckets_json FROM histograms \
                 WHERE run_id = ?1 ORDER BY hist_id",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut histograms = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "histograms",
            };
            let read = || -> anyhow::Result<Histogram> {
                Ok(Histogram {
                    name: c.text(0)?,
                    unit: c.text(1)?,
                    buckets: serde_json::from_str(&c.text(2)?)?,
                })
            };
            histograms.push(read().map_err(|e| inconsistent(self.path, e))?);
        }
        Ok(histograms)
    }

    /// The scheduler's view, with the schedstat fallback's slices rebuilt from `telemetry`.
    fn sched(&self, telemetry: &Telemetry) -> anyhow::Result<Option<crate::sched::SchedTimeline>> {
        let stored = super::sched::read_sched(self.conn, self.run_id)
            .map_err(self.sql_error("reading the scheduler timeline"))?;
        Ok(stored.map(|t| crate::sched::complete(t, telemetry)))
    }

    /// The samplers' sources, series and readings. Files recorded before telemetry
    /// existed have no such tables: their runs simply have none.
    fn telemetry(&self) -> anyhow::Result<Telemetry> {
        let fail = self.sql_error("reading telemetry");
        let has_tables: bool = self
            .conn
            .query_row(
                "SELECT count(*) = 3 FROM sqlite_schema WHERE type = 'table' \
                 AND name IN ('sample_sources', 'sample_series', 'samples')",
                [],
                |r| r.get(0),
            )
            .map_err(&fail)?;
        if !has_tables {
            return Ok(Telemetry::default());
        }
        Ok(Telemetry {
            sources: self.sample_sources()?,
            series: self.sample_series()?,
            samples: self.samples()?,
        })
    }

    fn sample_sources(&self) -> anyhow::Result<Vec<SourceStatus>> {
        let fail = self.sql_error("reading telemetry sources");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT source, state, detail, every_ns, reads, skipped, cpu_ns, wall_ns \
                 FROM sample_sources WHERE run_id = ?1",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut sources = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "sample_sources",
            };
            let read = || -> anyhow::Result<SourceStatus> {
                let state_text = c.text(1)?;
                Ok(SourceStatus {
                    source: c.text(0)?,
                    state: codec::source_state_from_name(&state_text).ok_or_else(|| {
                        anyhow::anyhow!("sample_sources.state {state_text:?} is unknown")
                    })?,
                    detail: c.text(2)?,
                    every_ns: c.int(3)?,
                    reads: u64_from_sql(c.int(4)?),
                    skipped: u64_from_sql(c.int(5)?),
                    cpu_ns: c.int(6)?,
                    wall_ns: c.int(7)?,
                })
            };
            sources.push(read().map_err(|e| inconsistent(self.path, e))?);
        }
        // The order sources are read and reported in, whatever order SQLite keeps.
        sources.sort_by_key(|s| {
            crate::sample::SourceKind::parse(&s.source).map_or(usize::MAX, |k| k as usize)
        });
        Ok(sources)
    }

    fn sample_series(&self) -> anyhow::Result<Vec<SampleSeries>> {
        let fail = self.sql_error("reading telemetry series");
        let mut stmt = self
            .conn
            .prepare(
                "SELECT series_id, source, metric, entity, label, unit, kind \
                 FROM sample_series WHERE run_id = ?1 ORDER BY series_id",
            )
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut series = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "sample_series",
            };
            let read = || -> anyhow::Result<SampleSeries> {
                if c.int(0)? != series.len() as i64 {
                    anyhow::bail!("sample_series.series_id {} is out of sequence", c.int(0)?);
                }
                let kind_text = c.text(6)?;
                Ok(SampleSeries {
                    source: c.text(1)?,
                    metric: c.text(2)?,
                    entity: c.text(3)?,
                    label: c.text(4)?,
                    unit: c.text(5)?,
                    kind: codec::series_kind_from_name(&kind_text).ok_or_else(|| {
                        anyhow::anyhow!("sample_series.kind {kind_text:?} is unknown")
                    })?,
                })
            };
            let one = read().map_err(|e| inconsistent(self.path, e))?;
            series.push(one);
        }
        Ok(series)
    }

    /// Readings by series, then time (the table's key order).
    fn samples(&self) -> anyhow::Result<Vec<Sample>> {
        let fail = self.sql_error("reading telemetry samples");
        let mut stmt = self
            .conn
            .prepare("SELECT series_id, t_ns, value FROM samples WHERE run_id = ?1")
            .map_err(&fail)?;
        let mut rows = stmt.query([self.run_id]).map_err(&fail)?;
        let mut samples = Vec::new();
        while let Some(row) = rows.next().map_err(&fail)? {
            let c = Cells {
                row,
                table: "samples",
            };
            let read = || -> anyhow::Result<Sample> {
                Ok(Sample {
                    series: c.small(0)?,
                    t_ns: c.int(1)?,
                    value: c.int(2)?,
                })
            };
            samples.push(read().map_err(|e| inconsistent(self.path, e))?);
        }
        Ok(samples)
    }
}

/// Asks the kernel to back a large, not yet touched buffer with huge pages: filling
/// 320 MB for 10M spans otherwise takes 80k page faults, ~0.5 s of system time in a VM.
/// Advisory only; failure changes nothing.
fn advise_huge_pages<T>(buffer: &Vec<T>) {
    const PAGE: usize = 4096;
    let bytes = buffer.capacity() * std::mem::size_of::<T>();
    if bytes < (4 << 20) {
        return;
    }
    let start = buffer.as_ptr() as usize;
    let aligned = start.next_multiple_of(PAGE);
    let len = (start + bytes - aligned) / PAGE * PAGE;
    // SAFETY: the range lies inside `buffer`'s own allocation; MADV_HUGEPAGE changes how
    // pages are backed, never their contents.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

/// Passes each row with an id in `part` (inclusive), in id order, to `sink`.
fn read_part<T>(
    path: &Path,
    conn: &Connection,
    table: &'static str,
    sql: &str,
    (first, last): (i64, i64),
    decode: &impl Fn(&Cells) -> anyhow::Result<T>,
    mut sink: impl FnMut(T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let fail = |e: rusqlite::Error| sqlite_failure(path, "reading the run's records", &e);
    let mut stmt = conn.prepare(sql).map_err(fail)?;
    let mut rows = stmt.query((first, last)).map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let record = decode(&Cells { row, table }).map_err(|e| inconsistent(path, e))?;
        sink(record).map_err(|e| inconsistent(path, e))?;
    }
    Ok(())
}

/// Every id a record carries must name an entry of the run (analysis indexes by them).
fn check_references(run: &Run) -> anyhow::Result<()> {
    let (stages, threads) = (run.stages.len(), run.threads.len());
    if let Some(s) = run
        .spans
        .iter()
        .find(|s| usize::from(s.stage) >= stages || s.thread as usize >= threads)
    {
        anyhow::bail!(
            "a span of frame {} names stage {} and thread {}, but the run has {stages} stages \
             and {threads} threads",
            s.frame,
            s.stage,
            s.thread
        );
    }
    if let Some(c) = run
        .counters
        .iter()
        .find(|c| usize::from(c.counter) >= run.counter_names.len())
    {
        anyhow::bail!(
            "a counter value names counter {}, but the run has {}",
            c.counter,
            run.counter_names.len()
        );
    }
    let series = run.telemetry.series.len();
    if let Some(s) = run
        .telemetry
        .samples
        .iter()
        .find(|s| s.series as usize >= series)
    {
        anyhow::bail!(
            "a sample names series {}, but the run has {series} sample series",
            s.series
        );
    }
    if let Some(e) = run
        .events
        .iter()
        .find(|e| usize::from(e.event) >= run.event_names.len() || e.thread as usize >= threads)
    {
        anyhow::bail!(
            "an event names event {} and thread {}, but the run has {} event names and \
             {threads} threads",
            e.event,
            e.thread,
            run.event_names.len()
        );
    }
    Ok(())
}

/// Stage names, the new spans, and the largest row id seen.
pub type SpansAfter = (Vec<String>, Vec<Span>, i64);

/// A run's stage names, and its spans with row id above `after_id` with the largest id
/// seen: what a live view reads while the run is written. The names are read after the
/// spans, so they name every stage a span read uses (a stage is committed with or before
/// its first span).
pub fn spans_after(path: &Path, run_id: i64, after_id: i64) -> anyhow::Result<SpansAfter> {
    let conn = file::open_another_reader(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "read", &e);
    // Blocks are written whole: the one holding `after_id` starts at most a block before.
    let from = after_id.saturating_sub(super::blocks::MAX_BLOCK_SPANS as i64);
    let (mut spans, mut newest) = (Vec::new(), after_id);
    read_span_blocks(path, &conn, run_id, (from, i64::MAX), |first_id, block| {
        for (id, s) in (first_id..).zip(block) {
            if id > after_id {
                spans.push(*s);
                newest = newest.max(id);
            }
        }
        Ok(())
    })?;
    let mut stmt = conn
        .prepare("SELECT name FROM stages WHERE run_id = ?1 ORDER BY stage_id")
        .map_err(fail)?;
    let stages = stmt
        .query_map([run_id], |r| r.get(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
        .map_err(fail)?;
    Ok((stages, spans, newest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_range_covers_every_id_once_in_order() {
        for (first, last, rows) in [(1, 10, 10), (5, 3_000_004, 3_000_000), (-7, 9, 2_000_000)] {
            let parts = split_range(first, last, rows);
            assert!(!parts.is_empty() && parts.len() <= MAX_PARTS);
            assert_eq!(parts[0].0, first);
            assert_eq!(parts.last().unwrap().1, last);
            for pair in parts.windows(2) {
                assert_eq!(pair[0].1 + 1, pair[1].0);
            }
        }
        assert_eq!(
            split_range(1, 10, 10).len(),
            1,
            "small ranges are read in one part"
        );
    }

    #[test]
    fn a_range_is_dense_only_when_it_holds_exactly_the_count() {
        let range = |count, first, last| IdRange { count, first, last };
        assert!(range(3, Some(4), Some(6)).is_dense());
        assert!(!range(2, Some(4), Some(6)).is_dense());
        assert!(!range(0, None, None).is_dense());
        assert!(!range(i64::MAX, Some(i64::MIN), Some(i64::MAX)).is_dense());
    }
}
