//! The one table of typed cells ([`Value`]), whatever shows it: aligned plain text or a
//! Markdown pipe table that pastes into a pull request, laid out as its [`Layout`] says (the
//! plain table, the report family's columns, `history show`'s grid, cells given as
//! Markdown), and serialised for the HTML page's script (`title`, `headers`, `rows`, each
//! cell as the text it shows). A table says which of its texts are names from outside
//! framelab ([`Names`]): Markdown escapes those whole.

use serde::Serialize;

use super::style::Style;
use super::value::Value;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Table {
    /// The heading the HTML page shows above it; text and Markdown leave it to the caller.
    pub title: String,
    pub headers: Vec<String>,
    /// Shown when written: the feature says what each cell holds, not how it reads.
    pub rows: Vec<Vec<Value>>,
    /// The page's script escapes every text itself.
    #[serde(skip)]
    pub names: Names,
    /// The page's script lays the table out itself.
    #[serde(skip)]
    pub layout: Layout,
}

/// Which headers and which columns' cells hold names (a stage, a variant, a file): in
/// Markdown they are kept from turning into markup (`display::markdown`), where the other
/// cells (figures, a fixed `[95% interval]`) are shown as [`Layout::markdown`] says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Names {
    pub headers: Vec<usize>,
    pub columns: Vec<usize>,
}

/// How a table is laid out. In text each line is indented, the first column is
/// left-aligned, then each column follows after a gap of two spaces: numbers right-aligned,
/// words ([`Layout::words`]) left-aligned. A column is as wide as its widest text and its
/// gap, and at least its minimum width, so tables line up across sections.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Spaces before each text line.
    pub indent: usize,
    /// The least gap after the first column's text (the other columns' is two spaces).
    pub first_gap: usize,
    /// The narrowest each column may be in text, its gap included; a column not named
    /// has none.
    pub min_widths: Vec<usize>,
    /// Columns after the first that hold words: left-aligned after their gap.
    pub words: Vec<usize>,
    /// The first column holds numbers: right-aligned in its width.
    pub numbers_first: bool,
    /// Name the unit the table's figures share ([`Table::unit`], `µs`) once: three spaces
    /// after the text header, and after the first header in Markdown (`stage (µs)`).
    pub unit_once: bool,
    /// The header bold on a terminal that shows colour.
    pub bold_header: bool,
    /// The most characters of a cell shown (`crate::display`): longer ones are cut.
    pub cut: usize,
    /// How Markdown shows the texts that are not names.
    pub markdown: MarkdownCells,
    /// Each column's line-up in Markdown's rule; none given: the first column plain, the
    /// others right.
    pub align: Vec<Align>,
    /// The Markdown rule without spaces (`|---|---|`).
    pub tight_rule: bool,
    /// Each text line laid out on its own, as a listing printed line by line: a column
    /// is its minimum width (or its text and gap) in that line alone, so a longer cell
    /// pushes the rest of its line right, and the line is kept whole (an empty last cell
    /// keeps the padding before it). `probes`' listing, kept byte for byte.
    pub ragged: bool,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            indent: 2,
            first_gap: 0,
            min_widths: Vec::new(),
            words: Vec::new(),
            numbers_first: false,
            unit_once: false,
            bold_header: false,
            cut: crate::display::NAME_CHARS,
            markdown: MarkdownCells::PipesEscaped,
            align: Vec::new(),
            tight_rule: false,
            ragged: false,
        }
    }
}

impl Layout {
    /// The report family's columns: one space at least after the first column, each column
    /// at least its minimum width, words left, the figures' unit after the bold header when
    /// `unit_once`; in Markdown a GitHub table whose every cell is a name (the header as
    /// given).
    pub fn report(min_widths: Vec<usize>, words: Vec<usize>, unit_once: bool) -> Layout {
        Layout {
            first_gap: 1,
            min_widths,
            words,
            unit_once,
            bold_header: true,
            markdown: MarkdownCells::AsGiven,
            align: vec![Align::Left],
            ..Layout::default()
        }
    }

