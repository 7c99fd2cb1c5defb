//! A comparison made and written where it was asked: `-o FILE` in its format, and each
//! `--export-*` file in its own. What goes to standard output is handed back, for the
//! command line to print.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{CompareOptions, Comparison, Source};
use crate::render::Format;

/// Where a comparison goes, checked (the files are none of those compared, nor one
/// another).
#[derive(Debug, Default)]
pub struct Destinations {
    /// The format of `-o`, or of standard output.
    pub format: Format,
    /// `-o FILE`; `None`: standard output.
    pub output: Option<PathBuf>,
    /// `--export-json/-csv/-markdown FILE`: each file and its format, in that order.
    pub exports: Vec<(PathBuf, Format)>,
    /// A file compared that is not kept (`bench -o /dev/null`, a temporary file removed at
    /// the end): its path is shown as `/dev/null (not kept)`.
    pub unkept: Option<PathBuf>,
}

/// A comparison made and written.
pub struct Delivered {
    pub comparison: Comparison,
    /// What standard output shows (in `Destinations::format`); `None` when `-o` took it.
    pub printed: Option<String>,
    /// The files written, in order: `-o`'s first.
    pub written: Vec<PathBuf>,
    /// Why an `--export-*` file could not be written: the files before it were, and
    /// standard output still shows the comparison.
    pub failed: Option<anyhow::Error>,
}

/// Compares `sources` and writes the comparison where `to` says.
pub fn compare_into(
    sources: &[Source],
    options: &CompareOptions,
    to: &Destinations,
) -> Result<Delivered> {
    let (comparison, document, text) = if to.format == Format::Html {
        let (comparison, page) = super::compare_html(sources, options)?;
        let document = super::document(&comparison);
        (comparison, document, page)
    } else {
        let comparison = super::compare(sources, options)?;
        let document = super::document(&comparison);
        let text = super::write(&document, to.format)?;
        (comparison, document, text)
    };
    let text = shown(text, to.unkept.as_deref());
    let mut written = Vec::new();
    let printed = match &to.output {
        Some(file) => {
            crate::report::html::write(file, &text, None)?;
            written.push(file.clone());
            None
        }
        None => Some(text),
    };
    let mut failed = None;
    for (file, format) in &to.exports {
        let exported = super::write(&document, *format)
            .map(|text| shown(text, to.unkept.as_deref()))
            .and_then(|text| {
                std::fs::write(file, text).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot write the comparison to {}: {e}; choose a writable path",
                        file.display()
                    )
                })
            });
        match exported {
            Ok(()) => written.push(file.clone()),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    Ok(Delivered {
        comparison,
        printed,
        written,
        failed,
    })
}

/// `text` with the path of a file not kept named as `/dev/null (not kept)`.
fn shown(text: String, unkept: Option<&Path>) -> String {
    match unkept {
        Some(path) => text.replace(&path.display().to_string(), "/dev/null (not kept)"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::reference_run;

    /// Two run files of the reference run, each a variant; and quick options.
    fn two_files(dir: &Path) -> (Vec<Source>, CompareOptions) {
        let sources = ["a", "b"]
            .iter()
            .map(|name| {
                let path = dir.join(format!("{name}.framelab"));
                crate::store::write_run(&path, &reference_run()).unwrap();
                super::super::parse_source(&path.to_string_lossy()).unwrap()
            })
            .collect();
        let options = CompareOptions {
            resamples: 200,
            ..CompareOptions::default()
        };
        (sources, options)
    }

    #[test]
    fn the_exports_are_written_and_standard_output_keeps_the_format_asked() {
        let dir = tempfile::tempdir().unwrap();
        let (sources, options) = two_files(dir.path());
        let (json, md) = (dir.path().join("c.json"), dir.path().join("c.md"));
        let to = Destinations {
            format: Format::Text,
            exports: vec![(json.clone(), Format::Json), (md.clone(), Format::Markdown)],
            ..Destinations::default()
        };
        let delivered = compare_into(&sources, &options, &to).unwrap();
        assert!(delivered.failed.is_none());
        assert_eq!(delivered.written, [json.clone(), md.clone()]);
        let document = super::super::document(&delivered.comparison);
        assert_eq!(
            delivered.printed.as_deref(),
            Some(
                super::super::write(&document, Format::Text)
                    .unwrap()
                    .as_str()
            )
        );
        let exported: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(exported.is_object());
        assert_eq!(
            std::fs::read_to_string(&md).unwrap(),
            super::super::write(&document, Format::Markdown).unwrap()
        );
    }

    /// `-o` takes what standard output would show; an export that cannot be written is
    /// handed back after the files before it were written, and none after it is.
    #[test]
    fn an_export_that_cannot_be_written_is_handed_back_after_those_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let (sources, options) = two_files(dir.path());
        let page = dir.path().join("c.html");
        let (json, csv, md) = (
            dir.path().join("c.json"),
            dir.path().join("gone/c.csv"),
            dir.path().join("c.md"),
        );
        let to = Destinations {
            format: Format::Html,
            output: Some(page.clone()),
            exports: vec![
                (json.clone(), Format::Json),
                (csv, Format::Csv),
                (md.clone(), Format::Markdown),
            ],
            unkept: None,
        };
        let delivered = compare_into(&sources, &options, &to).unwrap();
        assert!(delivered.printed.is_none(), "-o took it");
        assert_eq!(delivered.written, [page.clone(), json]);
        assert!(std::fs::read_to_string(&page).unwrap().contains("<html"));
        let failed = delivered.failed.unwrap().to_string();
        assert!(
            failed.starts_with("cannot write the comparison to ")
                && failed.ends_with("; choose a writable path"),
            "{failed}"
        );
        assert!(!md.exists(), "nothing after the failure");
    }

    #[test]
    fn a_file_not_kept_is_named_as_the_null_device() {
        let text = "framelab compare /tmp/x.framelab: a 3 runs".to_owned();
        assert_eq!(
            shown(text.clone(), Some(Path::new("/tmp/x.framelab"))),
            "framelab compare /dev/null (not kept): a 3 runs"
        );
        assert_eq!(shown(text.clone(), None), text);
    }
}
