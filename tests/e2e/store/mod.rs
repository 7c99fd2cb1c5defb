//! The run file: round trips, damaged files, a killed writer, spans in blocks.

mod bad_files;
mod blocks;
mod kill;
mod roundtrip;
