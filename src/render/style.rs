//! How report text is decorated: ANSI colour for a terminal, escaping for Markdown, and
//! names from the measured program made safe to print.

/// How to decorate: ANSI colour for terminals, escaping for Markdown.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    pub color: bool,
    pub markdown: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }
    /// Text holding names from the measured program or a trace: control characters
    /// escaped, a long text cut (`crate::display`), and in Markdown kept from turning
    /// into Markdown.
    pub fn name(&self, s: &str) -> String {
        let shown = crate::display::text(s);
        if self.markdown {
            crate::display::markdown(&shown)
        } else {
            shown.into_owned()
        }
    }
}
