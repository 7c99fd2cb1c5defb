//! How commands print: to a closed pipe without a panic, in colour only on a terminal.

use std::io::IsTerminal;

use framelab::render::Format;
use framelab::report;

/// Said when `-o` named the null device.
pub(super) const UNKEPT: &str =
    "framelab: -o is the null device: measured and reported, and no file was kept";

/// Writes what a command prints to standard output (`destination::print`).
pub(super) fn emit(text: &str) -> anyhow::Result<()> {
    framelab::destination::print(text)
}

/// Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
pub(super) fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The report's line saying where the HTML page is.
pub(super) fn html_line(file: &std::path::Path, format: Format) -> String {
    let shown = framelab::display::text(&file.display().to_string()).into_owned();
    match format {
        Format::Text => format!("\n  html      {shown}\n"),
        Format::Markdown => format!("\n- **html** {}\n", framelab::display::markdown(&shown)),
        // JSON stays one document; standard error says where the page is.
        _ => String::new(),
    }
}

/// Says on standard error that `what` was written to `file`, and opens it if asked.
pub(super) fn written(file: &std::path::Path, what: &str, open: bool) {
    let shown = framelab::display::text(&file.display().to_string()).into_owned();
    eprintln!("framelab: wrote {what} to {shown}");
    if open {
        match report::html::open(file) {
            Ok(()) => eprintln!("framelab: opened {shown} in the browser"),
            Err(why) => eprintln!("framelab: could not open it: {why}"),
        }
    }
}
