//! One `Format` for everything framelab writes, and the formats each command writes,
//! listed once: the command line offers exactly these (a test in `cmd/format.rs` holds
//! it) and every renderer refuses any other with one line.

use anyhow::{anyhow, Result};

/// An output format. Which commands write which is in the [`Formats`] constants below.
/// Text is what a command prints unless told otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Format {
    #[default]
    Text,
    Markdown,
    Json,
    Csv,
    Html,
    Parquet,
    Perfetto,
    Chrome,
    Folded,
    Svg,
    Speedscope,
}

impl Format {
    /// The word `--format` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
            Format::Parquet => "parquet",
            Format::Perfetto => "perfetto",
            Format::Chrome => "chrome",
            Format::Folded => "folded",
            Format::Svg => "svg",
            Format::Speedscope => "speedscope",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The formats one command writes.
#[derive(Clone, Copy, Debug)]
pub struct Formats {
    /// The command as typed after `framelab`.
    pub command: &'static str,
    pub formats: &'static [Format],
}

use Format::*;

/// The reports of `run`, `demo` and `import`, and `report` of a file of several runs.
pub const RUN_REPORT: Formats = Formats {
    command: "run",
    formats: &[Text, Markdown, Json],
};
pub const REPORT: Formats = Formats {
    command: "report",
    formats: &[Text, Markdown, Json, Html],
};
pub const COMPARE: Formats = Formats {
    command: "compare",
    formats: &[Text, Markdown, Json, Csv, Html],
};
pub const TIMERS: Formats = Formats {
    command: "timers",
    formats: &[Text, Markdown, Json],
};
pub const WHATIF: Formats = Formats {
    command: "whatif",
    formats: &[Text, Markdown, Json],
};
pub const HIST: Formats = Formats {
    command: "hist",
    formats: &[Text, Markdown, Json],
};
pub const EXPORT: Formats = Formats {
    command: "export",
    formats: &[Perfetto, Chrome, Csv],
};
pub const PROFILE: Formats = Formats {
    command: "profile",
    formats: &[Text, Markdown, Json, Folded, Svg, Speedscope],
};
pub const HISTORY_SHOW: Formats = Formats {
    command: "history show",
    formats: &[Text, Markdown, Json],
};
pub const HISTORY_CHECK: Formats = Formats {
    command: "history check",
    formats: &[Text, Markdown, Json],
};
/// `probes` has no `--format`: its listing is for people.
pub const PROBES: Formats = Formats {
    command: "probes",
    formats: &[Text],
};
pub const HISTORY_EXPORT: Formats = Formats {
    command: "history export",
    formats: &[Csv, Parquet],
};

impl Formats {
    pub fn accepts(&self, format: Format) -> bool {
        self.formats.contains(&format)
    }

    /// `format` when this command writes it, else [`Formats::refuse`]'s line.
    pub fn check(&self, format: Format) -> Result<Format> {
        match self.accepts(format) {
            true => Ok(format),
            false => Err(self.refuse(format)),
        }
    }

    /// The one line a renderer gives for a format its command does not write.
    pub fn refuse(&self, format: Format) -> anyhow::Error {
        let names: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        anyhow!(
            "framelab {} writes {}, not {format}: choose one of those",
            self.command,
            or_list(&names)
        )
    }
}

/// `a, b or c`.
fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (file below src/, name) of an enum; (file below src/, name, target) of a `choice!`.
    type Declared = (Vec<(String, String)>, Vec<(String, String, String)>);

    /// Every `enum …Format` declared in src/, and every `choice!` of formats on the command
    /// line with what it becomes, as (file below src/, name[, target]).
    fn format_types() -> Declared {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        crate::import_graph::rust_files(&src, &mut files);
        let declared =
            regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?enum\s+(\w*Format)\b").unwrap();
        let choice = regex::Regex::new(r"(?m)^\s*(\w*Format)\s*=>\s*([\w:]+)\s*\{").unwrap();
        let (mut enums, mut choices) = (Vec::new(), Vec::new());
        files.sort();
        for file in &files {
            let relative = file
                .strip_prefix(&src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let text = std::fs::read_to_string(file).unwrap();
            for found in declared.captures_iter(&text) {
                enums.push((relative.clone(), found[1].to_owned()));
            }
            for found in choice.captures_iter(&text) {
                choices.push((relative.clone(), found[1].to_owned(), found[2].to_owned()));
            }
        }
        (enums, choices)
    }

    /// Issue 28's proof: one `Format` for everything framelab writes. The only other enum
    /// of formats is the one of the traces `import` reads; the command line's `ValueEnum`s
    /// (`cmd/format.rs`) each become this `Format`.
    #[test]
    fn one_format_enum_names_every_output() {
        let (enums, choices) = format_types();
        let owned = |file: &str, name: &str| (file.to_owned(), name.to_owned());
        assert_eq!(
            enums,
            [
                owned("import/mod.rs", "Format"),
                owned("render/format.rs", "Format")
            ],
            "declare no other format enum: add the format to render::Format and to the \
             `Formats` of the commands that write it"
        );
        assert!(choices.len() >= 11, "{choices:?}");
        for (file, name, target) in &choices {
            let input = (file.as_str(), name.as_str()) == ("cli/choices.rs", "ImportFormat");
            match input {
                true => assert_eq!(target, "framelab::import::Format"),
                false => assert_eq!(
                    (file.as_str(), target.as_str()),
                    ("cmd/format.rs", "Format")
                ),
            }
        }
    }

    #[test]
    fn a_format_a_command_does_not_write_is_refused_with_those_it_does() {
        assert_eq!(TIMERS.check(Json).unwrap(), Json);
        let error = TIMERS.check(Csv).unwrap_err().to_string();
        assert_eq!(
            error,
            "framelab timers writes text, markdown or json, not csv: choose one of those"
        );
    }

    #[test]
    fn a_renderer_refuses_a_format_its_command_does_not_write() {
        use crate::analyze::{analyze, fixtures::reference_run};
        let a = analyze(&reference_run());
        for format in RUN_REPORT.formats {
            assert!(
                crate::report::render(&a, *format, false).is_ok(),
                "{format}"
            );
        }
        let error = crate::report::render(&a, Html, false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "framelab run writes text, markdown or json, not html: choose one of those"
        );
    }
}
