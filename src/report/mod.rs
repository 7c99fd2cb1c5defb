//! Reports: text for terminals, Markdown for pull requests, JSON with every number.

mod json;
mod markdown;
mod text;

use crate::analyze::Analysis;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// Renders `analysis`; `color` only applies to text.
pub fn render(analysis: &Analysis, format: Format, color: bool) -> String {
    match format {
        Format::Text => text::render(analysis, color),
        Format::Markdown => markdown::render(analysis),
        Format::Json => json::render(analysis),
    }
}
