//! The one way a run file is opened for reading: checked and upgraded (`file`), and the
//! records a killed run left in its spill folded in first (`spill_fold`), so every reader
//! sees them.

use std::path::Path;

use rusqlite::Connection;

/// Opens an existing run file for reading (`file::open_checked`), with a left spill folded in.
pub fn open_for_reading(path: &Path) -> anyhow::Result<Connection> {
    let conn = super::file::open_checked(path)?;
    super::spill_fold::fold_left_spill(path, &conn)?;
    Ok(conn)
}
