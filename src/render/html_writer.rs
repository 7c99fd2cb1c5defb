//! The HTML writer: a document's title, facts, tables and notes as the HTML page's data.
//! The page's script lays them out beside the plots, and puts every string in as text
//! (`textContent`), never as markup (`report/html/page.rs`); the plots are the feature's.

use serde::Serialize;

use super::document::{shown, Block, Document};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::Fact;

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
}
