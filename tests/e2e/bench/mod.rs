//! `framelab bench`: experiments, interruptions and a real HTTP server under `ab`.

mod basics;
mod http_ab;
mod interrupt;
