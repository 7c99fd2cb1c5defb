//! A neutral document: what a feature shows, as blocks (a lead line, details, notes,
//! tables, titled lists, the report family's title, facts, sections and tables of aligned
//! columns; headings, paragraphs, bullets, sub-lists, grids; asides, paragraphs of lines;
//! titled tables, lists of states, bar charts; plots' data for the HTML page; data tables
//! of typed cells for CSV) and its JSON form, with one writer per format. A feature builds
//! the document once, the same for text and Markdown; [`write`] renders it in any format its
//! command writes (CSV through `render::csv`), and `render::html_writer` gives the HTML page
//! its words, tables and plots. Tables hold typed cells (`render::Value`), shown when
//! written.

use anyhow::Result;
use serde::Serialize;

pub use super::chart::{Bar, BarChart};
pub use super::columns::Column;
pub use super::csv::{Cell, DataTable};
use super::format::Formats;
pub use super::line::{plain, shown, Line, Span, SpanKind, Tone};
use super::style::Style;
use super::{Format, Table, Value};

pub struct Document {
    pub blocks: Vec<Block>,
    /// The JSON form, already written (serde_json keeps a struct's field order only when
    /// it serialises the struct itself).
    pub json: String,
}

pub enum Block {
    /// The opening line: `title: text`, in Markdown `**title**: text`.
    Lead { title: String, text: String },
    /// A line that qualifies the one above: right under it in text, a sentence of its own
    /// in Markdown (set off by a blank line, ended by a full stop).
    Detail(String),
    /// A line set off by a blank line.
    Note(String),
    /// A table set off by a blank line.
    Table(Table),
    /// A titled list set off by a blank line: `title:` then indented items in text, a
    /// capitalised `Title:` then a bullet per item in Markdown.
    List { title: String, items: Vec<String> },
    /// The report's title line: bold in text, a `###` heading in Markdown.
    Title(String),
    /// The report's facts, right under the title: `  label     value` in text, a bullet
    /// `**label** value` each in Markdown.
    Facts(Vec<Fact>),
    /// A titled table with its conclusion, set off by a blank line.
    Section(Section),
    /// Notes set off by a blank line: each after a `note` label in text, a quote in
    /// Markdown.
    Notes(Vec<String>),
    /// A remark under the output: `note: remark` in text; in Markdown a paragraph in
    /// italics, set off by a blank line before and after.
    Aside(String),
    /// A table (the report family's, `Layout::report`) set off by a blank line in Markdown,
    /// and in text where `set_off` (not when it stands right under its title).
    Columns { table: Table, set_off: bool },
    /// Lines as the feature shows them (styled and escaped by it), a paragraph set off by a
    /// blank line.
    Lines(String),
    /// A table for spreadsheets and scripts, of typed cells: what CSV writes
    /// (`render::csv`); the formats for people leave it out.
    Data(DataTable),
    /// A heading line: as it is in text, a `###` heading in Markdown, set off by a blank
    /// line after.
    Heading(Line),
    /// A heading inside the document, set off by a blank line before: `####` in Markdown.
    Subheading(Line),
    /// An indented line in text; in Markdown a paragraph (a blank line after).
    Paragraph(Line),
    /// Indented lines in text, a bullet each in Markdown.
    Bullets(Vec<Line>),
    /// A blank line in every format (in Markdown, none where one is already).
    Blank,
    /// A table right under the block above (no blank line before it).
    TableUnder(Table),
    /// A table under its caption: the caption indented after a blank line in text, a
    /// paragraph in Markdown, where a blank line follows the table.
    Captioned { caption: Line, table: Table },
    /// A titled list inside a section: `  title:` and items indented further in text, a
    /// capitalised `Title:` set off by blank lines and a bullet per item in Markdown.
    SubList { title: String, items: Vec<Line> },
    /// A line that closes a section: indented in text, set off by a blank line in
    /// Markdown.
    Remark(Line),
    /// Items that keep their dash in text (`  - item`), a bullet each in Markdown.
    Dashed(Vec<Line>),
    /// A titled list of things and how each fared (telemetry's sources): in text the title
    /// and its words on an indented line (bold on a terminal that shows colour), then each
    /// thing, its state and what it says in aligned columns; in Markdown the title in bold
    /// as a paragraph, then a bullet each (`**name** state · detail`).
    States {
        title: String,
        text: String,
        items: Vec<State>,
    },
    /// A table under its title: the title indented after a blank line in text, a `####`
    /// heading in Markdown.
    Titled { title: Line, table: Table },
    /// A bar chart (a histogram's buckets): bpftrace's layout in text, a heading and a
    /// table of bucket and count in Markdown (`render::chart`).
    Bars(BarChart),
    /// A plot's data, for the HTML page (`render::html_writer`); the formats for
    /// terminals and pull requests leave it out.
    Plot(super::plot::Plot),
}

