//! The import graph between the files of src/ has no circle (docs/architecture.md): a test
//! reads every file's `use` lines and `crate::`/`super::`/`framelab::` paths, resolves each
//! to the file that defines it, and fails on any strongly connected group of two or more.
//! A folder's `mod.rs` and the files inside it are one room: arrows between them are not
//! counted, arrows between siblings and across folders are.
//! Test-only code (`#[cfg(test)]` modules) is left out: tests may look up and around.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file's place: which crate (the library, or the `framelab` binary: main.rs, cmd/, cli/)
/// and its module path inside it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Module {
    binary: bool,
    path: Vec<String>,
}

struct SourceFile {
    module: Module,
    text: String,
}

fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap();
    let mut path: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        path.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        path.pop();
    }
    let binary = relative.starts_with("main.rs")
        || relative.starts_with("cmd")
        || relative.starts_with("cli");
    Module { binary, path }
}

pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text without comments and without its inline test module (`#[cfg(test)] mod
/// tests { … }`, at the end of a file).
pub(crate) fn production_code(text: &str) -> String {
    let test_module = text.match_indices("#[cfg(test)]").find(|(at, marker)| {
        let after = text[at + marker.len()..].trim_start();
        let declaration = &after[..after.find(['{', ';']).unwrap_or(after.len())];
        after.starts_with("mod ") && after[declaration.len()..].starts_with('{')
    });
    let text = match test_module {
        Some((at, _)) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d as f, e}}` → `a::b`, `a::c::d`, `a::c::e`.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![path.split_whitespace().collect()];
    };
    let prefix: String = tree[..open].split_whitespace().collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand_use(&format!("{prefix}{p}")))
        .collect()
}

/// The paths a file names: its `use` trees expanded, then every other
/// `crate::`/`super::`/`self::`/`framelab::` path in its code.
fn named_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = String::with_capacity(code.len());
    let mut remaining = code;
    while let Some(at) = find_use(remaining) {
        rest.push_str(&remaining[..at]);
        let after = &remaining[at..];
        let end = after.find(';').unwrap_or(after.len());
        let tree = after[..end].trim_start_matches("use").trim();
        paths.extend(expand_use(tree));
        remaining = &after[(end + 1).min(after.len())..];
    }
    rest.push_str(remaining);
    let bytes = rest.as_bytes();
    for root in ["crate::", "super::", "self::", "framelab::"] {
        let mut from = 0;
        while let Some(found) = rest[from..].find(root) {
            let at = from + found;
            from = at + root.len();
            let joined = at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
            let continues_path = at >= 2 && &rest[at - 2..at] == "::";
            if joined || continues_path {
                continue;
            }
            let end = rest[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(rest.len(), |e| at + e);
            paths.push(rest[at..end].trim_end_matches(':').to_owned());
        }
    }
    paths
}

/// Where the next `use` statement starts (at a line's start, after any visibility).
fn find_use(code: &str) -> Option<usize> {
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let body = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if body.starts_with("use ") {
            return Some(offset + line.len() - body.len());
        }
        offset += line.len();
    }
    None
}

/// The file a path names from `from`: the longest prefix of its absolute module path that
/// is a file. `None` for paths into other crates.
fn resolve(path: &str, from: &Module, files: &BTreeMap<Module, usize>) -> Option<usize> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (binary, mut absolute) = match segments.first().copied()? {
        "crate" => (from.binary, Vec::new()),
        "framelab" => (false, Vec::new()),
        // A file `a/b.rs` (or `a/b/mod.rs`) is module a::b: `self` is it, `super` is a.
        "self" | "super" => (from.binary, from.path.clone()),
        // `use plan::Changes` in whatif/mod.rs: a path from one of the module's children.
        child => {
            let mut base = from.path.clone();
            base.push(child.to_owned());
            let local = Module {
                binary: from.binary,
                path: base,
            };
            files.contains_key(&local).then_some(())?;
            (from.binary, from.path.clone())
        }
    };
    let first = segments.remove(0);
    if !matches!(first, "crate" | "framelab" | "self" | "super") {
        absolute.push(first.to_owned());
    }
    let mut rest = segments.into_iter().peekable();
    if first == "super" {
        absolute.pop();
    }
    while rest.peek() == Some(&"super") {
        rest.next();
        absolute.pop();
    }
    absolute.extend(rest.map(str::to_owned));
    (0..=absolute.len()).rev().find_map(|n| {
        files
            .get(&Module {
                binary,
                path: absolute[..n].to_vec(),
            })
            .copied()
    })
}

/// Whether `inner` is `outer` or lies inside it: a folder's `mod.rs` declares and re-exports
/// its files and they take what it shares through `super::`, which is containment, not an
/// arrow between rooms.
fn contains(outer: &Module, inner: &Module) -> bool {
    outer.binary == inner.binary && inner.path.starts_with(&outer.path)
}

/// The strongly connected groups of two or more files (Tarjan's algorithm).
fn circles(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                s.found.push(group);
            }
        }
    }
    let n = edges.len();
    let mut state = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.found
}

/// Files declared `#[cfg(test)] mod NAME;` by `file`: test code, left out.
pub(crate) fn test_only(file: &Path, text: &str, out: &mut BTreeSet<PathBuf>) {
    let own_dir = matches!(
        file.file_stem().and_then(|s| s.to_str()),
        Some("mod" | "lib" | "main")
    );
    let dir = if own_dir {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub(crate) ").unwrap_or(after);
        let Some(declared) = after.strip_prefix("mod ") else {
            continue;
        };
        let name: String = (declared.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if declared[name.len()..].trim_start().starts_with(';') {
            out.insert(dir.join(format!("{name}.rs")));
            out.insert(dir.join(&name).join("mod.rs"));
        }
    }
}

#[test]
fn no_file_imports_itself_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths.sort();
    let mut tests = BTreeSet::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        test_only(path, &text, &mut tests);
    }
    let sources: Vec<(PathBuf, SourceFile)> = paths
        .into_iter()
        .filter(|p| !tests.contains(p) && !p.ends_with("import_graph.rs"))
        .map(|p| {
            let text = production_code(&std::fs::read_to_string(&p).unwrap());
            let module = module_of(&src, &p);
            (p, SourceFile { module, text })
        })
        .collect();
    let files: BTreeMap<Module, usize> = (sources.iter().enumerate())
        .map(|(i, (_, f))| (f.module.clone(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = (sources.iter())
        .map(|(_, file)| {
            named_paths(&file.text)
                .iter()
                .filter_map(|p| resolve(p, &file.module, &files))
                .filter(|&target| !contains(&sources[target].1.module, &file.module))
                .filter(|&target| !contains(&file.module, &sources[target].1.module))
                .collect()
        })
        .collect();
    let found = circles(&edges);
    let shown: Vec<String> = found
        .iter()
        .map(|group| {
            let mut names: Vec<String> = group
                .iter()
                .map(|&i| {
                    sources[i]
                        .0
                        .strip_prefix(&src)
                        .unwrap()
                        .display()
                        .to_string()
                })
                .collect();
            names.sort();
            names.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "import circles between files of src/ (move what both sides need one floor down):\n{}",
        shown.join("\n")
    );
}

/// The same for the Python package: `from ._x import y` between its modules, wherever it
/// stands (a function-level import ties the files as much as one at the top).
#[test]
fn no_python_module_imports_itself_back() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/framelab");
    let mut names: Vec<String> = std::fs::read_dir(&package)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "py").then_some(stem)
        })
        .collect();
    names.sort();
    let index: BTreeMap<&str, usize> = (names.iter().enumerate())
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = names
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(package.join(format!("{name}.py"))).unwrap();
            text.lines()
                .filter_map(|line| line.trim_start().strip_prefix("from ."))
                .filter_map(|rest| index.get(rest.split_whitespace().next()?).copied())
                .filter(|&target| names[target] != *name)
                .collect()
        })
        .collect();
    let found: Vec<Vec<&str>> = (circles(&edges).into_iter())
        .map(|group| group.into_iter().map(|i| names[i].as_str()).collect())
        .collect();
    assert!(
        found.is_empty(),
        "import circles in python/framelab: {found:?}"
    );
}

