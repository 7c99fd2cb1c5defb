//! Strings from outside framelab (stage, thread, process and run names, imported trace
//! names, file names, commands) as terminals and Markdown show them. A measured program or
//! a trace can hold anything: an escape sequence that retitles the terminal window or
//! clears it, a newline that forges a report line, 10 KB of name. Every text and Markdown
//! output passes such strings through here; JSON, the run file and exports keep them whole.

use std::borrow::Cow;

/// The most characters of a name shown (a stage, a thread, a table cell).
pub const NAME_CHARS: usize = 80;

/// The most characters of a longer text shown (a command line, a note, an error).
pub const TEXT_CHARS: usize = 1000;

/// Characters a terminal acts on or that reorder what is shown: C0 and C1 controls, DEL,
/// and the bidirectional overrides and isolates.
fn is_hostile(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every hostile character written as an escape (`\x1b`, `\n`, `\u{202e}`), and
/// at most `max` characters of it, ending in `…` when cut.
pub fn escaped(s: &str, max: usize) -> Cow<'_, str> {
    let clean = !s.chars().any(is_hostile);
    // Byte length bounds the character count: most names need no counting.
    if clean && (s.len() <= max || s.chars().count() <= max) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().min(max.saturating_mul(4)));
    let mut shown = 0;
    for c in s.chars() {
        let piece = match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if (c as u32) < 0x80 && is_hostile(c) => format!("\\x{:02x}", c as u32),
            c if is_hostile(c) => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        };
        let width = piece.chars().count();
        if shown + width > max.saturating_sub(1) {
            out.push('…');
            return Cow::Owned(out);
        }
        shown += width;
        out.push_str(&piece);
    }
    Cow::Owned(out)
}

/// A name as shown: escaped, at most [`NAME_CHARS`] characters.
pub fn name(s: &str) -> Cow<'_, str> {
    escaped(s, NAME_CHARS)
}

/// A longer text as shown: escaped, at most [`TEXT_CHARS`] characters.
pub fn text(s: &str) -> Cow<'_, str> {
    escaped(s, TEXT_CHARS)
}

/// Every line of a whole rendered text through [`escaped`], never cut: for outputs built
/// from many names, a last guard that no name reached the terminal raw.
pub fn lines(text: &str) -> String {
    text.split('\n')
        .map(|line| escaped(line, usize::MAX))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Markdown's own characters escaped, so a name stays text (a `|` does not end a table
/// cell, a `*` starts no emphasis). Apply after [`name`] or [`text`].
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\`*_[]<>|#~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_become_visible_escapes() {
        assert_eq!(name("\x1b]0;pwned\x07\x1b[2J"), r"\x1b]0;pwned\x07\x1b[2J");
        assert_eq!(name("a\nb\tc\r"), r"a\nb\tc\r");
        assert_eq!(name("x\u{9b}31m\u{7f}"), r"x\u{9b}31m\x7f");
        assert_eq!(name("abc\u{202e}def"), r"abc\u{202e}def");
        assert!(matches!(name("decode"), Cow::Borrowed("decode")));
        assert_eq!(name("µs · ünïcode"), "µs · ünïcode");
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        let long = "n".repeat(10_000);
        let shown = name(&long);
        assert_eq!(shown.chars().count(), NAME_CHARS);
        assert!(shown.ends_with('…'));
        let escapes = "\x1b".repeat(100);
        let shown = name(&escapes);
        assert!(shown.chars().count() <= NAME_CHARS, "{shown}");
        assert!(!shown.contains('\x1b'));
        assert_eq!(name(&"é".repeat(NAME_CHARS)).chars().count(), NAME_CHARS);
        assert!(!name(&"é".repeat(NAME_CHARS)).ends_with('…'));
    }

    #[test]
    fn markdown_specials_are_escaped() {
        assert_eq!(markdown("nal_bytes|x*"), r"nal\_bytes\|x\*");
    }
}
