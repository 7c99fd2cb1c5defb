//! `framelab import`: each format from real captures.

mod chrome;
mod csv;
mod ffmpeg_bpftrace;
mod perfetto;
mod wayland;
