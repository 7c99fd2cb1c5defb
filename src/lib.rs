//! framelab: per-frame, per-stage timing of real-time pipelines against the frame budget.

pub mod analyze;
pub mod bench;
pub mod compare;
pub mod demo;
pub mod destination;
pub mod display;
pub mod experiment;
pub mod export;
mod fast_map;
pub mod formats;
pub mod hist;
pub mod history;
pub mod host;
pub mod import;
pub mod model;
pub mod output;
pub mod parallel;
pub mod perf_event;
pub mod probes;
pub mod profile;
pub mod read_ahead;
pub mod render;
pub mod report;
pub mod run;
pub mod sample;
pub mod sched;
pub mod services;
pub mod session;
/// Snapshot comparison for the crate's own tests and its integration tests.
#[doc(hidden)]
pub mod snapshot;
pub mod spill;
pub mod stats;
pub mod store;
pub mod tags;
pub mod timers;
pub mod units;
pub mod usage;
pub mod whatif;
mod write_behind;

#[cfg(test)]
mod clap_boundary;
#[cfg(test)]
mod import_graph;
#[cfg(test)]
mod print_boundary;
#[cfg(test)]
mod said_in_tests;