/// One thing of a [`Block::States`] list.
pub struct State {
    pub name: String,
    /// Its state (`on`, `stopped`), toned as the feature says.
    pub state: Span,
    pub detail: Line,
}

pub struct Fact {
    pub label: String,
    pub value: Line,
    /// Said after the value in text only: the option that sets it (`(--need)`).
    pub hint: Option<String>,
}

/// A titled table of the report family's columns with its conclusion. The figures' unit
/// comes from the cells' kinds: text names the one they share once after the header;
/// Markdown each column's after its name.
pub struct Section {
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
    /// The line that sums the table up: after an arrow in text, in bold in Markdown.
    pub conclusion: String,
}

impl Section {
    /// The section's table in the report's layout: for Markdown each column's unit after
    /// its name, for text the unit named once after the header.
    pub fn table(&self, markdown: bool) -> Table {
        let table = super::columns::table_of(&self.columns, self.rows.clone(), !markdown);
        if !markdown {
            return table;
        }
        let headers = (table.headers.iter().enumerate())
            .map(|(c, header)| match table.column_unit(c) {
                Some(unit) => format!("{header} {unit}"),
                None => header.clone(),
            })
            .collect();
        Table { headers, ..table }
    }
}

/// `value` as pretty JSON with a final newline; a value serde cannot write gives an
/// `error` object rather than nothing.
pub fn pretty_json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// `document` in `format`, when `formats` (its command's) holds it.
pub fn write(document: &Document, format: Format, formats: &Formats) -> Result<String> {
    write_in(document, format, formats, false)
}

/// [`write`], with ANSI colour in text when `color`.
pub fn write_in(
    document: &Document,
    format: Format,
    formats: &Formats,
    color: bool,
) -> Result<String> {
    Ok(match formats.check(format)? {
        Format::Text => text(document, color),
        Format::Markdown => markdown(document),
        Format::Json => document.json.clone(),
        Format::Csv => super::csv::write(&data_tables(document)),
        other => return Err(formats.refuse(other)),
    })
}

/// The document's data tables, what CSV writes.
fn data_tables(document: &Document) -> Vec<&DataTable> {
    (document.blocks.iter())
        .filter_map(|b| match b {
            Block::Data(table) => Some(table),
            _ => None,
        })
        .collect()
}

