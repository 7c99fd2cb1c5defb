//! `framelab compare`: tables, the gate, bad input and the statistics against references.

mod bad_input;
mod gate;
mod names;
mod stats_reference;
mod stats_simulation;
mod tables;
