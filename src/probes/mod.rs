//! Stages from programs that were not built with the SDK (docs/probes.md): a function's
//! entry and return, or a pair of USDT probes, seen by the kernel through the uprobe PMU of
//! `perf_event_open`, become ordinary spans of the run (USDT probes and kernel tracepoints
//! alone, events), so report, hist, `--live`, compare and export need nothing new.
//!
//! - `options`: what the options ask for, checked once;
//! - `mod` (here): functions and binaries resolved to files and offsets before the command
//!   starts, and what a run's probes are said to have seen;
//! - `elf`: a binary's functions and where they lie in the file;
//! - `usdt`: a binary's USDT probes (`.note.stapsdt`) and where their arguments live;
//! - `uprobe`: opening uprobes through the shared perf-event layer (`crate::perf_event`);
//! - `tracepoint`: kernel tracepoints, found in tracefs, opened the same way;
//! - `recorder`: their per-CPU rings drained into spans of the run's threads;
//! - `pairs`: `--pair`, the run's events paired into spans as they are recorded;
//! - `cost`: what one hit costs on this machine, measured, by first instruction;
//! - `listing`: `framelab probes`' document: a binary's functions and USDT sites, the costs.

pub mod cost;
pub mod elf;
pub mod listing;
pub mod options;
pub mod pairs;
pub mod recorder;
pub mod tracepoint;
pub mod uprobe;
pub mod usdt;

use std::path::{Path, PathBuf};

pub use options::{FrameSource, Kind, Place, ProbeOptions, ProbeRequest, ProbeText, Target};

/// A probe point found in its file: what the kernel is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePoint {
    /// The file, as found (absolute).
    pub path: PathBuf,
    pub file_offset: u64,
    /// A USDT probe's semaphore (file offset), raised while the probe is attached; 0: none.
    pub semaphore_offset: u64,
    /// The function it lies in, when known.
    pub function: String,
    /// What its first instruction makes a hit cost.
    pub class: cost::InstructionClass,
}

/// Finds `target`'s file and offset. `Err` is the line to print (no such file, not ELF, no
/// such function with the near matches, an offset outside every function).
pub fn locate(target: &Target) -> Result<ProbePoint, String> {
    let path = find_binary(&target.binary)?;
    let binary = elf::Binary::read(&path)?;
    let (file_offset, function) = match &target.place {
        Place::Function(name) => {
            let Some(f) = binary.function(name) else {
                let near = binary.near(name, 5);
                let hint = if near.is_empty() {
                    format!(
                        "none of its {} functions is close; list them with framelab probes {}",
                        binary.functions.len(),
                        path.display()
                    )
                } else {
                    format!("near matches: {}", near.join(", "))
                };
                return Err(format!(
                    "{} has no function {name} ({} functions in .symtab and .dynsym); {hint}",
                    path.display(),
                    binary.functions.len()
                ));
            };
            (f.file_offset, f.name.clone())
        }
        Place::Offset(offset) => {
            let Some(f) = binary.function_at(*offset) else {
                return Err(format!(
                    "{}:{offset:#x} is not inside any function of the file: give a function's \
                     name, or an offset from framelab probes {}",
                    path.display(),
                    path.display()
                ));
            };
            // The return probe takes the return address from the top of the stack: only
            // at the entry (or just past a leading endbr64, which leaves the stack alone) is
            // it there. Anywhere else the kernel would overwrite whatever the function pushed.
            let past_endbr = match cost::InstructionClass::of(binary.bytes_at(f.file_offset)) {
                cost::InstructionClass::Endbr64 => Some(f.file_offset + 4),
                _ => None,
            };
            if *offset != f.file_offset && Some(*offset) != past_endbr {
                let allowed = match past_endbr {
                    Some(after) => format!("{:#x} or {after:#x} (past its endbr64)", f.file_offset),
                    None => format!("{:#x}", f.file_offset),
                };
                return Err(format!(
                    "{}:{offset:#x} is inside {}, not at its entry: a return probe there would \
                     overwrite what the function pushed; give its entry, {allowed}, or its name",
                    path.display(),
                    f.name
                ));
            }
            (*offset, format!("{}+{:#x}", f.name, offset - f.file_offset))
        }
    };
    Ok(ProbePoint {
        class: cost::InstructionClass::of(binary.bytes_at(file_offset)),
        path,
        file_offset,
        semaphore_offset: 0,
        function,
    })
}

