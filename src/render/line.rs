//! A line of text made of pieces (a name, code, emphasis, a tone to colour), the unit every
//! document block is written with, and how one is shown in each format. Below the document
//! and the blocks that lay lines out (`render::chart`), so both read it one way.

use super::style::Style;

/// A line of text made of pieces, each shown as its kind says in each format.
pub type Line = Vec<Span>;

#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub text: String,
    pub kind: SpanKind,
    /// A name from the measured program, a trace or a store: escaped and cut
    /// ([`Style::name`]), and in Markdown kept from turning into Markdown.
    pub name: bool,
    /// How it is coloured on a terminal that shows colour; the other formats leave it.
    pub tone: Option<Tone>,
}

/// What a piece of text warns of, for the writers that colour it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tone {
    /// Worth a look (yellow): a late count under 1%, a probe that never fired.
    Warning,
    /// Something lost or failed (red): events dropped, a metric not read.
    Bad,
    /// A line that heads those under it (bold).
    Strong,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SpanKind {
    Plain,
    /// Bold in Markdown.
    Strong,
    /// Italic in Markdown.
    Emphasis,
    /// A code span in Markdown (a command line).
    Code,
}

impl Span {
    pub fn plain(text: impl Into<String>) -> Span {
        Span {
            text: text.into(),
            kind: SpanKind::Plain,
            name: false,
            tone: None,
        }
    }
    pub fn name(text: impl Into<String>) -> Span {
        Span {
            name: true,
            ..Span::plain(text)
        }
    }
    pub fn strong(text: impl Into<String>) -> Span {
        Span::plain(text).with(SpanKind::Strong)
    }
    pub fn emphasis(text: impl Into<String>) -> Span {
        Span::plain(text).with(SpanKind::Emphasis)
    }
    pub fn code(text: impl Into<String>) -> Span {
        Span::plain(text).with(SpanKind::Code)
    }
    pub fn with(self, kind: SpanKind) -> Span {
        Span { kind, ..self }
    }
    pub fn toned(self, tone: Tone) -> Span {
        Span {
            tone: Some(tone),
            ..self
        }
    }
}

/// A line of one plain piece.
pub fn plain(text: impl Into<String>) -> Line {
    vec![Span::plain(text)]
}

/// `line` as `st` shows it: names escaped, tones coloured (pieces of one tone in a row
/// coloured once), and in Markdown each piece's markup.
pub fn shown(line: &Line, st: &Style) -> String {
    let mut out = String::new();
    let mut toned: Option<(Tone, String)> = None;
    let paint = |(tone, text): (Tone, String)| match tone {
        Tone::Warning => st.yellow(&text),
        Tone::Bad => st.red(&text),
        Tone::Strong => st.bold(&text),
    };
    for span in line {
        let text = if span.name {
            st.name(&span.text)
        } else {
            span.text.clone()
        };
        if !st.markdown {
            if let (Some((tone, run)), Some(this)) = (&mut toned, span.tone) {
                if *tone == this {
                    run.push_str(&text);
                    continue;
                }
            }
            if let Some(run) = toned.take() {
                out.push_str(&paint(run));
            }
            match span.tone {
                Some(tone) => toned = Some((tone, text)),
                None => out.push_str(&text),
            }
            continue;
        }
        match span.kind {
            SpanKind::Plain => out.push_str(&text),
            SpanKind::Strong => out.push_str(&format!("**{text}**")),
            SpanKind::Emphasis => out.push_str(&format!("_{text}_")),
            SpanKind::Code => out.push_str(&code_span(&text)),
        }
    }
    if let Some(run) = toned {
        out.push_str(&paint(run));
    }
    out
}

/// An inline code span that survives backticks in its content.
pub(crate) fn code_span(s: &str) -> String {
    let longest_run = s
        .split(|c| c != '`')
        .map(|run| run.len())
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_backticks() {
        assert_eq!(code_span("ls -l"), "`ls -l`");
        assert_eq!(code_span("echo `date`"), "`` echo `date` ``");
        assert_eq!(code_span("a``b"), "```a``b```");
    }
}
