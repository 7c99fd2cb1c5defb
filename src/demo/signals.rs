//! SIGINT and SIGTERM end the demo cleanly: the handler only sets a flag that the pacer
//! polls, so the current frame finishes and `run_pipeline` returns its summary. The previous
//! handlers come back when the last running pipeline ends (tests run several at once).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;

static STOP: AtomicBool = AtomicBool::new(false);

/// How many pipelines run now, and the handlers they replaced.
static INSTALLED: Mutex<(usize, Option<[libc::sigaction; 2]>)> = Mutex::new((0, None));

const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

extern "C" fn on_stop_signal(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Relaxed);
}

/// The flag the signal handler sets.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// Keeps the handlers installed while alive.
pub struct StopOnSignal(());

impl StopOnSignal {
    pub fn install() -> StopOnSignal {
        let mut installed = INSTALLED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if installed.0 == 0 {
            STOP.store(false, Relaxed);
            // SAFETY: sigaction with a zeroed struct, a valid handler and valid pointers; the
            // handler is async-signal-safe.
            unsafe {
                let mut previous: [libc::sigaction; 2] = std::mem::zeroed();
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction =
                    on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                for (signal, old) in SIGNALS.iter().zip(previous.iter_mut()) {
                    libc::sigaction(*signal, &action, old);
                }
                installed.1 = Some(previous);
            }
        }
        installed.0 += 1;
        StopOnSignal(())
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        let mut installed = INSTALLED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        installed.0 = installed.0.saturating_sub(1);
        if installed.0 == 0 {
            if let Some(previous) = installed.1.take() {
                // SAFETY: restores the actions sigaction gave us.
                unsafe {
                    for (signal, old) in SIGNALS.iter().zip(previous.iter()) {
                        libc::sigaction(*signal, old, std::ptr::null_mut());
                    }
                }
            }
        }
    }
}
