//! The one way a run file is opened for reading: checked and upgraded (`file`), and the
//! records a killed run left in its spill folded in first (`spill_fold`), so every reader
//! sees them. A run still recording keeps its records since the window opened in its spill
//! (locked by its recorder): its reader gets a private copy of the run file (`VACUUM INTO`,
//! a consistent snapshot of the last commit) with the spill so far folded in, and every
//! further connection for that file opens the copy (`live_copies`). The copy is removed when
//! the next copy of the same file replaces it, or when the process exits.

use std::path::Path;

use rusqlite::Connection;

use super::file::{open_checked, sqlite_failure};
use super::spill_fold::{fold_left_spill, fold_recording_spill, LeftSpill};

/// Opens an existing run file for reading (`file::open_checked`), with a left spill folded in.
pub fn open_for_reading(path: &Path) -> anyhow::Result<Connection> {
    let conn = open_checked(path)?;
    match fold_left_spill(path, &conn)? {
        LeftSpill::None => {
            super::live_copies::forget(path);
            Ok(conn)
        }
        LeftSpill::Recording => read_while_recording(path, &conn),
    }
}

fn read_while_recording(path: &Path, conn: &Connection) -> anyhow::Result<Connection> {
    let copy = tempfile::Builder::new()
        .prefix("framelab-live-")
        .suffix(".framelab")
        .tempfile()
        .map_err(|e| {
            anyhow::anyhow!(
                "{} is still recording and a copy of it to read cannot be made: {e}",
                path.display()
            )
        })?
        .into_temp_path();
    std::fs::remove_file(&copy)?;
    conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
        .map_err(|e| sqlite_failure(path, "copy the run still recording from", &e))?;
    let copy_conn = open_checked(&copy)?;
    fold_recording_spill(path, &copy, &copy_conn)?;
    super::live_copies::keep(path, copy);
    Ok(copy_conn)
}
