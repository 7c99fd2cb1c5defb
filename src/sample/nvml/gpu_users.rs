//! Whether any of the run's processes has an NVIDIA device open (a `/dev/nvidia*` among its
//! file descriptors). Per-process utilisation costs milliseconds a call on some drivers
//! (2.8 ms on an H200, BENCHMARKS.md), and a process without a GPU device open has nothing
//! for it to report: every CUDA, Vulkan or OpenGL client of the NVIDIA driver opens
//! `/dev/nvidiactl` and a `/dev/nvidiaN` for as long as its context lives.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::PathBuf;

pub struct GpuUsers {
    proc_root: PathBuf,
    /// What a device's path starts with (`/dev/nvidia`).
    device_prefix: String,
    /// Processes found with a device open (or whose descriptors cannot be listed): not
    /// looked at again while they are in the run.
    users: BTreeSet<u32>,
}

impl GpuUsers {
    pub fn nvidia() -> GpuUsers {
        GpuUsers::new("/proc", "/dev/nvidia")
    }

    /// `proc_root`'s processes (tests give another root than `/proc`).
    pub(super) fn new(proc_root: impl Into<PathBuf>, device_prefix: &str) -> GpuUsers {
        GpuUsers {
            proc_root: proc_root.into(),
            device_prefix: device_prefix.to_owned(),
            users: BTreeSet::new(),
        }
    }

    /// Users known from the start (tests).
    #[cfg(test)]
    pub(super) fn known(pids: &[u32]) -> GpuUsers {
        GpuUsers {
            users: pids.iter().copied().collect(),
            ..GpuUsers::nvidia()
        }
    }

    /// Whether any of `pids` has an NVIDIA device open. A process whose descriptors cannot
    /// be listed (another user's) counts as one that may: only a process seen without one
    /// is left out.
    pub fn any(&mut self, pids: &[u32]) -> bool {
        self.users.retain(|pid| pids.contains(pid));
        if !self.users.is_empty() {
            return true;
        }
        for &pid in pids {
            if self.may_use_gpu(pid) {
                self.users.insert(pid);
                return true;
            }
        }
        false
    }

    fn may_use_gpu(&self, pid: u32) -> bool {
        let fds = self.proc_root.join(pid.to_string()).join("fd");
        let entries = match std::fs::read_dir(&fds) {
            Ok(entries) => entries,
            // Gone since it was listed: it uses nothing.
            Err(e) if e.kind() == ErrorKind::NotFound => return false,
            Err(_) => return true,
        };
        entries.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with(&self.device_prefix))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_counts_once_it_has_a_device_open() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = format!("{}/nvidia", dir.path().display());
        let me = std::process::id();
        let mut users = GpuUsers::new("/proc", &prefix);
        assert!(!users.any(&[me]), "no device open yet");
        let device = std::fs::File::create(dir.path().join("nvidiactl")).unwrap();
        assert!(users.any(&[me]), "the device is among its descriptors");
        // Known now: not looked at again while it is in the run...
        drop(device);
        assert!(users.any(&[me]));
        // ...and forgotten once it is not.
        assert!(!users.any(&[]));
        assert!(!users.any(&[me]), "looked at again: the device is closed");
    }

    #[test]
    fn a_process_gone_uses_nothing_and_one_that_cannot_be_listed_may() {
        let dir = tempfile::tempdir().unwrap();
        let mut users = GpuUsers::new(dir.path(), "/dev/nvidia");
        // No such process under this root.
        assert!(!users.any(&[4_000_000]));
        // Its descriptors are not a directory that can be listed.
        std::fs::create_dir(dir.path().join("77")).unwrap();
        std::fs::write(dir.path().join("77").join("fd"), "").unwrap();
        assert!(users.any(&[4_000_000, 77]));
    }
}
