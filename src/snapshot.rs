//! Snapshot tests: whole outputs compared with files under `tests/snapshots/`. After an
//! intended change, regenerate with `UPDATE_SNAPSHOTS=1 cargo test --lib` (or `--test NAME`) and review the diff.

/// Compares `actual` with `tests/snapshots/NAME`, or writes it there with `UPDATE_SNAPSHOTS` set.
pub fn check(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_SNAPSHOTS=1)", path.display()));
    assert!(
        expected == actual,
        "{} differs from the snapshot.\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}