/// A binary named by path, as a program on PATH, or as a library's soname (`libx264.so.164`,
/// or `libx264.so` for whichever version the loader's cache holds).
pub fn find_binary(name: &str) -> Result<PathBuf, String> {
    if name.contains('/') {
        let path = Path::new(name);
        return match path.metadata() {
            Ok(m) if m.is_file() => Ok(std::path::absolute(path).unwrap_or(path.to_owned())),
            Ok(_) => Err(format!(
                "{name} is not a file: give an executable or a library"
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                "{name} does not exist{}: check the path, or name a program on PATH or a \
                 library by its soname (libx264.so)",
                crate::session::relative_to(path)
            )),
            Err(e) => Err(format!("cannot read {name}: {e}")),
        };
    }
    if let Some(found) = on_path(name) {
        return Ok(found);
    }
    if let Some(found) = in_loader_cache(name) {
        return Ok(found);
    }
    Err(format!(
        "no binary {name}: not on PATH and not a library the loader's cache knows (ldconfig -p); \
         give its path"
    ))
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `ldconfig -p` lines: `\tlibx264.so.164 (libc6,x86-64) => /lib/x86_64-linux-gnu/libx264.so.164`.
fn in_loader_cache(name: &str) -> Option<PathBuf> {
    let output = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| {
            std::process::Command::new("/sbin/ldconfig")
                .arg("-p")
                .output()
        })
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let entries: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| l.contains("x86-64") || !l.contains("libc6,"))
        .filter_map(|l| {
            let (left, path) = l.split_once("=>")?;
            Some((left.split_whitespace().next()?, path.trim()))
        })
        .collect();
    let exact = entries.iter().find(|(soname, _)| *soname == name);
    let versioned = || {
        entries.iter().find(|(soname, _)| {
            soname
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with('.'))
        })
    };
    exact.or_else(versioned).map(|(_, p)| PathBuf::from(p))
}

/// Above this share of a thread's time, the probes themselves are what is measured.
pub const DOMINATING_SHARE_PCT: f64 = 5.0;

/// What a report says of a run's probes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeSummary {
    pub probes: Vec<crate::model::ProbeFacts>,
    /// `run --pair` stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<crate::model::PairFacts>,
    pub lost: u64,
    /// The thread the probes cost most: its id, the cost in ns, and that as a share of the
    /// run's length.
    pub busiest_tid: Option<u32>,
    pub busiest_cost_ns: i64,
    pub busiest_share_pct: f64,
}

/// The probes of a recorded run, if it had any.
pub fn summary(meta: &crate::model::RunMeta) -> Option<ProbeSummary> {
    let facts = &meta.session;
    if facts.probes.is_empty() && facts.probe_pairs.is_empty() {
        return None;
    }
    let length_ns = meta.window_end_ns.max(1);
    // Tracepoints alone cost the run's threads nothing framelab measured.
    let (tid, cost) = facts
        .probe_busiest_thread
        .filter(|(_, cost)| *cost > 0)
        .unzip();
    let cost = cost.unwrap_or(0);
    Some(ProbeSummary {
        probes: facts.probes.clone(),
        pairs: facts.probe_pairs.clone(),
        lost: facts.probe_records_lost,
        busiest_tid: tid,
        busiest_cost_ns: cost,
        busiest_share_pct: cost as f64 * 100.0 / length_ns as f64,
    })
}

/// Whether `path` is one of the files the run mapped: the same file by device and inode, as
/// a probe's path is often another name for it (/lib for /usr/lib, a soname's link).
fn was_loaded(path: &str, loaded: &std::collections::BTreeSet<String>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &str| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    loaded.contains(path) || id(path).is_some_and(|want| loaded.iter().any(|l| id(l) == Some(want)))
}

