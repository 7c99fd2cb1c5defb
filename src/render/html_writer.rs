//! The HTML writer: a document as the HTML page's data. Its title, facts, tables and notes,
//! and its plots' data under the keys the page's script draws them from; the script lays
//! them out and puts every string in as text (`textContent`), never as markup
//! (`report/html/page.rs` holds the page around the data).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::document::{shown, Block, Document};
use super::plot::{Level, Plot};
use super::style::Style;
use super::Table;

/// What a page shows of a document in words and tables.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PageText {
    pub title: String,
    /// As (label, value).
    pub facts: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// Each with the title the page shows above it.
    pub tables: Vec<Table>,
}

/// The page's text of `document`: its title, its facts, its titled tables and its notes.
/// Blocks that only lay text out for a terminal or a pull request are not on the page.
pub fn page_text(document: &Document) -> PageText {
    let mut page = PageText::default();
    for block in &document.blocks {
        match block {
            Block::Title(title) => page.title = title.clone(),
            // Uncoloured, names escaped as a terminal shows them: the script shows text.
            Block::Facts(facts) => page.facts.extend(
                (facts.iter()).map(|f| (f.label.clone(), shown(&f.value, &Style::default()))),
            ),
            Block::Table(table) => page.tables.push(table.clone()),
            Block::Notes(notes) => page.notes.extend(notes.iter().cloned()),
            _ => {}
        }
    }
    page
}

/// A document as the page's data (JSON once serialised): which page it is (`schema`, and
/// the `kind` the script draws), its text, then its plots in the document's order, the
/// tables where the first plot after a table stands (else last).
pub struct Page<'a> {
    pub schema: &'static str,
    pub kind: &'static str,
    pub text: PageText,
    /// Each plot, and whether a table stands before it in the document.
    plots: Vec<(bool, &'a Plot)>,
}

/// The page's data of `document`.
pub fn page<'a>(document: &'a Document, schema: &'static str, kind: &'static str) -> Page<'a> {
    let mut after_table = false;
    let mut plots = Vec::new();
    for block in &document.blocks {
        match block {
            Block::Table(_) => after_table = true,
            Block::Plot(plot) => plots.push((after_table, plot)),
            _ => {}
        }
    }
    Page {
        schema,
        kind,
        text: page_text(document),
        plots,
    }
}

impl Serialize for Page<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", self.schema)?;
        map.serialize_entry("kind", self.kind)?;
        map.serialize_entry("title", &self.text.title)?;
        map.serialize_entry("facts", &self.text.facts)?;
        map.serialize_entry("notes", &self.text.notes)?;
        let mut tables_written = false;
        for &(after_table, plot) in &self.plots {
            if after_table && !tables_written {
                map.serialize_entry("tables", &self.text.tables)?;
                tables_written = true;
            }
            plot.entries(&mut map)?;
        }
        if !tables_written {
            map.serialize_entry("tables", &self.text.tables)?;
        }
        map.end()
    }
}

/// The frame plots' finer levels of detail, by series (`total`, `interval`): apart from
/// the page's data, read on the first zoom. None when every point is drawn already.
pub fn detail(document: &Document) -> Option<Detail<'_>> {
    document.blocks.iter().find_map(|block| match block {
        Block::Plot(Plot::FrameTimes(f)) => {
            let (total, interval) = (&f.frames.total.detail, &f.frames.interval.detail);
            (!total.is_empty() || !interval.is_empty()).then_some(Detail { total, interval })
        }
        _ => None,
    })
}

#[derive(Serialize)]
pub struct Detail<'a> {
    pub total: &'a [Level],
    pub interval: &'a [Level],
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::Fact;
    use crate::render::plot::QuantileCurves;

    #[test]
    fn title_facts_tables_and_notes_reach_the_page() {
        let mut table = Table::new(&["stage", "p99"]);
        table.title = "Stages (µs)".into();
        table.push(vec!["encode".into(), "12".into()]);
        let document = Document {
            blocks: vec![
                Block::Title("framelab · demo".into()),
                Block::Facts(vec![Fact {
                    label: "frames".into(),
                    value: crate::render::document::plain("120"),
                    hint: None,
                }]),
                Block::Lines("only for terminals\n".into()),
                Block::Table(table.clone()),
                Block::Notes(vec!["3 spans dropped".into()]),
            ],
            json: String::new(),
        };
        assert_eq!(
            page_text(&document),
            PageText {
                title: "framelab · demo".into(),
                facts: vec![("frames".into(), "120".into())],
                notes: vec!["3 spans dropped".into()],
                tables: vec![table],
            }
        );
    }

    /// Plots keep the document's order, the tables standing where the first plot after
    /// one does; a document of no table still has its (empty) tables.
    #[test]
    fn plots_reach_the_page_in_the_documents_order() {
        let stages = || {
            Block::Plot(Plot::Stages(QuantileCurves {
                p: vec![0.0, 100.0],
                series: Vec::new(),
            }))
        };
        let document = Document {
            blocks: vec![
                Block::Title("t".into()),
                Block::Plot(Plot::Fps(None)),
                Block::Table(Table::new(&["a"])),
                stages(),
                Block::Plot(Plot::Histograms(Vec::new())),
            ],
            json: String::new(),
        };
        let json = serde_json::to_string(&page(&document, "s/1", "run")).unwrap();
        assert_eq!(
            json,
            r#"{"schema":"s/1","kind":"run","title":"t","facts":[],"notes":[],"fps":null,"tables":[{"title":"","headers":["a"],"rows":[]}],"stages":{"p":[0.0,100.0],"series":[]},"histograms":[]}"#
        );
        assert!(detail(&document).is_none());
        let no_table = Document {
            blocks: vec![stages()],
            json: String::new(),
        };
        let json = serde_json::to_string(&page(&no_table, "s/1", "run")).unwrap();
        assert!(json.ends_with(r#""series":[]},"tables":[]}"#), "{json}");
    }
}
