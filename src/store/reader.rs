//! Loads runs back, refusing files that are not framelab files, corrupt, or too new.

use std::path::Path;

use crate::model::{Run, RunMeta};

/// Loads run `run_id` of `path`, or its only/latest run when `None`.
pub fn load_run(_path: &Path, _run_id: Option<i64>) -> anyhow::Result<Run> {
    anyhow::bail!("store not implemented yet")
}

/// The runs a file holds, oldest first.
pub fn list_runs(_path: &Path) -> anyhow::Result<Vec<RunMeta>> {
    anyhow::bail!("store not implemented yet")
}
