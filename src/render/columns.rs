//! The report's columns (the run report, `report` of several runs, `sources`, `timers`):
//! each column's header, minimum width and whether it holds words, made into the one
//! [`Table`] in the report's layout (`Layout::report`).

use super::style::Style;
use super::table::{Layout, Table};
use super::value::Value;

#[derive(Clone)]
pub struct Column {
    pub header: String,
    /// The narrowest the column may be, so tables line up with the reference layout.
    pub min_width: usize,
    /// Left-aligned: the column holds words, not numbers.
    pub left: bool,
}

impl Column {
    pub fn new(header: impl Into<String>, min_width: usize) -> Column {
        Column {
            header: header.into(),
            min_width,
            left: false,
        }
    }

    /// A column of words (a role), left-aligned after its gap.
    pub fn words(header: impl Into<String>, min_width: usize) -> Column {
        Column {
            left: true,
            ..Column::new(header, min_width)
        }
    }
}

/// `rows` under `columns` in the report's layout; when `unit_once`, the unit the figures
/// leave unsaid (`µs`, from the cells' kinds) is named once after the text header.
/// Every cell is a name: names from a program or a trace can hold terminal escapes,
/// Markdown or kilobytes.
pub fn table_of(columns: &[Column], rows: Vec<Vec<Value>>, unit_once: bool) -> Table {
    let headers = columns.iter().map(|c| c.header.clone()).collect();
    let min_widths = columns.iter().map(|c| c.min_width).collect();
    let words = (columns.iter().enumerate())
        .filter(|(_, c)| c.left)
        .map(|(i, _)| i)
        .collect();
    Table {
        headers,
        rows,
        ..Table::default()
    }
    .with_every_cell_a_name()
    .with_layout(Layout::report(min_widths, words, unit_once))
}

/// [`table_of`] as aligned text, its header bold when `st` shows colour.
pub fn render(columns: &[Column], rows: &[Vec<Value>], unit_once: bool, st: &Style) -> String {
    table_of(columns, rows.to_vec(), unit_once).text(st)
}