    /// `history show`'s grid of `columns`: unindented, the columns of `words` left; every
    /// text a name (cut at `display::TEXT_CHARS`), under a tight plain rule in Markdown.
    pub fn grid(columns: usize, words: Vec<usize>) -> Layout {
        Layout {
            indent: 0,
            words,
            cut: crate::display::TEXT_CHARS,
            align: vec![Align::Plain; columns],
            tight_rule: true,
            ..Layout::default()
        }
    }

    /// Cells the feature gives as Markdown (a bar chart's bucket bounds as code spans), uncut, each
    /// column lined up as `align` says in Markdown's rule.
    pub fn markdown_given(align: Vec<Align>) -> Layout {
        Layout {
            // The feature cuts them itself, if it does.
            cut: usize::MAX,
            markdown: MarkdownCells::AsGiven,
            align,
            ..Layout::default()
        }
    }
}

/// How Markdown shows a text that is not a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkdownCells {
    /// Its `|` escaped: it ends no cell.
    PipesEscaped,
    /// As the feature gives it (already Markdown).
    AsGiven,
}

/// How a column lines up in Markdown: `---`, `:---` or `---:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Plain,
    Left,
    Right,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    pub fn push(&mut self, row: Vec<Value>) {
        self.rows.push(row);
    }

    /// The unit every figure that leaves one unsaid shares ([`Value::unit`]); `None` when
    /// there is none or they differ.
    pub fn unit(&self) -> Option<String> {
        common_unit(self.rows.iter().flatten())
    }

    /// The unit the table names once, if its layout asks: its figures'.
    pub fn named_unit(&self) -> Option<String> {
        self.unit().filter(|_| self.layout.unit_once)
    }

    /// The unit the cells of column `c` share, as [`Table::unit`].
    pub fn column_unit(&self, c: usize) -> Option<String> {
        common_unit(self.rows.iter().filter_map(|r| r.get(c)))
    }

    /// The table with the headers at `headers` and the cells of `columns` held as names.
    pub fn with_names(self, headers: &[usize], columns: &[usize]) -> Table {
        Table {
            names: Names {
                headers: headers.to_vec(),
                columns: columns.to_vec(),
            },
            ..self
        }
    }

    /// The table laid out as `layout` says.
    pub fn with_layout(self, layout: Layout) -> Table {
        Table { layout, ..self }
    }

    /// The table with every cell (not the headers) held as a name.
    pub fn with_every_cell_a_name(self) -> Table {
        let columns: Vec<usize> = (0..self.headers.len()).collect();
        let headers = self.names.headers.clone();
        self.with_names(&headers, &columns)
    }

    pub fn render(&self, markdown: bool) -> String {
        if markdown {
            self.markdown()
        } else {
            self.text(&Style::default())
        }
    }

    /// Headers and cells as text, as `crate::display` shows names: escaped, cut.
    fn shown(&self) -> Shown<'_> {
        let shown = |s: &str| crate::display::escaped(s, self.layout.cut).into_owned();
        Shown {
            headers: self.headers.iter().map(|h| shown(h)).collect(),
            rows: (self.rows.iter())
                .map(|r| r.iter().map(|v| shown(&v.shown())).collect())
                .collect(),
            names: &self.names,
            layout: &self.layout,
        }
    }

    /// Aligned plain text, the header bold when `st` shows colour and the layout asks.
    pub fn text(&self, st: &Style) -> String {
        let this = self.shown();
        let layout = this.layout;
        let (headers, rows) = (&this.headers, &this.rows);
        let width = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..headers.len())
            .map(|c| {
                let gap = if c == 0 { layout.first_gap } else { 2 };
                let longest = (rows.iter())
                    .filter_map(|r| r.get(c))
                    .map(|s| width(s))
                    .chain([width(&headers[c])])
                    .max()
                    .unwrap_or(0);
                let least = layout.min_widths.get(c).copied().unwrap_or(0);
                least.max(longest + gap)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (c, cell) in cells.iter().enumerate() {
                let column = match layout.ragged {
                    true => {
                        let gap = if c == 0 { layout.first_gap } else { 2 };
                        let least = layout.min_widths.get(c).copied().unwrap_or(0);
                        least.max(width(cell) + gap)
                    }
                    false => widths[c],
                };
                let pad = column.saturating_sub(width(cell));
                if c == 0 && layout.numbers_first {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                } else if c == 0 {
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad));
                } else if layout.words.contains(&c) {
                    out.push_str("  ");
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad.saturating_sub(2)));
                } else {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                }
            }
            match layout.ragged {
                true => out,
                false => out.trim_end().to_owned(),
            }
        };
        let indent = " ".repeat(layout.indent);
        let mut header = line(headers);
        if let Some(unit) = self.named_unit() {
            header.push_str("   ");
            header.push_str(&unit);
        }
        let header = match layout.bold_header {
            true => st.bold(&header),
            false => header,
        };
        let mut out = format!("{indent}{header}\n");
        for row in rows {
            out.push_str(&format!("{indent}{}\n", line(row)));
        }
        out
    }

    /// A Markdown pipe table: names escaped whole, the other texts as the layout says.
    pub fn markdown(&self) -> String {
        let this = self.shown();
        let layout = this.layout;
        // A cell's padding is text's (a column kept for a mark): Markdown has none.
        let escape = |s: &str, name: bool| match (name, layout.markdown) {
            (true, _) => crate::display::markdown(s.trim_end()),
            (false, MarkdownCells::PipesEscaped) => s.trim_end().replace('|', "\\|"),
            (false, MarkdownCells::AsGiven) => s.trim_end().to_owned(),
        };
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut headers: Vec<String> = (this.headers.iter().enumerate())
            .map(|(c, h)| escape(h, this.names.headers.contains(&c)))
            .collect();
        // The unit text names once after the header, Markdown after the first header.
        let unit = self.named_unit();
        if let (Some(unit), Some(first)) = (unit, headers.first_mut()) {
            first.push_str(&format!(" ({unit})"));
        }
        let mut out = line(headers);
        let rule: Vec<&str> = (0..this.headers.len())
            .map(|c| {
                let default = if c == 0 { Align::Plain } else { Align::Right };
                match layout.align.get(c).copied().unwrap_or(default) {
                    Align::Plain => "---",
                    Align::Left => ":---",
                    Align::Right => "---:",
                }
            })
            .collect();
        match layout.tight_rule {
            true => out.push_str(&format!("|{}|\n", rule.join("|"))),
            false => out.push_str(&line(rule.into_iter().map(String::from).collect())),
        }
        for row in &this.rows {
            let cells = (row.iter().enumerate())
                .map(|(c, cell)| escape(cell, this.names.columns.contains(&c)))
                .collect();
            out.push_str(&line(cells));
        }
        out
    }
}

