//! Naming the addresses of a recording, once the run has ended: ELF symbol tables and
//! DWARF (with inlined functions) through `blazesym`, kernel addresses from
//! /proc/kallsyms, JIT code from `/tmp/perf-PID.map`. `blazesym` (from the libbpf
//! project) reads all of those, caches each binary once, and takes file offsets, which
//! is what the recording kept. What cannot be named is shown as `module+0xoffset` and
//! counted as unknown.

use std::collections::HashMap;
use std::path::Path;

use blazesym::symbolize::source::{Elf, Kernel, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use super::maps::{Location, Module};
use super::model::{Frame, Profile, ProfileSample, StackTree};
use super::recorder::Recording;

/// Names for each location: one location may be several frames (inlined calls), outermost
/// first.
type Names = HashMap<Location, Vec<Frame>>;

/// Turns a recording into a profile; times become nanoseconds after `origin_mono_ns`.
pub fn symbolize(recording: Recording, origin_mono_ns: i64) -> Profile {
    let symbolizer = Symbolizer::builder()
        .enable_inlined_fns(true)
        .enable_code_info(false)
        .build();
    let mut names = Names::new();
    let mut notes = recording.notes.clone();
    name_files(&symbolizer, &recording, &mut names, &mut notes);
    name_kernel(&symbolizer, &recording, &mut names);
    name_anonymous(&recording, &mut names);

    let mut tree = StackTree::default();
    let mut frame_ids = Vec::new();
    let leaves: Vec<Option<u32>> = recording
        .stacks
        .iter()
        .map(|stack| {
            frame_ids.clear();
            for location in stack {
                for frame in names.get(location).into_iter().flatten() {
                    frame_ids.push(tree.frame(frame.clone()));
                }
            }
            tree.stack(&frame_ids)
        })
        .collect();
    let samples = recording
        .samples
        .iter()
        .map(|s| ProfileSample {
            t_ns: (s.mono_ns as i64).saturating_sub(origin_mono_ns),
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            stack: leaves[s.stack as usize],
        })
        .collect();
    Profile {
        event: recording.spec.event.name().to_owned(),
        frequency_hz: recording.spec.hz,
        unwinding: if recording.spec.stack_bytes > 0 {
            "dwarf".to_owned()
        } else {
            "frame pointers".to_owned()
        },
        kernel_stacks: recording.spec.kernel,
        lost: recording.lost,
        throttled: recording.throttled,
        truncated: recording.truncated,
        notes,
        frames: tree.frames,
        nodes: tree.nodes,
        samples,
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned())
}

fn unknown(module: &str, offset: u64) -> Vec<Frame> {
    vec![Frame {
        function: format!("{module}+{offset:#x}"),
        module: module.to_owned(),
        known: false,
    }]
}

/// The frames of one symbolized address: the function, then the calls inlined into it.
fn frames_of(result: &Symbolized, module: &str, offset: u64) -> Vec<Frame> {
    match result {
        Symbolized::Sym(sym) => {
            let mut frames = vec![Frame {
                function: sym.name.to_string(),
                module: module.to_owned(),
                known: true,
            }];
            frames.extend(sym.inlined.iter().map(|f| Frame {
                function: f.name.to_string(),
                module: module.to_owned(),
                known: true,
            }));
            frames
        }
        Symbolized::Unknown(_) => unknown(module, offset),
    }
}

fn name_files(
    symbolizer: &Symbolizer,
    recording: &Recording,
    names: &mut Names,
    notes: &mut Vec<String>,
) {
    let mut by_module: HashMap<u32, Vec<u64>> = HashMap::new();
    for location in recording.stacks.iter().flatten() {
        if let Location::File { module, offset } = *location {
            by_module.entry(module).or_default().push(offset);
        }
    }
    for (module, mut offsets) in by_module {
        offsets.sort_unstable();
        offsets.dedup();
        let Module { path, build_id } = &recording.maps.modules[module as usize];
        let shown = file_name(path);
        // The kernel's vDSO (clock_gettime...) is no file: framelab's own copy is the same.
        let vdso_file = (path == "[vdso]").then(own_vdso).flatten();
        let path = vdso_file
            .as_ref()
            .map_or(path.as_str(), |f| f.path().to_str().unwrap_or(""));
        let source = Source::Elf(Elf::new(path));
        // A binary deleted since, or never a file (`[vdso]`): every address unknown.
        let mut readable = Path::new(path).is_file();
        if readable && !build_id.is_empty() {
            let now = blazesym::helper::read_elf_build_id(path).ok().flatten();
            if now.is_some_and(|now| now.as_ref() != build_id.as_slice()) {
                notes.push(format!(
                    "{path} was replaced during the run (its build id changed): its addresses \
                     are shown as {shown}+0xoffset"
                ));
                readable = false;
            }
        }
        let results = if readable {
            symbolizer
                .symbolize(&source, Input::FileOffset(&offsets))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for (i, &offset) in offsets.iter().enumerate() {
            let frames = match results.get(i) {
                Some(result) => frames_of(result, &shown, offset),
                None => unknown(&shown, offset),
            };
            names.insert(Location::File { module, offset }, frames);
        }
    }
}

/// framelab's own vDSO image, written to a temporary file for the symbolizer.
fn own_vdso() -> Option<tempfile::NamedTempFile> {
    use std::io::Write;
    // SAFETY: getauxval has no preconditions.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    if base != start || end <= start {
        return None;
    }
    // SAFETY: the vDSO mapping [start, end) of this process is readable and never unmapped.
    let image = unsafe { std::slice::from_raw_parts(start as *const u8, (end - start) as usize) };
    let mut file = tempfile::NamedTempFile::new().ok()?;
    file.write_all(image).ok()?;
    Some(file)
}

fn name_kernel(symbolizer: &Symbolizer, recording: &Recording, names: &mut Names) {
    let mut addrs: Vec<u64> = recording
        .stacks
        .iter()
        .flatten()
        .filter_map(|l| match l {
            Location::Kernel(a) => Some(*a),
            _ => None,
        })
        .collect();
    if addrs.is_empty() {
        return;
    }
    addrs.sort_unstable();
    addrs.dedup();
    // Symbols only: a vmlinux with DWARF is rarely there, and slow to look for.
    let kernel = Kernel {
        vmlinux: blazesym::MaybeDefault::None,
        ..Kernel::default()
    };
    let results = symbolizer
        .symbolize(&Source::Kernel(kernel), Input::AbsAddr(&addrs))
        .unwrap_or_default();
    for (i, &addr) in addrs.iter().enumerate() {
        let frames = match results.get(i) {
            Some(r) => frames_of(r, "[kernel]", addr),
            None => unknown("[kernel]", addr),
        };
        names.insert(Location::Kernel(addr), frames);
    }
}

/// JIT code named by the runtime in `/tmp/perf-PID.map` (`START SIZE name`, hex), and
/// addresses in no mapping at all.
fn name_anonymous(recording: &Recording, names: &mut Names) {
    let mut perf_maps: HashMap<u32, Vec<(u64, u64, String)>> = HashMap::new();
    for location in recording.stacks.iter().flatten() {
        let frames = match *location {
            Location::Anon { pid, addr } => {
                let map = perf_maps.entry(pid).or_insert_with(|| read_perf_map(pid));
                match map
                    .iter()
                    .find(|(start, size, _)| *start <= addr && addr < start + size)
                {
                    Some((_, _, name)) => vec![Frame {
                        function: name.clone(),
                        module: "[jit]".to_owned(),
                        known: true,
                    }],
                    None => unknown("[anon]", addr),
                }
            }
            Location::Unmapped(addr) => unknown("[unknown]", addr),
            _ => continue,
        };
        names.insert(*location, frames);
    }
}

fn read_perf_map(pid: u32) -> Vec<(u64, u64, String)> {
    let text = std::fs::read_to_string(format!("/tmp/perf-{pid}.map")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let start = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
            let size = u64::from_str_radix(parts.next()?.trim_start_matches("0x"), 16).ok()?;
            Some((start, size, parts.next()?.trim().to_owned()))
        })
        .collect()
}
