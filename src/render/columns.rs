//! The report's tables (the run report, `report` of several runs, `sources`, `timers`):
//! aligned plain text with the first column (and words, `Column::words`) left-aligned,
//! numbers right-aligned, each column at least its minimum width; and GitHub tables.

use super::style::Style;

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

fn width_of(s: &str) -> usize {
    s.chars().count()
}

/// Renders `rows` under `columns`, each line indented by two spaces; `unit` follows the
/// header (`µs`). The first column gets one space of gap, the others two.
/// Every cell and header is shown through `crate::display::name`: names from a program or a
/// trace can hold terminal escapes or run for kilobytes.
pub fn render(columns: &[Column], rows: &[Vec<String>], unit: Option<&str>, st: &Style) -> String {
    let shown = |s: &str| crate::display::name(s).into_owned();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| shown(c)).collect())
        .collect();
    let columns: Vec<Column> = columns
        .iter()
        .map(|c| Column {
            header: shown(&c.header),
            min_width: c.min_width,
            left: c.left,
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(c, col)| {
            let gap = if c == 0 { 1 } else { 2 };
            let longest = rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|s| width_of(s))
                .chain(std::iter::once(width_of(&col.header)))
                .max()
                .unwrap_or(0);
            col.min_width.max(longest + gap)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let mut out = String::from("  ");
        for (c, cell) in cells.iter().enumerate() {
            let pad = widths[c].saturating_sub(width_of(cell));
            if c == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else if columns[c].left {
                out.push_str("  ");
                out.push_str(cell);
                out.push_str(&" ".repeat(pad.saturating_sub(2)));
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_string()
    };
    let mut header = line(columns.iter().map(|c| c.header.as_str()).collect());
    if let Some(unit) = unit {
        header.push_str("   ");
        header.push_str(unit);
    }
    let mut out = String::new();
    // Bold the header text only, not the indentation.
    out.push_str("  ");
    out.push_str(&st.bold(&header[2..]));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row.iter().map(|s| s.as_str()).collect()));
        out.push('\n');
    }
    out
}

fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// A GitHub table: the first column left-aligned, the rest right-aligned. Every cell is
/// shown through `crate::display` (escaped, cut, Markdown escaped: a `|` in a name ends no
/// cell); headers holding names are escaped by the caller.
pub fn gfm_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let mut out = row(headers);
    let align: Vec<String> = (0..headers.len())
        .map(|c| if c == 0 { ":---" } else { "---:" }.to_string())
        .collect();
    out.push_str(&row(&align));
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .map(|c| crate::display::markdown(&crate::display::name(c)))
            .collect();
        out.push_str(&row(&cells));
    }
    out
}
