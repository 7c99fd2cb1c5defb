//! The CSV writer of documents: each of a document's data tables ([`DataTable`]) as a
//! header line and a line per row, fields quoted as RFC 4180 says. Typed cells are written
//! as plain numbers (Rust's shortest form that reads back exactly, no unit, no thousands
//! separator) in the unit the table states: a feature names it in a column of its own (the
//! comparison's `unit`) or in the column's header. The tables for people (text and
//! Markdown) are not written here: their cells are already shown, rounded and with units.

/// A table for spreadsheets and scripts: named columns, typed cells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataTable {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// One field of a data table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    /// Written plain; NaN is no value (an empty field).
    Number(f64),
    /// No value: an empty field.
    Empty,
}

impl Cell {
    /// A number, or an empty field for none.
    pub fn number(value: Option<f64>) -> Cell {
        value.map_or(Cell::Empty, Cell::Number)
    }

    /// A count, or an empty field for none.
    pub fn count(value: Option<usize>) -> Cell {
        value.map_or(Cell::Empty, |n| Cell::Number(n as f64))
    }

    pub fn text(value: impl Into<String>) -> Cell {
        Cell::Text(value.into())
    }

    fn field(&self) -> String {
        match self {
            Cell::Text(text) => quote(text),
            Cell::Number(v) if v.is_nan() => String::new(),
            Cell::Number(v) => v.to_string(),
            Cell::Empty => String::new(),
        }
    }
}

/// A document's data tables (`Block::Data`), one after another, a blank line between two
/// (a document with one, as every command's so far, is plain CSV).
pub fn write(tables: &[&DataTable]) -> String {
    let written: Vec<String> = tables.iter().map(|t| table(t)).collect();
    written.join("\n")
}

fn table(t: &DataTable) -> String {
    let mut out = t
        .columns
        .iter()
        .map(|c| quote(c))
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for row in &t.rows {
        let fields: Vec<String> = row.iter().map(Cell::field).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::{Block, Document};

    /// What the document writer gives its CSV writer: the data blocks.
    fn write(document: &Document) -> String {
        let tables: Vec<&DataTable> = (document.blocks.iter())
            .filter_map(|b| match b {
                Block::Data(t) => Some(t),
                _ => None,
            })
            .collect();
        super::write(&tables)
    }

    fn document(tables: Vec<DataTable>) -> Document {
        Document {
            blocks: tables.into_iter().map(Block::Data).collect(),
            json: String::new(),
        }
    }

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        let t = DataTable {
            columns: vec!["name".into(), "median".into(), "runs".into()],
            rows: vec![
                vec![Cell::text("plain"), Cell::Number(1.5), Cell::count(Some(3))],
                vec![
                    Cell::text("a,b \"c\"\nd"),
                    Cell::Number(f64::NAN),
                    Cell::Empty,
                ],
            ],
        };
        assert_eq!(
            write(&document(vec![t])),
            "name,median,runs\nplain,1.5,3\n\"a,b \"\"c\"\"\nd\",,\n"
        );
    }

    #[test]
    fn numbers_are_plain_and_read_back_exactly() {
        let values = [0.1 + 0.2, 1e-7, 123456789.0, -0.0042, 2.0];
        let t = DataTable {
            columns: vec!["v".into()],
            rows: values.iter().map(|&v| vec![Cell::Number(v)]).collect(),
        };
        let csv = write(&document(vec![t]));
        let read: Vec<f64> = csv.lines().skip(1).map(|l| l.parse().unwrap()).collect();
        assert_eq!(read, values);
        assert!(!csv.contains('e'), "no exponent: {csv}");
        assert!(csv.contains("\n2\n"), "a whole number as one: {csv}");
    }

    #[test]
    fn only_the_data_tables_are_written_a_blank_line_between_two() {
        let one = |name: &str| DataTable {
            columns: vec![name.into()],
            rows: vec![vec![Cell::Number(1.0)]],
        };
        let mut d = document(vec![one("a"), one("b")]);
        d.blocks.insert(0, Block::Note("for people".into()));
        assert_eq!(write(&d), "a\n1\n\nb\n1\n");
    }
}
