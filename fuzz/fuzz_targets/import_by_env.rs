#![no_main]
//! Every importer in one binary, chosen by FRAMELAB_FUZZ_FORMAT (a `--format` name, or
//! `detect`): one build to carry to a many-core machine and run one fuzzer per format.
use framelab::import::Format;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn format() -> Option<Format> {
    static FORMAT: OnceLock<Option<Format>> = OnceLock::new();
    *FORMAT.get_or_init(|| {
        let name = std::env::var("FRAMELAB_FUZZ_FORMAT").expect("set FRAMELAB_FUZZ_FORMAT");
        if name == "detect" {
            return None;
        }
        Some(
            Format::ALL
                .into_iter()
                .find(|f| f.name() == name)
                .expect("FRAMELAB_FUZZ_FORMAT names a format"),
        )
    })
}

fuzz_target!(|data: &[u8]| {
    match format() {
        Some(f) => framelab_fuzz::import(f, data),
        None => framelab_fuzz::detect_and_import(data),
    }
});
