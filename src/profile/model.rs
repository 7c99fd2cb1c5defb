//! A run's profile as stored (run file schema 6) and loaded: frames and stacks
//! deduplicated, each sample pointing at its stack.

use serde::Serialize;

/// One function (or an address that could not be named) in some stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Frame {
    /// The function's name (demangled), or `module+0xoffset` when unknown.
    pub function: String,
    /// The binary's file name (`[kernel]`, `[jit]` for perf-map code).
    pub module: String,
    /// Whether a symbol was found.
    pub known: bool,
}

/// A node of the prefix tree of stacks: a stack is its leaf node; `parent` walks towards
/// the root (`None` at the outermost frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackNode {
    pub parent: Option<u32>,
    pub frame: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProfileSample {
    /// Nanoseconds since the run's launch, on the run's clock (CLOCK_MONOTONIC).
    pub t_ns: i64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u32,
    /// The leaf node of its stack; `None` for a sample with no address at all.
    pub stack: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// `cycles` or `cpu-clock`.
    pub event: String,
    pub frequency_hz: u64,
    /// `frame pointers` (the kernel's call chains) or `dwarf` (copied stacks unwound after).
    pub unwinding: String,
    pub kernel_stacks: bool,
    /// Samples the kernel could not write.
    pub lost: u64,
    pub throttled: u64,
    /// Samples whose stack reached the depth limit (their outermost frames are missing).
    pub truncated: u64,
    pub notes: Vec<String>,
    pub frames: Vec<Frame>,
    pub nodes: Vec<StackNode>,
    pub samples: Vec<ProfileSample>,
}

impl Profile {
    /// The frames of a stack, leaf first.
    pub fn stack_frames(&self, leaf: Option<u32>) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors(leaf, |&n| self.nodes[n as usize].parent)
            .map(|n| self.nodes[n as usize].frame)
    }

    /// Samples whose leaf frame has no name.
    pub fn unknown_leaves(&self) -> usize {
        self.samples
            .iter()
            .filter(|s| match s.stack {
                Some(n) => !self.frames[self.nodes[n as usize].frame as usize].known,
                None => true,
            })
            .count()
    }
}

/// Builds the prefix tree: frames and nodes interned as stacks are added.
#[derive(Default)]
pub struct StackTree {
    pub frames: Vec<Frame>,
    pub nodes: Vec<StackNode>,
    frame_ids: std::collections::HashMap<Frame, u32>,
    node_ids: std::collections::HashMap<(Option<u32>, u32), u32>,
}

impl StackTree {
    pub fn frame(&mut self, frame: Frame) -> u32 {
        let next = self.frames.len() as u32;
        *self.frame_ids.entry(frame.clone()).or_insert_with(|| {
            self.frames.push(frame);
            next
        })
    }

    /// The leaf node of a stack given root first.
    pub fn stack(&mut self, frames_root_first: &[u32]) -> Option<u32> {
        let mut parent = None;
        for &frame in frames_root_first {
            let next = self.nodes.len() as u32;
            let id = *self.node_ids.entry((parent, frame)).or_insert_with(|| {
                self.nodes.push(StackNode { parent, frame });
                next
            });
            parent = Some(id);
        }
        parent
    }
}