/// The text writer: aligned tables, indented lists.
fn text(document: &Document, color: bool) -> String {
    let st = Style {
        color,
        markdown: false,
    };
    let mut out = String::new();
    for block in &document.blocks {
        match block {
            Block::Lead { title, text } => out.push_str(&format!("{title}: {text}\n")),
            Block::Detail(line) => out.push_str(&format!("{line}\n")),
            Block::Note(line) => out.push_str(&format!("\n{line}\n")),
            Block::Table(table) => {
                out.push('\n');
                out.push_str(&table.text(&st));
            }
            Block::List { title, items } => {
                out.push_str(&format!("\n{title}:\n"));
                for item in items {
                    out.push_str(&format!("  {item}\n"));
                }
            }
            Block::Title(title) => out.push_str(&format!("{}\n", st.bold(title))),
            Block::Facts(facts) => {
                for f in facts {
                    let hint = f.hint.as_ref().map_or(String::new(), |h| format!(" {h}"));
                    // At least one space after the label, however long it is.
                    out.push_str(&format!(
                        "  {:<9} {}{hint}\n",
                        f.label,
                        shown(&f.value, &st)
                    ));
                }
            }
            Block::Section(section) => {
                out.push_str(&format!("\n  {}\n", st.bold(&section.title)));
                out.push_str(&section.table(false).text(&st));
                out.push_str(&format!("  → {}\n", section.conclusion));
            }
            Block::Notes(notes) => {
                out.push('\n');
                for note in notes {
                    out.push_str(&format!("  {}{note}\n", st.yellow("note      ")));
                }
            }
            Block::Aside(remark) => {
                out.push_str(&format!("note: {}\n", crate::display::text(remark)))
            }
            Block::Columns { table, set_off } => {
                if *set_off {
                    out.push('\n');
                }
                out.push_str(&table.text(&st));
            }
            Block::Lines(lines) => {
                out.push('\n');
                out.push_str(lines);
            }
            Block::Data(_) | Block::Plot(_) => {}
            Block::Heading(line) => out.push_str(&format!("{}\n", shown(line, &st))),
            Block::Subheading(line) => out.push_str(&format!("\n{}\n", shown(line, &st))),
            Block::Paragraph(line) => out.push_str(&format!("  {}\n", shown(line, &st))),
            Block::Bullets(lines) => {
                for line in lines {
                    out.push_str(&format!("  {}\n", shown(line, &st)));
                }
            }
            Block::Blank => out.push('\n'),
            Block::TableUnder(table) => out.push_str(&table.text(&st)),
            Block::Captioned { caption, table } => {
                out.push_str(&format!("\n  {}\n", shown(caption, &st)));
                out.push_str(&table.text(&st));
            }
            Block::SubList { title, items } => {
                out.push_str(&format!("  {title}:\n"));
                for item in items {
                    out.push_str(&format!("    {}\n", shown(item, &st)));
                }
            }
            Block::Remark(line) => out.push_str(&format!("  {}\n", shown(line, &st))),
            Block::Dashed(lines) => {
                for line in lines {
                    out.push_str(&format!("  - {}\n", shown(line, &st)));
                }
            }
            Block::States { title, text, items } => {
                out.push_str(&format!("  {}\n", st.bold(&format!("{title}  {text}"))));
                for item in items {
                    // The padding is the plain word's: colour codes shift nothing.
                    let pad = 9usize.saturating_sub(item.state.text.chars().count());
                    out.push_str(&format!(
                        "    {:<9} {}{}{}\n",
                        item.name,
                        shown(&vec![item.state.clone()], &st),
                        " ".repeat(pad),
                        shown(&item.detail, &st)
                    ));
                }
            }
            Block::Bars(chart) => out.push_str(&super::chart::text(chart, &st)),
            Block::Titled { title, table } => {
                out.push_str(&format!("\n  {}\n", shown(title, &st)));
                out.push_str(&table.text(&st));
            }
        }
    }
    out
}

/// The Markdown writer: pipe tables and bullet lists that paste into a pull request.
fn markdown(document: &Document) -> String {
    let st = Style {
        color: false,
        markdown: true,
    };
    let mut out = String::new();
    for block in &document.blocks {
        match block {
            Block::Lead { title, text } => out.push_str(&format!("**{title}**: {text}\n")),
            Block::Detail(line) => {
                set_off(&mut out);
                out.push_str(&format!("{line}.\n"));
            }
            Block::Note(line) => out.push_str(&format!("\n{line}\n")),
            Block::Table(table) => {
                out.push('\n');
                out.push_str(&table.render(true));
            }
            Block::List { title, items } => {
                out.push_str(&format!("\n{}:\n\n", capitalised(title)));
                for item in items {
                    out.push_str(&format!("- {}\n", crate::display::markdown(item)));
                }
            }
            Block::Title(title) => out.push_str(&format!("### {}\n", st.name(title))),
            Block::Facts(facts) => {
                set_off(&mut out);
                for f in facts {
                    out.push_str(&format!("- **{}** {}\n", f.label, shown(&f.value, &st)));
                }
            }
            Block::Section(section) => {
                out.push_str(&format!(
                    "\n#### {}\n\n{}\n**{}**\n",
                    section.title,
                    section.table(true).markdown(),
                    st.name(&section.conclusion)
                ));
            }
            Block::Notes(notes) => {
                let quoted: Vec<String> = (notes.iter())
                    .map(|n| format!("> **Note** {}\n", st.name(n)))
                    .collect();
                out.push('\n');
                out.push_str(&quoted.join(">\n"));
            }
            Block::Aside(remark) => {
                set_off(&mut out);
                out.push_str(&format!("_{}_\n\n", crate::display::markdown(remark)));
            }
            Block::Columns { table, .. } => {
                set_off(&mut out);
                out.push_str(&table.markdown());
            }
            Block::Lines(lines) => {
                set_off(&mut out);
                out.push_str(lines);
            }
            Block::Data(_) | Block::Plot(_) => {}
            Block::Heading(line) => out.push_str(&format!("### {}\n\n", shown(line, &st))),
            Block::Subheading(line) => out.push_str(&format!("\n#### {}\n\n", shown(line, &st))),
            Block::Paragraph(line) => out.push_str(&format!("{}\n\n", shown(line, &st))),
            Block::Bullets(lines) => {
                for line in lines {
                    out.push_str(&format!("- {}\n", shown(line, &st)));
                }
            }
            Block::Blank => set_off(&mut out),
            Block::TableUnder(table) => out.push_str(&table.render(true)),
            Block::Captioned { caption, table } => {
                out.push_str(&format!("{}\n\n", shown(caption, &st)));
                out.push_str(&table.render(true));
                out.push('\n');
            }
            Block::SubList { title, items } => {
                out.push_str(&format!("\n{}:\n\n", capitalised(title)));
                for item in items {
                    out.push_str(&format!("- {}\n", shown(item, &st)));
                }
            }
            Block::Remark(line) => out.push_str(&format!("\n{}\n", shown(line, &st))),
            Block::Dashed(lines) => {
                for line in lines {
                    out.push_str(&format!("- {}\n", shown(line, &st)));
                }
            }
            Block::States { title, text, items } => {
                out.push_str(&format!("**{title}** {text}\n\n"));
                for item in items {
                    out.push_str(&format!(
                        "- **{}** {} · {}\n",
                        item.name,
                        item.state.text,
                        shown(&item.detail, &st)
                    ));
                }
            }
            Block::Bars(chart) => {
                set_off(&mut out);
                out.push_str(&super::chart::markdown(chart, &st));
            }
            Block::Titled { title, table } => {
                set_off(&mut out);
                out.push_str(&format!("#### {}\n\n", shown(title, &st)));
                out.push_str(&table.markdown());
            }
        }
    }
    out
}

