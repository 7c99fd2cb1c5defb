//! No file below cmd/ prints (docs/architecture.md): what the library says as it goes is
//! said through `log` (`log::warn!`, `log::info!`), and the command line's one logger
//! (`cmd/said.rs`) writes it to standard error; what it hands back the command prints. A
//! test reads every file of src/ and fails on any other whose code (comments and test
//! modules left out) prints to standard output or error itself, a progress bar included.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::import_graph::{production_code, rust_files, test_only};

/// The command line's own files, where printing belongs.
fn is_command_line(relative: &Path) -> bool {
    relative == Path::new("main.rs") || relative.starts_with("cmd") || relative.starts_with("cli")
}

/// Files that reach a standard stream for bytes that are not framelab's to say, each with
/// why: they pass on what the user asked for or what a program of the run wrote.
const PASSING_ON: [(&str, &str); 3] = [
    (
        "destination.rs",
        "writes the output a command asked for to `-` (standard output)",
    ),
    (
        "session/output.rs",
        "gives the measured command framelab's standard error as its standard output",
    ),
    (
        "session/prepare.rs",
        "passes on what the prepare command wrote on its standard error",
    ),
];

/// The ways of printing `code` uses, each named once.
fn prints(code: &str) -> Vec<&'static str> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let macros = ["println!", "eprintln!", "print!", "eprint!", "dbg!"];
    // A progress bar drawn on a standard stream prints too.
    let streams = [
        "io::stdout()",
        "io::stderr()",
        "ProgressDrawTarget::stdout",
        "ProgressDrawTarget::stderr",
    ];
    let mut found: Vec<&'static str> = macros
        .into_iter()
        .filter(|name| {
            code.match_indices(name)
                .any(|(at, _)| !code[..at].chars().next_back().is_some_and(is_word))
        })
        .collect();
    found.extend(streams.into_iter().filter(|call| code.contains(call)));
    found
}

/// The files of src/ outside the command line that print, as paths below src/ with how.
fn library_files_printing(src: &Path) -> BTreeSet<String> {
    let mut files: Vec<PathBuf> = Vec::new();
    rust_files(src, &mut files);
    let mut tests = BTreeSet::new();
    for file in &files {
        test_only(file, &std::fs::read_to_string(file).unwrap(), &mut tests);
    }
    files
        .iter()
        .filter(|file| !tests.contains(*file))
        .filter_map(|file| {
            let relative = file.strip_prefix(src).unwrap();
            let shown = relative.to_string_lossy().into_owned();
            let this_test = relative == Path::new("print_boundary.rs");
            let passing_on = PASSING_ON.iter().any(|(path, _)| *path == shown);
            if is_command_line(relative) || this_test || passing_on {
                return None;
            }
            let how = prints(&production_code(&std::fs::read_to_string(file).unwrap()));
            (!how.is_empty()).then(|| format!("{shown} ({})", how.join(", ")))
        })
        .collect()
}

#[test]
fn no_library_file_prints() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = library_files_printing(&src);
    assert!(
        found.is_empty(),
        "these library files print; say it with log::warn!/log::info! (the command line's \
         logger writes it), or hand it back for the command to print: {found:?}"
    );
}

#[test]
fn printing_is_found_in_code_only() {
    assert_eq!(prints(r#"eprintln!("framelab: {x}");"#), ["eprintln!"]);
    assert_eq!(prints("print!(\"a\"); println!()"), ["println!", "print!"]);
    assert_eq!(
        prints("let out = std::io::stderr().lock();"),
        ["io::stderr()"]
    );
    assert_eq!(
        prints("ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10))"),
        ["ProgressDrawTarget::stderr"]
    );
    assert!(prints("log::warn!(\"x\"); bar.println(line); sprint!()").is_empty());
    let code = production_code("// eprintln!(\"said\")\nfn f() {}\n#[cfg(test)]\nmod tests {\n    fn t() { println!(\"x\") }\n}\n");
    assert!(prints(&code).is_empty(), "{code}");
    for (path, _) in PASSING_ON {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("src")
                .join(path)
                .is_file(),
            "{path}"
        );
    }
}
