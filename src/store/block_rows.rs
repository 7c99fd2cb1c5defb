//! Span blocks in the file (schema 9): the `span_blocks` table, the `spans` view that
//! decodes them in plain SQL, and reading and writing blocks (`blocks` is the byte codec).
//!
//! A span's id is its block's `first_id` plus its slot in the block: ids are consecutive
//! in the order spans were written, across blocks and runs, as the rows of schema 8 were.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension};

use super::blocks::{self, Block, StoredBlock, MAX_BLOCK_SPANS};
use crate::model::Span;

/// The table, and `span_slots` (0 .. MAX_BLOCK_SPANS-1) that the view joins to number a
/// block's spans: a join on a small table decodes ~10× faster than a recursive CTE.
pub fn tables_sql() -> String {
    format!(
        "CREATE TABLE span_blocks (
    first_id       INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs(run_id),
    layout         INTEGER NOT NULL,
    spans          INTEGER NOT NULL,
    base_frame     INTEGER NOT NULL,
    base_start_ns  INTEGER NOT NULL,
    records        BLOB NOT NULL
);
CREATE TABLE span_slots (slot INTEGER PRIMARY KEY);
WITH RECURSIVE n(slot) AS (SELECT 0 UNION ALL SELECT slot + 1 FROM n WHERE slot < {})
INSERT INTO span_slots SELECT slot FROM n;
",
        MAX_BLOCK_SPANS - 1
    )
}

/// `x'000102…FF'`: `instr(BYTES, substr(blob, k, 1)) - 1` is the value of byte k
/// (SQLite has no function that reads a byte of a blob as a number).
fn byte_table() -> String {
    let hex: String = (0..=255u8).map(|b| format!("{b:02X}")).collect();
    format!("x'{hex}'")
}

