//! The HTML writer: a document as the HTML page's data. Its title, facts, titled tables and
//! notes, its other words (headings, paragraphs, bullets, tables under them: what text and
//! Markdown show, in order), and its plots' data under the keys the page's script draws
//! them from; the script lays them out and puts every string in as text (`textContent`),
//! never as markup (`report/html/page.rs` holds the page around the data).

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::document::{shown, Block, Document, Line};
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
    /// The document's other words, in order (in a run's page, telemetry's sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Words>,
}

/// A piece of a document's words as the page shows it: a heading opens a section.
/// Uncoloured, names escaped as a terminal shows them: the script shows text.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Words {
    Heading(String),
    Paragraph(String),
    Bullets(Vec<String>),
    List {
        title: String,
        items: Vec<String>,
    },
    Table(Table),
    /// Lines laid out by the feature (aligned columns): as they are.
    Lines(String),
}

/// The page's text of `document`: its title (its first heading, when it has no title),
/// its facts, its titled tables (a feature's titled columns among them, each with its
/// unit after the first header), its notes and its other words. Blank lines, and tables
/// only for spreadsheets, are not on the page.
pub fn page_text(document: &Document) -> PageText {
    let st = Style::default();
    let line = |l: &Line| shown(l, &st);
    let lines = |ls: &[Line]| ls.iter().map(line).collect::<Vec<_>>();
    let has_title = (document.blocks.iter()).any(|b| matches!(b, Block::Title(_)));
    let mut page = PageText::default();
    let mut words = Vec::new();
    for block in &document.blocks {
        match block {
            Block::Title(title) => page.title = title.clone(),
            Block::Heading(l) if !has_title && page.title.is_empty() => page.title = line(l),
            Block::Facts(facts) => page
                .facts
                .extend((facts.iter()).map(|f| (f.label.clone(), line(&f.value)))),
            Block::Table(table) => page.tables.push(with_unit(table)),
            Block::Columns { table, .. } if !table.title.is_empty() => {
                page.tables.push(with_unit(table))
            }
            Block::Notes(notes) => page.notes.extend(notes.iter().cloned()),
            Block::Heading(l) | Block::Subheading(l) => words.push(Words::Heading(line(l))),
            Block::Paragraph(l) | Block::Remark(l) => words.push(Words::Paragraph(line(l))),
            Block::Lead { title, text } => words.push(Words::Paragraph(format!("{title}: {text}"))),
            Block::Detail(text) | Block::Note(text) | Block::Aside(text) => {
                words.push(Words::Paragraph(crate::display::text(text).into_owned()))
            }
            Block::Bullets(ls) | Block::Dashed(ls) => words.push(Words::Bullets(lines(ls))),
            Block::List { title, items } => words.push(Words::List {
                title: title.clone(),
                items: items
                    .iter()
                    .map(|i| crate::display::text(i).into_owned())
                    .collect(),
            }),
            Block::SubList { title, items } => words.push(Words::List {
                title: title.clone(),
                items: lines(items),
            }),
            Block::TableUnder(table) | Block::Columns { table, .. } => {
                words.push(Words::Table(names_shown(&with_unit(table))))
            }
            Block::Captioned { caption, table }
            | Block::Titled {
                title: caption,
                table,
            } => {
                words.push(Words::Paragraph(line(caption)));
                words.push(Words::Table(names_shown(&with_unit(table))));
            }
            Block::States { title, text, items } => {
                words.push(Words::Paragraph(format!("{title} {text}")));
                if items.is_empty() {
                    continue;
                }
                words.push(Words::Bullets(
                    (items.iter())
                        .map(|i| {
                            let state = shown(&vec![i.state.clone()], &st);
                            format!(
                                "{} {state} · {}",
                                crate::display::name(&i.name),
                                line(&i.detail)
                            )
                        })
                        .collect(),
                ));
            }
            Block::Bars(chart) => {
                words.push(Words::Paragraph(line(&chart.title)));
                words.push(Words::Bullets(lines(&chart.summary)));
                let mut table = Table::new(&["bucket", "count"]);
                for bar in &chart.bars {
                    table.push(vec![bar.label.clone().into(), bar.count.to_string().into()]);
                }
                words.push(Words::Table(table));
            }
            Block::Section(section) => {
                let mut table = Table::new(&[]);
                table.title = section.title.clone();
                table.headers = (section.columns.iter())
                    .map(|c| match &c.unit {
                        Some(unit) => format!("{} {unit}", c.header),
                        None => c.header.clone(),
                    })
                    .collect();
                table.rows = super::value::texts(section.rows.clone());
                words.push(Words::Table(names_shown(&table.with_every_cell_a_name())));
                words.push(Words::Paragraph(
                    crate::display::text(&section.conclusion).into(),
                ));
            }
            Block::Lines(text) => words.push(Words::Lines(crate::display::lines(text))),
            Block::Blank | Block::Data(_) | Block::Plot(_) => {}
        }
    }
    page.blocks = words;
    page
}