/// One stderr line per probe that saw nothing or lost something: the end of a run is where
/// someone reading the terminal looks (the report's header says the same).
pub fn say_what_was_missed(
    facts: &[crate::model::ProbeFacts],
    lost: u64,
    loaded: &std::collections::BTreeSet<String>,
) {
    for p in facts {
        let option = if p.frame_probe {
            format!("--frame-probe {}", p.target)
        } else {
            let flag = match p.kind.as_str() {
                "usdt" => "--usdt",
                "usdt event" => "--usdt-event",
                "tracepoint" => "--tracepoint",
                _ => "--probe",
            };
            format!("{flag} {}={}", p.stage, p.target)
        };
        if p.hits == 0 && p.kind != "tracepoint" {
            // What the run's processes had mapped, when it was read.
            let maps = if loaded.is_empty() {
                "check that the command loads that very file: ldd, or /proc/PID/maps while it \
                 runs"
                    .to_owned()
            } else if was_loaded(&p.path, loaded) {
                "the file was loaded: the function was never called".to_owned()
            } else {
                let names: Vec<&str> = loaded
                    .iter()
                    .map(|l| l.rsplit('/').next().unwrap_or(l))
                    .filter(|n| n.contains(".so") || !n.contains('.'))
                    .collect();
                format!(
                    "the run's processes never loaded that file; they mapped {}",
                    names.join(", ")
                )
            };
            log::warn!(
                "{option}: 0 hits: no process of the run called {} in {} \
                 ({maps})",
                p.function,
                p.path
            );
        }
        if p.cut_by_loss > 0 {
            log::warn!(
                "{option}: {} open when the kernel lost samples {} not made spans \
                 (their returns may have been lost)",
                crate::units::plural(p.cut_by_loss, "call", "calls"),
                if p.cut_by_loss == 1 { "was" } else { "were" },
            );
        }
        if p.unmatched_returns + p.unfinished > 0 {
            log::warn!(
                "{option}: {} from calls entered before the probe was placed (or whose \
                 entry was lost) and {} still running at the end were not made spans",
                crate::units::plural(p.unmatched_returns, "return", "returns"),
                crate::units::plural(p.unfinished, "call", "calls"),
            );
        }
    }
    if lost > 0 {
        // A lost entry of the frame probe is a frame not counted: the later ones are
        // numbered low.
        let frames = if facts.iter().any(|p| p.frame_probe) {
            "; frames after the loss may be numbered low"
        } else {
            ""
        };
        log::warn!(
            "{lost} probe samples were lost (the kernel's ring was full): \
             their spans are missing{frames}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_mapped_under_another_name_was_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("libx.so.1.2");
        std::fs::write(&real, b"code").unwrap();
        let soname = dir.path().join("libx.so");
        std::os::unix::fs::symlink(&real, &soname).unwrap();
        let other = dir.path().join("liby.so");
        std::fs::write(&other, b"code").unwrap();
        let loaded = [real.to_str().unwrap().to_owned()].into_iter().collect();
        assert!(was_loaded(soname.to_str().unwrap(), &loaded));
        assert!(was_loaded(real.to_str().unwrap(), &loaded));
        assert!(!was_loaded(other.to_str().unwrap(), &loaded));
        assert!(!was_loaded("/no/such/file", &loaded));
    }

    #[test]
    fn a_missing_binary_says_where_it_was_looked_for() {
        let e = find_binary("no-such-binary-framelab").unwrap_err();
        assert!(e.contains("not on PATH"), "{e}");
        let e = find_binary("/no/such/file").unwrap_err();
        assert!(e.contains("does not exist: check the path"), "{e}");
        let e = find_binary("./no-such-file").unwrap_err();
        let here = std::env::current_dir().unwrap();
        assert!(
            e.contains(&format!("relative to {}", here.display())),
            "{e}"
        );
    }
}
