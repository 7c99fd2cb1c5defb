//! A neutral document: what a feature shows, as blocks (a lead line, details, notes,
//! tables, titled lists, the report family's title, facts, sections and tables of aligned
//! columns, headlines, bullet lines, pipe tables, asides, paragraphs of lines) and its JSON
//! form, with one writer per format. A feature builds the document once; [`write`] renders
//! it in any format its command writes, and `render::html_writer` gives the HTML page its
//! words and tables. Converted so far: `history check`, `whatif`, `timers`, `hist`,
//! `profile` and the report; `compare` and `history show` still render themselves
//! (docs/architecture.md, "Known debts").

use anyhow::Result;
use serde::Serialize;

use super::columns::{gfm_table, render as column_table, Column};
use super::format::Formats;
use super::style::Style;
use super::{Format, Table};

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
    /// Lines laid out by the feature itself (each ending in `\n`): as they are in text, a
    /// code block in Markdown, where aligned columns stay aligned.
    Aligned(String),
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
    /// A heading as the feature shows it (Markdown escaped by it): a line of its own in
    /// text; in Markdown `###` (level 3) or `####` (level 4), set off by a blank line.
    Headline { level: u8, text: String },
    /// Lines as the feature shows them: indented by two spaces in text, bullets in Markdown
    /// (set off by a blank line).
    BulletLines(Vec<String>),
    /// A table whose cells are shown as given: aligned columns in text, a pipe table set off
    /// by a blank line in Markdown.
    Pipe(PipeTable),
    /// A remark under the output: `note: remark` in text; in Markdown a paragraph in
    /// italics, set off by a blank line before and after.
    Aside(String),
    /// A table of the report family's aligned columns (minimum widths, words left, the unit
    /// after the header) in text; a GitHub table in Markdown, set off by a blank line.
    Columns(ColumnTable),
    /// Lines as the feature shows them (styled and escaped by it), a paragraph set off by a
    /// blank line.
    Lines(String),
}

/// A table in the report family's columns.
pub struct ColumnTable {
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<String>>,
    /// Named once after the text header (`µs`).
    pub unit: Option<String>,
    /// Text sets it off by a blank line unless it stands right under its title.
    pub set_off: bool,
}

/// How a [`PipeTable`]'s column lines up in Markdown: `---` or `---:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeAlign {
    Plain,
    Right,
}

/// A table of cells already shown as the feature wants them (a Markdown table, where
/// [`Block::Table`] escapes every cell): aligned columns in text, a pipe table in Markdown.
pub struct PipeTable {
    pub headers: Vec<String>,
    pub align: Vec<PipeAlign>,
    pub rows: Vec<Vec<String>>,
}

pub struct Fact {
    pub label: String,
    pub value: String,
    /// Said after the value in text only: the option that sets it (`(--need)`).
    pub hint: Option<String>,
}

/// A table of typed columns: each with its unit, if it has one. Text names the unit once
/// after the header (the columns with one share it); Markdown after each column's name.
pub struct Section {
    pub title: String,
    pub columns: Vec<UnitColumn>,
    pub rows: Vec<Vec<String>>,
    /// The line that sums the table up: after an arrow in text, in bold in Markdown.
    pub conclusion: String,
}

