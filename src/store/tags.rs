//! A run's tags (`--tag KEY=VALUE`, schema 8): written with the run's row, read back with
//! its metadata, in the order given.

use rusqlite::Connection;

use crate::model::Tag;

pub(super) fn insert_tags(conn: &Connection, run_id: i64, tags: &[Tag]) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO run_tags (run_id, position, key, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (position, tag) in tags.iter().enumerate() {
        stmt.execute(rusqlite::params![
            run_id,
            position as i64,
            tag.key,
            tag.value
        ])?;
    }
    Ok(())
}

/// The run's tags become `tags` (a later `update_meta` with other tags).
pub(super) fn replace_tags(conn: &Connection, run_id: i64, tags: &[Tag]) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM run_tags WHERE run_id = ?1", [run_id])?;
    insert_tags(conn, run_id, tags)
}

/// The run's tags; none for a file from before schema 8 (opened read-only, not migrated).
pub(super) fn load_tags(conn: &Connection, run_id: i64) -> rusqlite::Result<Vec<Tag>> {
    let has_table: bool = conn.query_row(
        "SELECT count(*) = 1 FROM sqlite_schema WHERE type = 'table' AND name = 'run_tags'",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(Vec::new());
    }
    let mut stmt =
        conn.prepare_cached("SELECT key, value FROM run_tags WHERE run_id = ?1 ORDER BY position")?;
    let tags = stmt
        .query_map([run_id], |r| {
            Ok(Tag {
                key: r.get(0)?,
                value: r.get(1)?,
            })
        })?
        .collect();
    tags
}
