//! `framelab run`: sessions, services, watched processes, telemetry, the scheduler, signals and the run file.

mod accounting;
mod basics;
mod cpu_taken;
mod disk_full;
mod drain;
mod guard;
mod metrics;
mod queue;
mod rings;
mod roles;
mod rungroup;
mod sched;
mod services;
mod session_dirs;
mod signals;
mod spill;
mod telemetry;
mod telemetry_nvml;
mod telemetry_sources;
mod watch;