#[derive(Clone)]
pub struct UnitColumn {
    pub header: String,
    pub unit: Option<String>,
    /// The narrowest the text column may be, so tables line up across sections.
    pub min_width: usize,
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
        other => return Err(formats.refuse(other)),
    })
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
                out.push_str(&table.render(false));
            }
            Block::List { title, items } => {
                out.push_str(&format!("\n{title}:\n"));
                for item in items {
                    out.push_str(&format!("  {item}\n"));
                }
            }
            Block::Aligned(lines) => out.push_str(lines),
            Block::Title(title) => out.push_str(&format!("{}\n", st.bold(title))),
            Block::Facts(facts) => {
                for f in facts {
                    let hint = f.hint.as_ref().map_or(String::new(), |h| format!(" {h}"));
                    // At least one space after the label, however long it is.
                    out.push_str(&format!("  {:<9} {}{hint}\n", f.label, f.value));
                }
            }
            Block::Section(section) => {
                let columns: Vec<Column> = (section.columns.iter())
                    .map(|c| Column::new(c.header.as_str(), c.min_width))
                    .collect();
                let unit = section.columns.iter().find_map(|c| c.unit.as_deref());
                out.push_str(&format!("\n  {}\n", st.bold(&section.title)));
                out.push_str(&column_table(&columns, &section.rows, unit, &st));
                out.push_str(&format!("  → {}\n", section.conclusion));
            }
            Block::Notes(notes) => {
                out.push('\n');
                for note in notes {
                    out.push_str(&format!("  {}{note}\n", st.yellow("note      ")));
                }
            }
            Block::Headline { text, .. } => out.push_str(&format!("{text}\n")),
            Block::BulletLines(lines) => {
                for line in lines {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            Block::Pipe(pipe) => {
                let mut table = Table::new(&[]);
                table.headers = pipe.headers.clone();
                table.rows = pipe.rows.clone();
                out.push_str(&table.render(false));
            }
            Block::Aside(remark) => {
                out.push_str(&format!("note: {}\n", crate::display::text(remark)))
            }
            Block::Columns(table) => {
                if table.set_off {
                    out.push('\n');
                }
                out.push_str(&column_table(
                    &table.columns,
                    &table.rows,
                    table.unit.as_deref(),
                    &st,
                ));
            }
            Block::Lines(lines) => {
                out.push('\n');
                out.push_str(lines);
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
            Block::Detail(line) => out.push_str(&format!("\n{line}.\n")),
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
            Block::Aligned(lines) => out.push_str(&format!("```\n{lines}```\n")),
            Block::Title(title) => out.push_str(&format!("### {}\n", st.name(title))),
            Block::Facts(facts) => {
                out.push('\n');
                for f in facts {
                    out.push_str(&format!("- **{}** {}\n", f.label, f.value));
                }
            }
            Block::Section(section) => {
                let headers: Vec<String> = (section.columns.iter())
                    .map(|c| match &c.unit {
                        Some(unit) => format!("{} {unit}", c.header),
                        None => c.header.clone(),
                    })
                    .collect();
                out.push_str(&format!(
                    "\n#### {}\n\n{}\n**{}**\n",
                    section.title,
                    gfm_table(&headers, &section.rows),
                    st.name(&section.conclusion)
                ));
            }
            Block::Notes(notes) => {
                let quoted: Vec<String> = (notes.iter())
                    .map(|n| format!("> {}\n", st.name(n)))
                    .collect();
                out.push('\n');
                out.push_str(&quoted.join(">\n"));
            }
            Block::Headline { level, text } => {
                set_off(&mut out);
                let hashes = "#".repeat(usize::from(*level));
                out.push_str(&format!("{hashes} {text}\n"));
            }
            Block::BulletLines(lines) => {
                set_off(&mut out);
                for line in lines {
                    out.push_str(&format!("- {line}\n"));
                }
            }
            Block::Pipe(pipe) => {
                set_off(&mut out);
                out.push_str(&pipe_table(pipe));
            }
            Block::Aside(remark) => {
                set_off(&mut out);
                out.push_str(&format!("_{}_\n\n", crate::display::markdown(remark)));
            }
            Block::Columns(table) => {
                set_off(&mut out);
                let headers: Vec<String> =
                    (table.columns.iter()).map(|c| c.header.clone()).collect();
                out.push_str(&gfm_table(&headers, &table.rows));
            }
            Block::Lines(lines) => {
                set_off(&mut out);
                out.push_str(lines);
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

/// A Markdown table of `pipe`'s cells as they are.
fn pipe_table(pipe: &PipeTable) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let rule: Vec<String> = (pipe.align.iter())
        .map(|a| match a {
            PipeAlign::Plain => "---",
            PipeAlign::Right => "---:",
        })
        .map(String::from)
        .collect();
    let mut out = line(&pipe.headers);
    out.push_str(&line(&rule));
    for row in &pipe.rows {
        out.push_str(&line(row));
    }
    out
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
    use crate::render::format::HISTORY_CHECK;

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
    fn aligned_lines_stay_aligned_in_markdown() {
        let d = Document {
            blocks: vec![Block::Aligned("  a    1\n  bb  22\n".into())],
            json: String::new(),
        };
        assert_eq!(
            write(&d, Format::Text, &HISTORY_CHECK).unwrap(),
            "  a    1\n  bb  22\n"
        );
        assert_eq!(
            write(&d, Format::Markdown, &HISTORY_CHECK).unwrap(),
            "```\n  a    1\n  bb  22\n```\n"
        );
    }

    #[test]
    fn headlines_bullets_pipe_tables_and_asides_are_set_off_once() {
        let pipe = || {
            Block::Pipe(PipeTable {
                headers: vec!["bucket".into(), "count".into()],
                align: vec![PipeAlign::Plain, PipeAlign::Right],
                rows: vec![vec!["`[1, 2)`".into(), "3".into()]],
            })
        };
        let d = Document {
            blocks: vec![
                Block::Headline {
                    level: 3,
                    text: "@a".into(),
                },
                Block::BulletLines(vec!["samples 5".into()]),
                pipe(),
                Block::Headline {
                    level: 4,
                    text: "stage b".into(),
                },
                pipe(),
                Block::Aside("one".into()),
                Block::Aside("two_words".into()),
            ],
            json: String::new(),
        };
        assert_eq!(
            write(&d, Format::Markdown, &HISTORY_CHECK).unwrap(),
            "### @a\n\n- samples 5\n\n| bucket | count |\n| --- | ---: |\n| `[1, 2)` | 3 |\n\n\
             #### stage b\n\n| bucket | count |\n| --- | ---: |\n| `[1, 2)` | 3 |\n\n\
             _one_\n\n_two\\_words_\n\n"
        );
        assert_eq!(
            write(&d, Format::Text, &HISTORY_CHECK).unwrap(),
            "@a\n  samples 5\n  bucket    count\n  `[1, 2)`      3\nstage b\n  bucket    count\n  \
             `[1, 2)`      3\nnote: one\nnote: two_words\n"
        );
    }
}
