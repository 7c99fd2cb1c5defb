//! The run file: round trips, damaged files, a killed writer.

mod bad_files;
mod kill;
mod roundtrip;
