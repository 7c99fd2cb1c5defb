//! The session directory in shared memory, and cleaning up after framelabs that were killed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub struct SessionDir {
    path: PathBuf,
}

const PREFIX: &str = "framelab-session-";

impl SessionDir {
    pub fn create() -> Result<SessionDir> {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        remove_stale(&base);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = base.join(format!("{PREFIX}{}-{nanos:x}", std::process::id()));
        std::fs::create_dir(&path)
            .with_context(|| format!("cannot create the session directory {}", path.display()))?;
        Ok(SessionDir { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Session directories whose framelab no longer runs (killed with -9) are removed.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only checks existence.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
