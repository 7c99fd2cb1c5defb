//! Private copies of run files still recording (`reading`), by the run file's path: every
//! connection a reader opens for that file opens its copy. A copy is removed when the next
//! copy of the same file replaces it, or when the process exits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE_COPIES: Mutex<Option<HashMap<PathBuf, tempfile::TempPath>>> = Mutex::new(None);

/// The file to read for `path`: its live copy when it has one.
pub fn live_copy(path: &Path) -> PathBuf {
    let copies = LIVE_COPIES.lock().unwrap_or_else(|e| e.into_inner());
    copies
        .as_ref()
        .and_then(|c| c.get(path))
        .map_or_else(|| path.to_owned(), |copy| copy.to_path_buf())
}

/// Reads of `path` go to `copy` from now on (the copy before it is removed).
pub fn keep(path: &Path, copy: tempfile::TempPath) {
    let mut copies = LIVE_COPIES.lock().unwrap_or_else(|e| e.into_inner());
    if copies.is_none() {
        // SAFETY: registering a plain function without arguments to run at exit.
        unsafe { libc::atexit(remove_live_copies) };
    }
    copies
        .get_or_insert_with(HashMap::new)
        .insert(path.to_owned(), copy);
}

/// Reads of `path` go to the file itself again (it is no longer recording).
pub fn forget(path: &Path) {
    let mut copies = LIVE_COPIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(copies) = copies.as_mut() {
        copies.remove(path);
    }
}

extern "C" fn remove_live_copies() {
    if let Ok(mut copies) = LIVE_COPIES.lock() {
        copies.take();
    }
}
