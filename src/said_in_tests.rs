//! What the library said (`log::warn!`, `log::info!`), kept for the test that asks: a
//! unit test runs the code under [`said_while`] and asserts on the lines, with no process
//! and no standard error. Each test thread keeps its own lines; the logger is installed
//! once for the whole test program (the binary's own logger never is).

use std::cell::RefCell;

use log::{Level, LevelFilter, Log, Metadata, Record};

thread_local! {
    /// The lines said on this thread while a test listens; `None` while none does.
    static HEARD: RefCell<Option<Vec<(Level, String)>>> = const { RefCell::new(None) };
}

struct Keeper;

static KEEPER: Keeper = Keeper;

impl Log for Keeper {
    fn enabled(&self, _: &Metadata) -> bool {
        true
    }

    fn log(&self, record: &Record) {
        HEARD.with(|heard| {
            if let Some(lines) = heard.borrow_mut().as_mut() {
                lines.push((record.level(), record.args().to_string()));
            }
        });
    }

    fn flush(&self) {}
}

/// Runs `f`, with what it said on this thread: each line's level and words.
pub fn said_while<R>(f: impl FnOnce() -> R) -> (R, Vec<(Level, String)>) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        log::set_logger(&KEEPER).expect("no other logger in the library's tests");
        log::set_max_level(LevelFilter::Info);
    });
    HEARD.with(|heard| *heard.borrow_mut() = Some(Vec::new()));
    let result = f();
    let lines = HEARD.with(|heard| heard.borrow_mut().take().unwrap_or_default());
    (result, lines)
}