/// The table of `block` when the page shows it as one of its titled tables: a plain
/// table, or the report family's that its feature titled.
fn titled(block: &Block) -> Option<&Table> {
    match block {
        Block::Table(table) => Some(table),
        Block::Columns { table, .. } if !table.title.is_empty() => Some(table),
        _ => None,
    }
}

/// `table` with the unit its figures share after its first header (`stage (µs)`), as
/// Markdown names it: the page lays the table out itself, and never drops the unit.
fn with_unit(table: &Table) -> Table {
    let mut shown = table.clone();
    if let (Some(unit), Some(first)) = (&table.layout.unit, shown.headers.first_mut()) {
        first.push_str(&format!(" ({unit})"));
    }
    shown
}

/// `table` with its names (headers and cells) escaped as a terminal shows them.
fn names_shown(table: &Table) -> Table {
    let name = |s: &String| crate::display::name(s).into_owned();
    let mut shown = table.clone();
    for &h in &table.names.headers {
        if let Some(header) = shown.headers.get_mut(h) {
            *header = name(header);
        }
    }
    for row in &mut shown.rows {
        for &c in &table.names.columns {
            if let Some(cell) = row.get_mut(c) {
                *cell = name(&cell.shown()).into();
            }
        }
    }
    shown
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
            Block::Plot(plot) => plots.push((after_table, plot)),
            _ if titled(block).is_some() => after_table = true,
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
        if !self.text.blocks.is_empty() {
            map.serialize_entry("blocks", &self.text.blocks)?;
        }
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
            (!total.is_empty() || !interval.is_empty()).then_some(Detail { interval, total })
        }
        _ => None,
    })
}

/// In the order of the names (as the page has always had them).
#[derive(Serialize)]
pub struct Detail<'a> {
    pub interval: &'a [Level],
    pub total: &'a [Level],
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
                blocks: vec![Words::Lines("only for terminals\n".into())],
            }
        );
    }

    /// The report family's columns that their feature titled are the page's titled
    /// tables, untitled they are words; either keeps its unit, after the first header.
    #[test]
    fn titled_columns_are_the_pages_tables_and_keep_their_unit() {
        let columns = |title: &str| {
            let mut table = crate::render::columns::table(
                &[crate::render::columns::Column::new("stage", 9)],
                vec![vec!["encode".into()]],
                Some("µs"),
            );
            table.title = title.into();
            Block::Columns {
                table,
                set_off: true,
            }
        };
        let document = Document {
            blocks: vec![columns("Stages"), columns("")],
            json: String::new(),
        };
        let page = page_text(&document);
        assert_eq!(page.tables.len(), 1);
        assert_eq!(page.tables[0].title, "Stages");
        assert_eq!(page.tables[0].headers, ["stage (µs)"]);
        let [Words::Table(untitled)] = &page.blocks[..] else {
            panic!("{:?}", page.blocks);
        };
        assert_eq!(untitled.headers, ["stage (µs)"]);
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
