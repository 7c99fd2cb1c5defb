//! Sampled CPU profiles of every process of a run (`--profile`), attributed to the stage
//! span open on the sampled thread at that instant (docs/profiling.md).
//!
//! - `perf`, `records`, `maps`, `unwind`, `recorder`: sampling while the run goes
//!   (perf_event_open), user stacks unwound with DWARF where asked;
//! - `symbols`: naming the addresses once it has ended;
//! - `model`: the profile as stored (run file schema 6);
//! - `attribute`: each sample's stage and frame;
//! - `summary`, `render`, `diff`, `command`: what `framelab profile` prints.

pub mod attribute;
pub mod command;
pub mod diff;
mod maps;
pub mod model;
pub mod perf;
mod recorder;
mod records;
pub mod render;
pub mod summary;
mod symbols;
mod unwind;

pub use model::{Frame, Profile, ProfileSample, StackNode, StackTree};
pub use recorder::{CallGraph, ProfileOptions, Profiler, RawSample, Recording, RunProfiler};
pub use symbols::symbolize;

/// The default `--profile` rate: 99 Hz, not 100, so sampling does not run in lockstep
/// with timers of the program.
pub const DEFAULT_HZ: u64 = 99;