/// A blank line before what follows, unless `out` is empty or already ends in one.
fn set_off(out: &mut String) {
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push('\n');
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::format::{COMPARE, HISTORY_CHECK, HISTORY_SHOW};
    use crate::render::table::Layout;

    fn document() -> Document {
        let mut table = Table::new(&["metric", "change"]);
        table.push(vec!["fps".into(), "−3.0%".into()]);
        Document {
            blocks: vec![
                Block::Lead {
                    title: "history check".into(),
                    text: "2 series".into(),
                },
                Block::Detail("p ≤ 0.05".into()),
                Block::Table(table),
                Block::Note("1 point left out".into()),
                Block::List {
                    title: "skipped".into(),
                    items: vec!["wall on m1: too few".into()],
                },
            ],
            json: pretty_json(&serde_json::json!({"series": 2})),
        }
    }

    #[test]
    fn each_writer_lays_out_the_same_blocks() {
        let d = document();
        assert_eq!(
            write(&d, Format::Text, &HISTORY_CHECK).unwrap(),
            "history check: 2 series\np ≤ 0.05\n\n  metric  change\n  fps      −3.0%\n\n\
             1 point left out\n\nskipped:\n  wall on m1: too few\n"
        );
        assert_eq!(
            write(&d, Format::Markdown, &HISTORY_CHECK).unwrap(),
            "**history check**: 2 series\n\np ≤ 0.05.\n\n| metric | change |\n| --- | ---: |\n\
             | fps | −3.0% |\n\n1 point left out\n\nSkipped:\n\n- wall on m1: too few\n"
        );
        assert_eq!(
            write(&d, Format::Json, &HISTORY_CHECK).unwrap(),
            "{\n  \"series\": 2\n}\n"
        );
        assert!(write(&d, Format::Csv, &HISTORY_CHECK).is_err());
    }

    #[test]
    fn the_section_blocks_in_text_and_markdown() {
        let mut table = Table::new(&["metric", "b"]);
        table.push(vec!["fps".into(), "61.0".into()]);
        let d = Document {
            blocks: vec![
                Block::Heading(vec![Span::plain("compare · "), Span::name("a_b")]),
                Block::Paragraph(vec![Span::strong("primary")]),
                Block::Paragraph(vec![Span::emphasis("method")]),
                Block::Bullets(vec![vec![Span::plain("a: "), Span::code("sleep 1")]]),
                Block::Blank,
                Block::Subheading(plain("b vs a")),
                Block::TableUnder(table.clone()),
                Block::SubList {
                    title: "inconclusive".into(),
                    items: vec![plain("fps: wide")],
                },
                Block::Remark(plain("worst frame")),
                Block::Captioned {
                    caption: vec![Span::name("@ns").with(SpanKind::Strong)],
                    table,
                },
                Block::Data(DataTable::default()),
            ],
            json: String::new(),
        };
        assert_eq!(
            write(&d, Format::Text, &COMPARE).unwrap(),
            "compare · a_b\n  primary\n  method\n  a: sleep 1\n\n\nb vs a\n  metric     b\n  \
             fps     61.0\n  inconclusive:\n    fps: wide\n  worst frame\n\n  @ns\n  \
             metric     b\n  fps     61.0\n"
        );
        assert_eq!(
            write(&d, Format::Markdown, &COMPARE).unwrap(),
            "### compare · a\\_b\n\n**primary**\n\n_method_\n\n- a: `sleep 1`\n\n\
             \n#### b vs a\n\n| metric | b |\n| --- | ---: |\n| fps | 61.0 |\n\
             \nInconclusive:\n\n- fps: wide\n\nworst frame\n**@ns**\n\n\
             | metric | b |\n| --- | ---: |\n| fps | 61.0 |\n\n"
        );
    }

    #[test]
    fn a_grid_aligns_words_left_and_numbers_right_and_escapes_names() {
        let d = Document {
            blocks: vec![Block::TableUnder(
                Table {
                    headers: vec!["branch".into(), "runs".into()],
                    rows: vec![
                        vec!["main".into(), "12".into()],
                        vec!["a|b\u{1b}".into(), "3".into()],
                    ],
                    ..Table::default()
                }
                .with_names(&[0, 1], &[0, 1])
                .with_layout(Layout::grid(2, vec![])),
            )],
            json: String::new(),
        };
        assert_eq!(
            write(&d, Format::Text, &HISTORY_SHOW).unwrap(),
            "branch   runs\nmain       12\na|b\\x1b     3\n"
        );
        assert_eq!(
            write(&d, Format::Markdown, &HISTORY_SHOW).unwrap(),
            "| branch | runs |\n|---|---|\n| main | 12 |\n| a\\|b\\\\x1b | 3 |\n"
        );
    }

    #[test]
    fn tones_colour_text_once_a_run_and_leave_markdown_alone() {
        let line = vec![
            Span::plain("3 frames").toned(Tone::Bad),
            Span::name(" (a|b)").toned(Tone::Bad),
            Span::plain(" over · "),
            Span::plain("2 lost").toned(Tone::Warning),
        ];
        let color = Style {
            color: true,
            markdown: false,
        };
        assert_eq!(
            shown(&line, &color),
            "\x1b[31m3 frames (a|b)\x1b[0m over · \x1b[33m2 lost\x1b[0m"
        );
        let markdown = Style {
            color: false,
            markdown: true,
        };
        assert_eq!(shown(&line, &markdown), "3 frames (a\\|b) over · 2 lost");
    }

    #[test]
    fn titled_tables_charts_states_and_asides_in_text_and_markdown() {
        let mut table = Table::new(&["self %", "function"]).with_names(&[], &[1]);
        table.push(vec![Value::fixed(70.0, 2), Value::from("a_b")]);
        let d = Document {
            blocks: vec![
                Block::Heading(plain("profile")),
                Block::Bullets(vec![plain("samples 5")]),
                Block::Titled {
                    title: vec![Span::name("stage b_c")],
                    table,
                },
                Block::States {
                    title: "sampling".into(),
                    text: "every 50 ms".into(),
                    items: vec![State {
                        name: "nvml".into(),
                        state: Span::plain("stopped").toned(Tone::Bad),
                        detail: vec![Span::name("GPU0 · 4 reads")],
                    }],
                },
                Block::Bars(BarChart {
                    title: plain("@x (µs)"),
                    summary: vec![plain("count 3")],
                    bars: vec![Bar {
                        label: "[1, 2)".into(),
                        count: 3,
                    }],
                }),
                Block::Aside("one".into()),
                Block::Aside("two_words".into()),
            ],
            json: String::new(),
        };
        assert_eq!(
            write(&d, Format::Markdown, &HISTORY_CHECK).unwrap(),
            "### profile\n\n- samples 5\n\n#### stage b\\_c\n\n| self % | function |\n\
             | --- | ---: |\n| 70.00 | a\\_b |\n**sampling** every 50 ms\n\n\
             - **nvml** stopped · GPU0 · 4 reads\n\n### @x (µs)\n\n- count 3\n\n\
             | bucket | count |\n| --- | ---: |\n| `[1, 2)` | 3 |\n\n_one_\n\n_two\\_words_\n\n"
        );
        assert_eq!(
            write(&d, Format::Text, &HISTORY_CHECK).unwrap(),
            format!(
                "profile\n  samples 5\n\n  stage b_c\n  self %  function\n  70.00        a_b\n  \
                 sampling  every 50 ms\n    nvml      stopped  GPU0 · 4 reads\n@x (µs):\n\
                 # count 3\n[1, 2)                 3 |{}|\nnote: one\nnote: two_words\n",
                "@".repeat(52)
            )
        );
    }
}
