//! `framelab demo`: the built-in pipeline end to end.

mod basics;
mod pipeline;
