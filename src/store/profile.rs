//! Sampled profiles (schema 6): written once, when the run has ended and its samples are
//! symbolized; read back by `framelab profile`.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};

use super::file::{self, sqlite_failure};
use crate::profile::{Frame, Profile, ProfileSample, StackNode};

pub(super) fn insert_profile(conn: &Connection, run_id: i64, p: &Profile) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO profiles (run_id, event, frequency_hz, unwinding, kernel_stacks, \
         samples, lost, throttled, truncated, notes_json) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        rusqlite::params![
            run_id,
            p.event,
            p.frequency_hz as i64,
            p.unwinding,
            p.kernel_stacks,
            p.samples.len() as i64,
            p.lost as i64,
            p.throttled as i64,
            p.truncated as i64,
            serde_json::to_string(&p.notes).unwrap_or_else(|_| "[]".to_owned()),
        ],
    )?;
    let mut stmt = conn.prepare_cached(
        "INSERT INTO profile_frames (run_id, frame_id, function, module, known) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (id, f) in p.frames.iter().enumerate() {
        stmt.execute(rusqlite::params![
            run_id, id as i64, f.function, f.module, f.known
        ])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO profile_stacks (run_id, stack_id, parent_id, frame_id) \
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (id, n) in p.nodes.iter().enumerate() {
        stmt.execute(rusqlite::params![run_id, id as i64, n.parent, n.frame])?;
    }
    let mut stmt = conn.prepare_cached(
        "INSERT INTO profile_samples (run_id, sample_id, t_ns, pid, tid, cpu, stack_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (id, s) in p.samples.iter().enumerate() {
        stmt.execute(rusqlite::params![
            run_id, id as i64, s.t_ns, s.pid, s.tid, s.cpu, s.stack
        ])?;
    }
    Ok(())
}

/// Adds a finished run's profile, in one transaction.
pub fn record_profile(path: &Path, run_id: i64, profile: &Profile) -> anyhow::Result<()> {
    let (mut conn, _) = file::open_for_writing(path)?;
    let fail = |e: rusqlite::Error| sqlite_failure(path, "write", &e);
    let tx = conn.transaction().map_err(fail)?;
    insert_profile(&tx, run_id, profile).map_err(fail)?;
    tx.commit().map_err(fail)
}

/// The profile of run `run_id`, `None` when it was not profiled.
pub fn load_profile(path: &Path, run_id: i64) -> anyhow::Result<Option<Profile>> {
    let conn = super::reading::open_for_reading(path)?;
    read_profile(&conn, run_id).map_err(|e| sqlite_failure(path, "reading the profile", &e))
}

pub(super) fn read_profile(conn: &Connection, run_id: i64) -> rusqlite::Result<Option<Profile>> {
    let head = conn
        .query_row(
            "SELECT event, frequency_hz, unwinding, kernel_stacks, lost, throttled, truncated, \
             notes_json FROM profiles WHERE run_id = ?1",
            [run_id],
            |r| {
                Ok(Profile {
                    event: r.get(0)?,
                    frequency_hz: r.get::<_, i64>(1)?.max(0) as u64,
                    unwinding: r.get(2)?,
                    kernel_stacks: r.get(3)?,
                    lost: r.get::<_, i64>(4)?.max(0) as u64,
                    throttled: r.get::<_, i64>(5)?.max(0) as u64,
                    truncated: r.get::<_, i64>(6)?.max(0) as u64,
                    notes: serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_default(),
                    ..Profile::default()
                })
            },
        )
        .optional()?;
    let Some(mut p) = head else {
        return Ok(None);
    };
    let mut stmt = conn.prepare(
        "SELECT function, module, known FROM profile_frames WHERE run_id = ?1 ORDER BY frame_id",
    )?;
    p.frames = stmt
        .query_map([run_id], |r| {
            Ok(Frame {
                function: r.get(0)?,
                module: r.get(1)?,
                known: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let frames = p.frames.len() as u32;
    let mut stmt = conn.prepare(
        "SELECT parent_id, frame_id FROM profile_stacks WHERE run_id = ?1 ORDER BY stack_id",
    )?;
    p.nodes = stmt
        .query_map([run_id], |r| {
            Ok(StackNode {
                parent: r.get(0)?,
                frame: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    // A hand-edited file must not send the analysis out of bounds (or round in a loop):
    // a parent comes before its children.
    let bad_node = p
        .nodes
        .iter()
        .enumerate()
        .any(|(i, n)| n.frame >= frames || n.parent.is_some_and(|parent| parent as usize >= i));
    let mut stmt = conn.prepare(
        "SELECT t_ns, pid, tid, cpu, stack_id FROM profile_samples WHERE run_id = ?1 \
         ORDER BY sample_id",
    )?;
    p.samples = stmt
        .query_map([run_id], |r| {
            Ok(ProfileSample {
                t_ns: r.get(0)?,
                pid: r.get(1)?,
                tid: r.get(2)?,
                cpu: r.get(3)?,
                stack: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let nodes = p.nodes.len() as u32;
    if bad_node
        || p.samples
            .iter()
            .any(|s| s.stack.is_some_and(|n| n >= nodes))
    {
        return Err(rusqlite::Error::InvalidQuery);
    }
    Ok(Some(p))
}
