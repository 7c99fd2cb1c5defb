//! DWARF unwinding of the user stacks copied with each sample, for binaries built without
//! frame pointers (a default Rust or C++ release build): the registers and the top of the
//! stack are walked with each module's `.eh_frame` (or `.debug_frame`) by `framehop`, the
//! unwinder samply uses, as `perf --call-graph dwarf` does with libunwind/libdw. Sections
//! are read with `object`. Unwinding happens on the drain thread, while the process's
//! mappings are known; the copied stacks are not kept.

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment};

/// Section bytes shared by every process that maps the same file.
#[derive(Clone, Default)]
pub struct Bytes(Arc<[u8]>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// What unwinding needs of one file: its unwind sections and where they and its
/// segments are in its own address space (SVMA).
struct FileInfo {
    text: Option<(Range<u64>, Bytes)>,
    eh_frame: Option<(Range<u64>, Bytes)>,
    eh_frame_hdr: Option<(Range<u64>, Bytes)>,
    debug_frame: Option<Bytes>,
    /// (file offset, file size, vaddr) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
}

fn read_file(path: &str) -> Option<FileInfo> {
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let section = |name: &str| {
        let s = file.section_by_name(name)?;
        let bytes = s.uncompressed_data().ok()?;
        Some((
            s.address()..s.address() + s.size(),
            Bytes(Arc::from(&bytes[..])),
        ))
    };
    Some(FileInfo {
        text: section(".text"),
        eh_frame: section(".eh_frame"),
        eh_frame_hdr: section(".eh_frame_hdr"),
        debug_frame: section(".debug_frame").map(|(_, b)| b),
        segments: file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (offset, size, s.address())
            })
            .collect(),
    })
}

/// One executable mapping of a process: [start, end) maps the file from `pgoff`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecMapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub path: String,
}

#[derive(Default)]
pub struct Unwinding {
    files: HashMap<String, Option<Arc<FileInfo>>>,
    /// Per process: the generation of its mappings its unwinder was built from, and the unwinder.
    processes: HashMap<u32, (u64, UnwinderX86_64<Bytes>)>,
    cache: Option<CacheX86_64>,
}

impl Unwinding {
    fn file(&mut self, path: &str) -> Option<Arc<FileInfo>> {
        self.files
            .entry(path.to_owned())
            .or_insert_with(|| read_file(path).map(Arc::new))
            .clone()
    }

    fn module(&mut self, m: &ExecMapping) -> Option<Module<Bytes>> {
        let info = self.file(&m.path)?;
        // The segment holding the mapped offset says how file offsets become addresses.
        let &(offset, _, vaddr) = info
            .segments
            .iter()
            .find(|(off, size, _)| *off <= m.pgoff && m.pgoff < off + size.max(&1))?;
        let base_avma = (m.start + offset).wrapping_sub(m.pgoff).wrapping_sub(vaddr);
        let split = |s: &Option<(Range<u64>, Bytes)>| match s {
            Some((r, b)) => (Some(r.clone()), Some(b.clone())),
            None => (None, None),
        };
        let (text_svma, text) = split(&info.text);
        let (eh_frame_svma, eh_frame) = split(&info.eh_frame);
        let (eh_frame_hdr_svma, eh_frame_hdr) = split(&info.eh_frame_hdr);
        let sections = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma,
            text,
            eh_frame_svma,
            eh_frame,
            eh_frame_hdr_svma,
            eh_frame_hdr,
            debug_frame: info.debug_frame.clone(),
            ..Default::default()
        };
        Some(Module::new(
            m.path.clone(),
            m.start..m.end,
            base_avma,
            sections,
        ))
    }

    /// The user frames of one sample, leaf first, as lookup addresses (a return address
    /// less one), and whether the walk stopped at the end of the copied stack (the stack
    /// was deeper: its outermost frames are missing); empty when nothing could be unwound. `regs` are bp, sp, ip. The
    /// process's unwinder is rebuilt from `mappings()` when its `generation` changed.
    pub fn unwind(
        &mut self,
        pid: u32,
        generation: u64,
        mappings: impl FnOnce() -> Vec<ExecMapping>,
        regs: &[u64],
        stack: &[u8],
    ) -> (Vec<u64>, bool) {
        let [bp, sp, ip] = regs else {
            return (Vec::new(), false);
        };
        let stale = self
            .processes
            .get(&pid)
            .is_none_or(|(built, _)| *built != generation);
        if stale {
            let mut unwinder = UnwinderX86_64::new();
            for m in mappings() {
                if let Some(module) = self.module(&m) {
                    unwinder.add_module(module);
                }
            }
            self.processes.insert(pid, (generation, unwinder));
        }
        let cache = self.cache.get_or_insert_with(CacheX86_64::new);
        let Some((_, unwinder)) = self.processes.get(&pid) else {
            return (Vec::new(), false);
        };
        let sp = *sp;
        let mut past_copy = false;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let offset = addr.checked_sub(sp).ok_or(())? as usize;
            let Some(bytes) = stack.get(offset..offset.saturating_add(8)) else {
                past_copy = true;
                return Err(());
            };
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let mut frames = Vec::new();
        let mut iter = unwinder.iter_frames(
            *ip,
            UnwindRegsX86_64::new(*ip, sp, *bp),
            cache,
            &mut read_stack,
        );
        while let Ok(Some(frame)) = iter.next() {
            frames.push(match frame {
                FrameAddress::InstructionPointer(a) => a,
                FrameAddress::ReturnAddress(a) => u64::from(a) - 1,
            });
            if frames.len() >= 1024 {
                break;
            }
        }
        (frames, past_copy)
    }
}
