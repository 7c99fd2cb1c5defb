//! What every fuzz target does with its input: import it, and when that succeeds, push the
//! run through everything a user would run on it (analysis, report, histograms, exports).
//! Any panic, overflow or out-of-bounds access anywhere on that path is a finding.

use framelab::analyze::pair::PairSpec;
use framelab::import::{self, Format, ImportOptions};

/// The first byte picks options, so both strict and `--skip-bad` paths are explored.
fn options(flags: u8) -> ImportOptions {
    ImportOptions {
        skip_bad: flags & 1 == 1,
        frame_arg: (flags & 2 == 2).then(|| "frame".to_string()),
        frame_regex: (flags & 4 == 4).then(|| regex::Regex::new(r"#(\d+)").unwrap()),
        pairs: if flags & 8 == 8 {
            vec![PairSpec::parse("commit:release").unwrap()]
        } else {
            Vec::new()
        },
        key: (flags & 16 == 16).then(|| "id".to_string()),
        ..ImportOptions::default()
    }
}

pub fn import(format: Format, data: &[u8]) {
    let Some((&flags, input)) = data.split_first() else {
        return;
    };
    if let Ok(run) = import::parse_bytes(format, input, options(flags)) {
        use_run(&run);
    }
}

pub fn detect_and_import(data: &[u8]) {
    if let Some(format) = import::detect::detect(data) {
        if let Ok(run) = import::parse_bytes(format, data, options(1)) {
            use_run(&run);
        }
    }
}

fn use_run(run: &framelab::model::Run) {
    let analysis = framelab::analyze::analyze(run);
    let _ = framelab::report::render(&analysis, framelab::report::Format::Json, false);
    let _ = framelab::hist::render_run(run, &framelab::hist::HistOptions::default());
    for format in [
        framelab::export::ExportFormat::Chrome,
        framelab::export::ExportFormat::Perfetto,
        framelab::export::ExportFormat::Csv,
    ] {
        let _ = framelab::export::export(run, format, &mut std::io::sink());
    }
}
