//! The rendering layer: the one [`Format`] every command writes in and which formats each
//! command accepts, the one [`Table`] of typed cells ([`Value`]), how a cell shows a number
//! in its unit, and the neutral document (its plots included) with a writer per format.
//! Features compute; this layer says how their results are shown.

pub mod cells;
pub mod chart;
pub mod columns;
pub mod csv;
pub mod document;
pub mod format;
pub mod html_writer;
pub mod human;
pub mod line;
pub mod plot;
pub mod scaled;
pub mod style;
pub mod table;
pub mod value;

pub use format::{Format, Formats};
pub use table::Table;
pub use value::Value;

/// Every number in `text`, sorted: what a test compares to hold that two formats of one
/// document show the same figures.
#[cfg(test)]
pub(crate) fn numbers_in(text: &str) -> Vec<String> {
    let mut all: Vec<String> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|t| t.trim_matches('.'))
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect();
    all.sort();
    all
}