/// SQL for the unsigned little-endian integer of `n` bytes at byte `at` of record `o`
/// (the 1-based position of the record's first byte).
fn unsigned(o: &str, at: usize, n: usize, bytes: &str) -> String {
    (0..n)
        .map(|k| {
            let byte = format!(
                "(instr({bytes}, substr(b.records, {o} + {}, 1)) - 1)",
                at + k
            );
            match k {
                0 => byte,
                _ => format!("{byte} * {}", 1u64 << (8 * k)),
            }
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// SQL for the signed little-endian i64 at byte `at`: the top byte carries the sign, and
/// is added first so no partial sum leaves the i64 range (SQLite would turn it into a REAL).
fn signed64(o: &str, at: usize, bytes: &str) -> String {
    let top = format!(
        "(instr({bytes}, substr(b.records, {o} + {}, 1)) - 1)",
        at + 7
    );
    format!(
        "({top} - 256 * ({top} >= 128)) * 72057594037927936 + {}",
        unsigned(o, at, 7, bytes)
    )
}

/// The `spans` view: the columns and ids of schema 8's table, decoded from the blocks in
/// SQL (slow, ~2 µs a span, but any SQLite reader can use it; framelab and the Python
/// package decode the blobs themselves). CROSS JOIN keeps the blocks as the outer loop, so
/// rows come in id order.
pub fn spans_view_sql() -> String {
    let bytes = byte_table();
    let (n, m, w) = ("(s.slot * 12)", "(s.slot * 16)", "(s.slot * 32)");
    let (n, m, w) = (format!("{n} + 1"), format!("{m} + 1"), format!("{w} + 1"));
    let (n, m, w) = (n.as_str(), m.as_str(), w.as_str());
    let u = |o: &str, at, len| unsigned(o, at, len, &bytes);
    format!(
        "CREATE VIEW spans AS
SELECT b.first_id + s.slot AS id,
       b.run_id AS run_id,
       CASE b.layout WHEN 1 THEN b.base_frame + {frame_n}
                     WHEN 2 THEN b.base_frame + {frame_m}
                     ELSE {frame_w} END AS frame,
       CASE b.layout WHEN 1 THEN {stage_n} WHEN 2 THEN {stage_m} ELSE {stage_w} END AS stage_id,
       CASE b.layout WHEN 1 THEN {thread_n} WHEN 2 THEN {thread_m} ELSE {thread_w} END AS thread_id,
       CASE b.layout WHEN 1 THEN b.base_start_ns + {start_n}
                     WHEN 2 THEN b.base_start_ns + {start_m}
                     ELSE {start_w} END AS start_ns,
       CASE b.layout WHEN 1 THEN {dur_n} WHEN 2 THEN {dur_m} ELSE {dur_w} END AS dur_ns
FROM span_blocks AS b CROSS JOIN span_slots AS s ON s.slot < b.spans;
",
        frame_n = u(n, 8, 2),
        frame_m = u(m, 8, 4),
        frame_w = signed64(w, 16, &bytes),
        stage_n = u(n, 10, 1),
        stage_m = u(m, 12, 2),
        stage_w = u(w, 24, 2),
        thread_n = u(n, 11, 1),
        thread_m = u(m, 14, 2),
        thread_w = u(w, 28, 4),
        start_n = u(n, 0, 4),
        start_m = u(m, 0, 4),
        start_w = signed64(w, 0, &bytes),
        dur_n = u(n, 4, 4),
        dur_m = u(m, 4, 4),
        dur_w = signed64(w, 8, &bytes),
    )
}

/// The id the next block written gets: one past the file's last span. Asked inside the
/// writer's transaction, so two runs written into one file at once never share ids.
pub fn next_first_id(conn: &Connection) -> rusqlite::Result<i64> {
    let end: Option<i64> = conn
        .query_row(
            "SELECT first_id + spans FROM span_blocks ORDER BY first_id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(end.unwrap_or(1))
}

pub fn insert_block(
    conn: &Connection,
    first_id: i64,
    run_id: i64,
    block: &Block,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO span_blocks \
         (first_id, run_id, layout, spans, base_frame, base_start_ns, records) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute((
        first_id,
        run_id,
        block.layout as i64,
        block.count as i64,
        block.base_frame,
        block.base_start_ns,
        &block.records,
    ))
    .map(drop)
}

/// Blocks of `run_id` whose first id is in `first..=last`, in id order: each block's
/// first id and spans to `sink`. Errors of a block's bytes come back as `Damaged`.
pub fn read_blocks(
    conn: &Connection,
    run_id: i64,
    range: (i64, i64),
    mut sink: impl FnMut(i64, &[Span]) -> anyhow::Result<()>,
) -> Result<(), ReadError> {
    let mut spans = Vec::with_capacity(MAX_BLOCK_SPANS);
    each_block(conn, run_id, range, |first_id, block| {
        spans.clear();
        blocks::decode(block, &mut spans).map_err(ReadError::Damaged)?;
        sink(first_id, &spans).map_err(ReadError::Sink)
    })
}

/// [`read_blocks`]' spans appended to `out`, decoded straight into it (no copy of each
/// block's: issue 29, the report's reads on threads).
pub fn read_blocks_into(
    conn: &Connection,
    run_id: i64,
    range: (i64, i64),
    out: &mut Vec<Span>,
) -> Result<(), ReadError> {
    each_block(conn, run_id, range, |_, block| {
        blocks::decode(block, out).map_err(ReadError::Damaged)
    })
}

/// Each block of `run_id` whose first id is in `first..=last`, in id order, as stored, to
/// `take` with its first id.
fn each_block(
    conn: &Connection,
    run_id: i64,
    (first, last): (i64, i64),
    mut take: impl FnMut(i64, &StoredBlock) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT first_id, layout, spans, base_frame, base_start_ns, records \
             FROM span_blocks WHERE first_id BETWEEN ?1 AND ?2 AND run_id = ?3",
        )
        .map_err(ReadError::Sql)?;
    let mut rows = stmt.query((first, last, run_id)).map_err(ReadError::Sql)?;
    while let Some(row) = rows.next().map_err(ReadError::Sql)? {
        let read = || -> anyhow::Result<(i64, StoredBlock)> {
            let cells = super::codec::Cells {
                row,
                table: "span_blocks",
            };
            let records = match row.get_ref(5)? {
                ValueRef::Blob(bytes) => bytes,
                ValueRef::Null => {
                    anyhow::bail!("span_blocks.records holds NULL where a blob belongs")
                }
                ValueRef::Text(_) => {
                    anyhow::bail!("span_blocks.records holds text where a blob belongs")
                }
                _ => anyhow::bail!("span_blocks.records holds a number where a blob belongs"),
            };
            let block = StoredBlock {
                layout: cells.int(1)?,
                count: cells.int(2)?,
                base_frame: cells.int(3)?,
                base_start_ns: cells.int(4)?,
                records,
            };
            Ok((cells.int(0)?, block))
        };
        let (first_id, block) = read().map_err(ReadError::Damaged)?;
        take(first_id, &block)?;
    }
    Ok(())
}

/// Why `read_blocks` stopped.
pub enum ReadError {
    Sql(rusqlite::Error),
    Damaged(anyhow::Error),
    Sink(anyhow::Error),
}

/// Views over `spans` for people querying by hand; framelab itself reads the tables.
/// Aggregates are computed before joining names: one lookup per group instead of one per
/// span. Dropped and made again when `spans` became a view (schema 9).
pub const SPAN_VIEWS: &str = "
CREATE VIEW frames AS
SELECT f.run_id,
       f.frame,
       f.start_ns,
       f.end_ns,
       f.end_ns - f.start_ns                            AS total_ns,
       (f.end_ns - f.start_ns) / 1000.0                 AS total_us,
       f.span_count,
       f.end_ns < r.window_start_ns                     AS warmup,
       f.end_ns BETWEEN r.window_start_ns AND r.window_end_ns AS measured
FROM (SELECT run_id, frame, min(start_ns) AS start_ns, max(start_ns + dur_ns) AS end_ns,
             count(*) AS span_count
      FROM spans GROUP BY run_id, frame) AS f
JOIN runs AS r ON r.run_id = f.run_id;

CREATE VIEW named_spans AS
SELECT s.run_id,
       s.frame,
       st.name                        AS stage,
       t.pid                          AS pid,
       t.tid                          AS tid,
       t.name                         AS thread,
       s.start_ns / 1000.0            AS start_us,
       s.dur_ns / 1000.0              AS dur_us,
       (s.start_ns + s.dur_ns) / 1000.0 AS end_us
FROM spans AS s
LEFT JOIN stages  AS st ON st.run_id = s.run_id AND st.stage_id = s.stage_id
LEFT JOIN threads AS t  ON t.run_id  = s.run_id AND t.thread_id = s.thread_id;

CREATE VIEW stage_summary AS
SELECT a.run_id, st.name AS stage, a.spans, a.min_us, a.avg_us, a.max_us
FROM (SELECT run_id, stage_id, count(*) AS spans, min(dur_ns) / 1000.0 AS min_us,
             avg(dur_ns) / 1000.0 AS avg_us, max(dur_ns) / 1000.0 AS max_us
      FROM spans GROUP BY run_id, stage_id) AS a
LEFT JOIN stages AS st ON st.run_id = a.run_id AND st.stage_id = a.stage_id;
";

/// The views over `spans`, which the 8 → 9 step drops before `spans` becomes a view and
/// creates again after.
pub const DEPENDENT_VIEWS: [&str; 3] = ["frames", "named_spans", "stage_summary"];

/// Schema 8 → 9: every `spans` row into blocks, in id order, each run's spans in its own
/// blocks; runs' id ranges renumbered; the table replaced by the view. Nothing is dropped:
/// a span whose run is not in `runs` keeps its run id as it did.
pub fn rows_to_blocks(conn: &Connection) -> rusqlite::Result<()> {
    for view in DEPENDENT_VIEWS {
        conn.execute_batch(&format!("DROP VIEW IF EXISTS {view};"))?;
    }
    conn.execute_batch(&tables_sql())?;
    let mut encoders: std::collections::BTreeMap<i64, RunBlocks> = Default::default();
    let mut next_id = 1;
    {
        let mut stmt = conn.prepare(
            "SELECT run_id, frame, stage_id, thread_id, start_ns, dur_ns FROM spans ORDER BY id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let run_id: i64 = row.get(0)?;
            let span = Span {
                frame: row.get::<_, i64>(1)? as u64,
                stage: row.get(2)?,
                thread: row.get(3)?,
                start_ns: row.get(4)?,
                dur_ns: row.get(5)?,
            };
            let run = encoders.entry(run_id).or_default();
            if let Some(block) = run.encoder.push(&span) {
                run.write(conn, run_id, &mut next_id, &block)?;
            }
        }
    }
    conn.execute(
        "UPDATE runs SET span_count = 0, span_id_first = NULL, span_id_last = NULL",
        [],
    )?;
    for (run_id, run) in &mut encoders {
        if let Some(block) = run.encoder.finish() {
            run.write(conn, *run_id, &mut next_id, &block)?;
        }
        conn.execute(
            "UPDATE runs SET span_count = ?2, span_id_first = ?3, span_id_last = ?4 \
             WHERE run_id = ?1",
            (run_id, run.count, run.first, run.last),
        )?;
    }
    conn.execute_batch("DROP TABLE spans;")?;
    conn.execute_batch(&spans_view_sql())?;
    conn.execute_batch(SPAN_VIEWS)
}

/// One run's blocks being written by `rows_to_blocks`, and their id range.
#[derive(Default)]
struct RunBlocks {
    encoder: blocks::BlockEncoder,
    count: i64,
    first: Option<i64>,
    last: Option<i64>,
}

impl RunBlocks {
    fn write(
        &mut self,
        conn: &Connection,
        run_id: i64,
        next_id: &mut i64,
        block: &Block,
    ) -> rusqlite::Result<()> {
        insert_block(conn, *next_id, run_id, block)?;
        let count = block.count as i64;
        self.first.get_or_insert(*next_id);
        self.last = Some(*next_id + count - 1);
        self.count += count;
        *next_id += count;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::blocks::Layout;

    #[test]
    fn the_view_decodes_every_layout_as_the_codec_does() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        conn.execute_batch(&tables_sql()).unwrap();
        conn.execute_batch(&spans_view_sql()).unwrap();
        let span = |frame: u64, stage, thread, start_ns, dur_ns| Span {
            frame,
            stage,
            thread,
            start_ns,
            dur_ns,
        };
        let spans = [
            span(7, 3, 2, 1_000, 10),
            span(9, 255, 255, 1_000 + u32::MAX as i64, u32::MAX as i64),
            span(9, 300, 4, 0, 1),
            span(u64::MAX, u16::MAX, u32::MAX, i64::MIN, i64::MAX),
            span(i64::MAX as u64, 1, 1, i64::MAX, -1),
            span(0, 0, 0, -5, i64::MIN),
            span(1, 0, 0, 0, 0),
        ];
        let blocks = blocks::encode_all(&spans);
        let layouts: Vec<Layout> = blocks.iter().map(|b| b.layout).collect();
        assert!(layouts.contains(&Layout::Narrow) && layouts.contains(&Layout::Medium));
        assert!(layouts.contains(&Layout::Wide));
        let mut next = 1;
        for b in &blocks {
            insert_block(&conn, next, 1, b).unwrap();
            next += b.count as i64;
        }
        let mut stmt = conn
            .prepare("SELECT id, run_id, frame, stage_id, thread_id, start_ns, dur_ns FROM spans")
            .unwrap();
        let rows: Vec<(i64, Span)> = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    Span {
                        frame: r.get::<_, i64>(2)? as u64,
                        stage: r.get(3)?,
                        thread: r.get(4)?,
                        start_ns: r.get(5)?,
                        dur_ns: r.get(6)?,
                    },
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
        assert_eq!(ids, (1..=spans.len() as i64).collect::<Vec<_>>());
        let decoded: Vec<Span> = rows.into_iter().map(|r| r.1).collect();
        assert_eq!(decoded, spans);
        assert_eq!(next_first_id(&conn).unwrap(), spans.len() as i64 + 1);
    }
}
