//! The one table of text cells: rendered as aligned plain text (first column left, the
//! rest right) or a Markdown pipe table that pastes into a pull request, and serialised
//! as it is for the HTML page's script (`title`, `headers`, `rows`).

use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Table {
    /// The heading the HTML page shows above it; text and Markdown leave it to the caller.
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    pub fn render(&self, markdown: bool) -> String {
        if markdown {
            self.markdown()
        } else {
            self.text()
        }
    }

    /// Cells and headers as `crate::display` shows names: escaped, cut.
    fn shown(&self) -> Table {
        let shown = |s: &String| crate::display::name(s).into_owned();
        Table {
            title: shown(&self.title),
            headers: self.headers.iter().map(shown).collect(),
            rows: self
                .rows
                .iter()
                .map(|r| r.iter().map(shown).collect())
                .collect(),
        }
    }

    fn text(&self) -> String {
        let this = self.shown();
        let (headers, rows) = (&this.headers, &this.rows);
        let width = |s: &str| s.chars().count();
        let widths: Vec<usize> = (0..headers.len())
            .map(|c| {
                rows.iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| width(s))
                    .chain([width(&headers[c])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut out = String::from("  ");
            for (c, cell) in cells.iter().enumerate() {
                let pad = " ".repeat(widths[c].saturating_sub(width(cell)));
                if c == 0 {
                    out.push_str(cell);
                    out.push_str(&pad);
                } else {
                    out.push_str("  ");
                    out.push_str(&pad);
                    out.push_str(cell);
                }
            }
            out.trim_end().to_owned() + "\n"
        };
        let mut out = line(headers);
        for row in rows {
            out.push_str(&line(row));
        }
        out
    }

    fn markdown(&self) -> String {
        let this = self.shown();
        let escape = |s: &str| s.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n",
            this.headers
                .iter()
                .map(|h| escape(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        out.push_str(&format!(
            "|{}\n",
            (0..this.headers.len())
                .map(|c| if c == 0 { " --- |" } else { " ---: |" })
                .collect::<String>()
        ));
        for row in &this.rows {
            out.push_str(&format!(
                "| {} |\n",
                row.iter()
                    .map(|c| escape(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        out
    }
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
}
