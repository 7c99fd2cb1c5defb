//! Which file each address of each process belonged to, at the moment it was sampled:
//! executable mappings from the kernel's records (and /proc/PID/maps for processes that
//! were running before profiling began), copied on fork, cleared on exec.
//!
//! Addresses are resolved when the sample is processed, not at the end: by then the
//! process is gone and its address space with it. What is kept is the module (path and
//! build id) and the file offset, which is what symbolizing needs, even after the binary
//! was deleted or replaced (then it is shown as `module+0xoffset`).

use std::collections::HashMap;

/// One binary (or other mapped file) seen in the run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Module {
    pub path: String,
    pub build_id: Vec<u8>,
}

/// Where one address of a call chain points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// In the kernel (symbolized from /proc/kallsyms).
    Kernel(u64),
    /// At this offset of this file (an index into `Maps::modules`).
    File { module: u32, offset: u64 },
    /// In anonymous executable memory of `pid` (JIT code; a perf map may name it).
    Anon { pid: u32, addr: u64 },
    /// In no mapping framelab knows of.
    Unmapped(u64),
}

#[derive(Clone, Copy, Debug)]
struct Mapping {
    start: u64,
    end: u64,
    pgoff: u64,
    /// `None`: anonymous executable memory.
    module: Option<u32>,
}

#[derive(Default)]
pub struct Maps {
    pub modules: Vec<Module>,
    module_ids: HashMap<Module, u32>,
    /// Per process, its executable mappings, latest last (a later one wins on overlap).
    processes: HashMap<u32, Vec<Mapping>>,
    /// Per process, a number that changes whenever its mappings do (for unwinders built
    /// from them).
    generations: HashMap<u32, u64>,
    next_generation: u64,
}

impl Maps {
    pub fn add(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &str, build_id: &[u8]) {
        let module = if is_anonymous(path) {
            None
        } else {
            let key = Module {
                path: path.trim_end_matches(" (deleted)").to_owned(),
                build_id: build_id.to_vec(),
            };
            let next = self.modules.len() as u32;
            let id = *self.module_ids.entry(key.clone()).or_insert_with(|| {
                self.modules.push(key);
                next
            });
            Some(id)
        };
        self.processes.entry(pid).or_default().push(Mapping {
            start,
            end: start.saturating_add(len),
            pgoff,
            module,
        });
        self.changed(pid);
    }

    fn changed(&mut self, pid: u32) {
        self.next_generation += 1;
        self.generations.insert(pid, self.next_generation);
    }

    pub fn generation(&self, pid: u32) -> u64 {
        self.generations.get(&pid).copied().unwrap_or(0)
    }

    /// The file-backed executable mappings of `pid`, for its unwinder.
    pub fn exec_mappings(&self, pid: u32) -> Vec<super::unwind::ExecMapping> {
        self.processes
            .get(&pid)
            .into_iter()
            .flatten()
            .filter_map(|m| {
                Some(super::unwind::ExecMapping {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    path: self.modules[m.module? as usize].path.clone(),
                })
            })
            .collect()
    }

    /// A new process starts with its parent's mappings.
    pub fn fork(&mut self, pid: u32, ppid: u32) {
        if let Some(parent) = self.processes.get(&ppid).cloned() {
            self.processes.insert(pid, parent);
            self.changed(pid);
        }
    }

    pub fn exec(&mut self, pid: u32) {
        self.processes.remove(&pid);
        self.changed(pid);
    }

    /// Reads the executable mappings of a process that was running before it was attached.
    pub fn read_proc(&mut self, pid: u32) {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(range), Some(perms), Some(offset)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if !perms.contains('x') {
                continue;
            }
            let path = fields.nth(2).unwrap_or("");
            let (Some((a, z)), Ok(pgoff)) =
                (range.split_once('-'), u64::from_str_radix(offset, 16))
            else {
                continue;
            };
            let (Ok(a), Ok(z)) = (u64::from_str_radix(a, 16), u64::from_str_radix(z, 16)) else {
                continue;
            };
            self.add(pid, a, z - a, pgoff, path, &[]);
        }
    }

    pub fn locate(&self, pid: u32, addr: u64) -> Location {
        let found = self
            .processes
            .get(&pid)
            .and_then(|maps| maps.iter().rev().find(|m| m.start <= addr && addr < m.end));
        match found {
            Some(Mapping {
                module: Some(module),
                start,
                pgoff,
                ..
            }) => Location::File {
                module: *module,
                offset: addr - start + pgoff,
            },
            Some(_) => Location::Anon { pid, addr },
            None => Location::Unmapped(addr),
        }
    }
}

/// `//anon` and `[anon:...]` are memory a JIT may have written code into; `[vdso]` and
/// the like are modules of their own, with no file to read symbols from.
fn is_anonymous(path: &str) -> bool {
    path.is_empty() || path.starts_with("//anon") || path.starts_with("[anon")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_forks_and_execs() {
        let mut maps = Maps::default();
        maps.add(10, 0x1000, 0x1000, 0x200, "/bin/a", &[]);
        maps.fork(11, 10);
        assert_eq!(
            maps.locate(11, 0x1010),
            Location::File {
                module: 0,
                offset: 0x210
            }
        );
        maps.exec(11);
        assert_eq!(maps.locate(11, 0x1010), Location::Unmapped(0x1010));
        maps.add(11, 0x1000, 0x1000, 0, "//anon", &[]);
        assert_eq!(
            maps.locate(11, 0x1010),
            Location::Anon {
                pid: 11,
                addr: 0x1010
            }
        );
        assert!(matches!(maps.locate(10, 0x1010), Location::File { .. }));
    }
}
