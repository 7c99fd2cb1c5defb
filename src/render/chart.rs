//! A bar chart (a histogram's buckets) as the writers lay it out: in text bpftrace's layout
//! (the label left-aligned in 16 columns, the count right-aligned in 8, then a bar of `@`
//! 52 wide scaled to the largest count, between `|`); in Markdown a table of bucket and
//! count, each bucket's bounds a code span. The feature gives the rows; their layout is
//! here.

use super::line::{code_span, shown, Line};
use super::style::Style;
use super::table::{Align, Layout, Table};
use super::value::Value;

const BAR_WIDTH: u64 = 52;

/// A chart under its title, with the lines that sum it up above its bars.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BarChart {
    /// What it shows: `@encode (µs)`.
    pub title: Line,
    /// Figures of the whole chart, a line each: `# line` in text, a bullet in Markdown.
    pub summary: Vec<Line>,
    /// Every bar shown, in order (the feature leaves out what it does not show).
    pub bars: Vec<Bar>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The bucket's bounds: `[2, 4)`.
    pub label: String,
    pub count: u64,
}

/// The chart in text: `title:`, the summary lines, a line per bar.
pub fn text(chart: &BarChart, st: &Style) -> String {
    let mut out = format!("{}:\n", shown(&chart.title, st));
    for line in &chart.summary {
        out.push_str(&format!("# {}\n", shown(line, st)));
    }
    let largest = chart.bars.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    for b in &chart.bars {
        let width = (b.count.saturating_mul(BAR_WIDTH) / largest) as usize;
        out.push_str(&format!(
            "{:<16}{:>8} |{}{}|\n",
            b.label,
            b.count,
            "@".repeat(width),
            " ".repeat(BAR_WIDTH as usize - width)
        ));
    }
    out
}

/// The chart in Markdown: a `###` heading, the summary as bullets, a table of bucket and
/// count.
pub fn markdown(chart: &BarChart, st: &Style) -> String {
    let mut out = format!("### {}\n\n", shown(&chart.title, st));
    for line in &chart.summary {
        out.push_str(&format!("- {}\n", shown(line, st)));
    }
    if !chart.summary.is_empty() {
        out.push('\n');
    }
    let mut table = Table::new(&["bucket", "count"])
        .with_layout(Layout::markdown_given(vec![Align::Plain, Align::Right]));
    for b in &chart.bars {
        table.push(vec![
            Value::Text(code_span(&b.label)),
            Value::Count(b.count as i64),
        ]);
    }
    out.push_str(&table.markdown());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::{plain, Span};

    fn chart() -> BarChart {
        BarChart {
            title: vec![Span::name("@a_b"), Span::plain(" (µs)")],
            summary: vec![plain("count 5")],
            bars: [("[2, 4)", 4), ("[4, 8)", 0), ("[8, 16)", 1)]
                .map(|(label, count)| Bar {
                    label: label.into(),
                    count,
                })
                .into(),
        }
    }

    #[test]
    fn bars_are_scaled_to_the_largest_in_text() {
        let text = text(&chart(), &Style::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[..2], ["@a_b (µs):", "# count 5"]);
        assert_eq!(
            lines[2],
            format!("[2, 4)                 4 |{}|", "@".repeat(52))
        );
        assert_eq!(
            lines[3],
            format!("[4, 8)                 0 |{}|", " ".repeat(52))
        );
        assert_eq!(
            lines[4],
            format!(
                "[8, 16)                1 |{}{}|",
                "@".repeat(13),
                " ".repeat(39)
            )
        );
    }

    #[test]
    fn markdown_gives_the_same_figures_as_a_table() {
        let st = Style {
            color: false,
            markdown: true,
        };
        assert_eq!(
            markdown(&chart(), &st),
            "### @a\\_b (µs)\n\n- count 5\n\n| bucket | count |\n| --- | ---: |\n\
             | `[2, 4)` | 4 |\n| `[4, 8)` | 0 |\n| `[8, 16)` | 1 |\n"
        );
    }
}