#[test]
fn use_trees_expand_and_paths_resolve() {
    assert_eq!(
        expand_use("crate::a::{b, c::{d as f, e}}"),
        ["crate::a::b", "crate::a::c::d", "crate::a::c::e"]
    );
    let m = |binary, path: &[&str]| Module {
        binary,
        path: path.iter().map(|s| s.to_string()).collect(),
    };
    let files = BTreeMap::from([
        (m(false, &[]), 0),
        (m(false, &["report"]), 1),
        (m(false, &["report", "facts"]), 2),
        (m(false, &["report", "style"]), 3),
        (m(true, &["cmd"]), 4),
    ]);
    let facts = m(false, &["report", "facts"]);
    assert_eq!(resolve("super::style::Style", &facts, &files), Some(3));
    assert_eq!(
        resolve("crate::report::facts::title", &facts, &files),
        Some(2)
    );
    assert_eq!(resolve("crate::report::Format", &facts, &files), Some(1));
    assert_eq!(resolve("std::fs::read", &facts, &files), None);
    let cmd = m(true, &["cmd"]);
    assert_eq!(
        resolve("framelab::report::style::Style", &cmd, &files),
        Some(3)
    );
    assert_eq!(resolve("self::x", &cmd, &files), Some(4));
    let report = m(false, &["report"]);
    assert_eq!(resolve("style::Style", &report, &files), Some(3));
    assert_eq!(resolve("serde::Serialize", &report, &files), None);
}