/// The unit `cells` share where they leave one unsaid; `None` when none does or two differ.
fn common_unit<'a>(cells: impl Iterator<Item = &'a Value>) -> Option<String> {
    let mut units = cells.filter_map(Value::unit);
    let first = units.next()?;
    units.all(|u| u == first).then_some(first)
}

/// A table as text, before a writer lays it out.
struct Shown<'a> {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    names: &'a Names,
    layout: &'a Layout,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_text_and_markdown() {
        let mut t = Table::new(&["metric", "value"]);
        t.push(vec!["fps".into(), "120.0".into()]);
        t.push(vec!["total p99".into(), "8.5".into()]);
        assert_eq!(
            t.render(false),
            "  metric     value\n  fps        120.0\n  total p99    8.5\n"
        );
        assert_eq!(
            t.render(true),
            "| metric | value |\n| --- | ---: |\n| fps | 120.0 |\n| total p99 | 8.5 |\n"
        );
    }

    #[test]
    fn names_are_escaped_whole_in_markdown_and_figures_keep_their_brackets() {
        let mut t = Table::new(&["metric", "a_b*", "change [95% interval]"]);
        t.push(vec![
            "de|co_de`x` p99".into(),
            "1.0".into(),
            "+1.0% [0.5, 2.0]".into(),
        ]);
        let t = t.with_names(&[1], &[0]);
        assert_eq!(
            t.render(true),
            "| metric | a\\_b\\* | change [95% interval] |\n| --- | ---: | ---: |\n\
             | de\\|co\\_de\\`x\\` p99 | 1.0 | +1.0% [0.5, 2.0] |\n"
        );
        assert!(t.render(false).contains("de|co_de`x` p99"));
    }

    #[test]
    fn the_report_layout_keeps_minimum_widths_words_left_and_the_unit_after_the_header() {
        let mut t = Table::new(&["stage", "role", "p50"]);
        t.push(vec![
            "decode".into(),
            "main".into(),
            Value::MeanMicros(12_500.0),
        ]);
        t.push(vec!["a_b".into(), "x".into(), Value::Micros(7_000.0)]);
        let t =
            (t.with_every_cell_a_name()).with_layout(Layout::report(vec![9, 7, 9], vec![1], true));
        assert_eq!(
            t.render(false),
            "  stage      role       p50   µs\n  decode     main      12.5\n  a_b        x          7.0\n"
        );
        let bold = t.text(&Style {
            color: true,
            markdown: false,
        });
        assert!(bold.starts_with("  \x1b[1mstage"), "{bold:?}");
        assert_eq!(
            t.render(true),
            "| stage (µs) | role | p50 |\n| :--- | ---: | ---: |\n| decode | main | 12.5 |\n\
             | a\\_b | x | 7.0 |\n"
        );
    }

    #[test]
    fn the_unit_named_is_the_one_its_figures_share_and_none_when_they_differ() {
        let mut t = Table::new(&["frame", "t s", "total", "longest wait", "preempted"])
            .with_layout(Layout::report(Vec::new(), Vec::new(), true));
        t.push(vec![
            Value::Count(7),
            Value::fixed(1.25, 2),
            Value::Micros(16_000.0),
            Value::Labelled {
                label: "queue".into(),
                value: Box::new(Value::Micros(900.0)),
            },
            Value::By {
                value: Box::new(Value::Millis(1_200_000)),
                by: "kworker".into(),
            },
        ]);
        assert_eq!(t.unit().as_deref(), Some("µs"));
        assert_eq!(t.column_unit(1), None);
        let text = t.render(false);
        assert!(
            text.lines().next().unwrap().ends_with("preempted   µs"),
            "{text}"
        );
        t.push(vec![Value::Metric {
            unit: crate::analyze::metrics::Unit::Fps,
            value: 60.0,
            resolution: None,
            spread_pct: None,
        }]);
        assert_eq!(t.unit(), None);
    }

    /// A ragged listing lays each line out alone: a long cell pushes its line right,
    /// the others keep their columns, and an empty last cell keeps its padding.
    #[test]
    fn a_ragged_table_lays_each_line_out_alone() {
        let mut t = Table::new(&["probe", "arguments"]).with_layout(Layout {
            min_widths: vec![8],
            words: vec![1],
            ragged: true,
            ..Layout::default()
        });
        t.push(vec!["a:b".into(), "8@%rdi".into()]);
        t.push(vec!["a:longer_name".into(), "8@%rsi".into()]);
        t.push(vec!["a:c".into(), "".into()]);
        assert_eq!(
            t.render(false),
            "  probe     arguments\n  a:b       8@%rdi\n  a:longer_name  8@%rsi\n  a:c       \n"
        );
    }

    /// A column of durations with none measured still holds µs: its dashes say so.
    #[test]
    fn a_table_of_dashes_names_the_unit_its_missing_figures_would_have() {
        use crate::render::columns::{table_of, Column};
        let columns = [Column::new("run", 5), Column::new("total p50", 11)];
        let header = |t: Table| t.render(false).lines().next().unwrap().to_owned();
        let absent = Value::Absent {
            mark: "–",
            unit: "µs",
        };
        let typed = table_of(&columns, vec![vec![Value::Count(1), absent]], true);
        assert_eq!(header(typed), "  run    total p50   µs");
        let plain = vec![vec![Value::Count(1), Value::Missing("–")]];
        assert_eq!(
            header(table_of(&columns, plain, true)),
            "  run    total p50"
        );
    }
}
