//! No file below cmd/ mentions clap (docs/architecture.md): the command line (main.rs,
//! cmd/, cli/) turns arguments into the library's plain options, and the library never
//! sees how they were parsed. A test reads every file of src/ and fails on any other that
//! names clap, in code or in a comment.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The command line's own files, where clap belongs.
fn is_command_line(relative: &Path) -> bool {
    relative == Path::new("main.rs") || relative.starts_with("cmd") || relative.starts_with("cli")
}

/// Whether `text` has the word `clap` (not as part of a longer name).
fn names_clap(text: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices("clap").any(|(at, word)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// The files of src/ outside the command line that name clap, as paths below src/.
fn library_files_naming_clap(src: &Path) -> BTreeSet<String> {
    let mut files: Vec<PathBuf> = Vec::new();
    crate::import_graph::rust_files(src, &mut files);
    files
        .iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(src).unwrap();
            let text = std::fs::read_to_string(file).unwrap();
            let this_test = relative == Path::new("clap_boundary.rs");
            (!is_command_line(relative) && !this_test && names_clap(&text))
                .then(|| relative.to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn no_library_file_uses_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = library_files_naming_clap(&src);
    assert!(
        found.is_empty(),
        "these library files use clap; define the clap side in src/cmd or src/cli and convert \
         into a plain enum or options struct: {found:?}"
    );
}

#[test]
fn clap_is_found_as_a_word() {
    assert!(names_clap("use clap::Args;"));
    assert!(names_clap("#[derive(clap::ValueEnum)]"));
    assert!(names_clap("// the usage errors clap finds"));
    assert!(!names_clap("clapper and reclap_count"));
    assert!(is_command_line(Path::new("cmd/history.rs")));
    assert!(is_command_line(Path::new("main.rs")));
    assert!(!is_command_line(Path::new("history/commands.rs")));
}
