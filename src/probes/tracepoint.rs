//! Kernel tracepoints as events (`--tracepoint NAME=SUBSYSTEM:EVENT[:FIELD]`): found in
//! tracefs (mounted by framelab when root and missing, `crate::sched::tracefs`), opened on
//! every CPU through the shared perf-event layer with their raw record, and keyed by one
//! integer field of it.

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use crate::perf_event::{self, bindings as b};
use crate::sched::tracefs::{self, Field};

/// A tracepoint found: its id, the field its events are keyed by, and its tracefs directory.
#[derive(Clone, Debug)]
pub struct Found {
    pub id: u64,
    pub key: Field,
    pub dir: PathBuf,
}

/// Finds `group:event` and the field to key by (`field`, or the first after the common
/// ones). `Err` is the line to print.
pub fn find(group: &str, event: &str, field: Option<&str>) -> Result<Found, String> {
    let root = tracefs::root()?;
    let dir = root.join("events").join(group).join(event);
    if !dir.is_dir() {
        let group_dir = root.join("events").join(group);
        let hint = if group_dir.is_dir() {
            let mut names: Vec<String> = std::fs::read_dir(&group_dir)
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().is_dir())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            // Closest first: containing the name, then a few edits away.
            let mut scored: Vec<(usize, &str)> = names
                .iter()
                .map(String::as_str)
                .filter_map(|n| {
                    if n.contains(event) || event.contains(n) {
                        return Some((0, n));
                    }
                    let d = super::elf::edit_distance(n, event);
                    (d <= event.len() / 6 + 1).then_some((d, n))
                })
                .collect();
            scored.sort();
            let close: Vec<&str> = scored.into_iter().take(5).map(|(_, n)| n).collect();
            match close.is_empty() {
                true => format!("list {group}'s with ls {}", group_dir.display()),
                false => format!("near matches: {}", close.join(", ")),
            }
        } else {
            format!(
                "there is no subsystem {group}: list them with ls {}",
                root.join("events").display()
            )
        };
        return Err(format!(
            "this kernel has no tracepoint {group}:{event}; {hint}"
        ));
    }
    let tracepoint = tracefs::tracepoint(&root, group, event)?;
    let mut fields: Vec<(&String, &Field)> = tracepoint.fields.iter().collect();
    fields.sort_by_key(|(_, f)| f.offset);
    let named = |n: &str| fields.iter().find(|(name, _)| name.as_str() == n);
    let key = match field {
        Some(wanted) => named(wanted).map(|(_, f)| **f).ok_or_else(|| {
            let names: Vec<&str> = fields
                .iter()
                .map(|(n, _)| n.as_str())
                .filter(|n| !n.starts_with("common_"))
                .collect();
            format!(
                "tracepoint {group}:{event} has no field {wanted}; its fields: {}",
                names.join(", ")
            )
        })?,
        // Key 0 when it has no field of its own.
        None => fields
            .iter()
            .find(|(n, _)| !n.starts_with("common_") && !n.starts_with("__"))
            .map(|(_, f)| **f)
            .unwrap_or(Field { offset: 0, size: 0 }),
    };
    if ![0, 1, 2, 4, 8].contains(&key.size) {
        return Err(format!(
            "tracepoint {group}:{event}'s field {} is not an integer ({} bytes): key it by \
             another field",
            field.unwrap_or("?"),
            key.size
        ));
    }
    Ok(Found {
        id: tracepoint.id,
        key,
        dir,
    })
}

/// Opens tracepoint `id` on `cpu` for every task, disabled, with its raw record.
pub fn open(id: u64, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented default.
    let mut attr: b::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.size = std::mem::size_of::<b::perf_event_attr>() as u32;
    attr.type_ = b::PERF_TYPE_TRACEPOINT;
    attr.config = id;
    attr.__bindgen_anon_1.sample_period = 1;
    attr.sample_type = super::uprobe::SAMPLE_TYPE | b::PERF_SAMPLE_RAW as u64;
    attr.set_disabled(1);
    // A lost-samples record then says when it was written (`Recorder::drain`).
    attr.set_sample_id_all(1);
    // Timed on CLOCK_MONOTONIC, the clock of every span.
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC;
    perf_event::open(&mut attr, -1, cpu)
}

/// Why a tracepoint could not be opened: system-wide tracepoints need more than a profile
/// of one's own processes.
pub fn refusal(error: &io::Error, what: &str) -> String {
    match error.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open refused the tracepoint of {what} ({error}): run as root, give \
             framelab CAP_PERFMON (sudo setcap cap_perfmon+ep \"$(command -v framelab)\"), or \
             allow it to every user (sudo sysctl kernel.perf_event_paranoid=-1)"
        ),
        _ => format!("tracepoint of {what}: {}", perf_event::refusal(error)),
    }
}
