//! framelab's end-to-end tests: one test program (each program links the whole crate, which
//! is most of a test build on two cores), a module per subcommand, one `common` for the
//! binary, the example programs and run files. `cargo test --test e2e run::signals` runs
//! one module. Two stay programs of their own, for what is process-wide: `report_memory`
//! (its global allocator counts every allocation in the process) and `demo_signal` (it
//! sends SIGINT to its own process).

mod bench;
mod cli;
mod common;
mod compare;
mod demo;
mod export;
mod hist;
mod history;
mod import;
mod probes;
mod profile;
mod report;
mod run;
mod sdk;
mod store;
mod timers;
