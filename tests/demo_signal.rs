//! SIGINT ends the demo cleanly: `run_pipeline` returns its summary instead of the process
//! dying. In its own test binary because the signal is process-wide.

use std::time::Duration;

use framelab::demo::{run_pipeline, DemoOptions};

fn sigint_handler_is_ours() -> bool {
    // SAFETY: reads the current action without changing it.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGINT, std::ptr::null(), &mut current);
        current.sa_sigaction != libc::SIG_DFL
    }
}

#[test]
fn sigint_stops_the_pipeline_and_restores_the_handler() {
    // A test started in the background by a shell inherits SIGINT ignored: start from the
    // default action, which is what the pipeline must restore.
    // SAFETY: this test binary runs this one test; nothing else handles SIGINT here.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    assert!(!sigint_handler_is_ours());
    for depth in [1, 2] {
        let opts = DemoOptions {
            fps: 200.0,
            depth,
            width: 64,
            height: 48,
            duration: None,
            frames: None,
            pacer: Default::default(),
        };
        let pipeline = std::thread::spawn(move || run_pipeline(&opts));
        // Never signal before the handler is in place: the default action would kill the test.
        while !sigint_handler_is_ours() {
            assert!(!pipeline.is_finished(), "the pipeline ended on its own");
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: sends a signal to this process, whose handler only sets a flag.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        // Without a duration or a frame limit, returning at all shows the signal stopped it.
        // (The signal may land before the first frame, so the count can be zero.)
        let summary = pipeline.join().unwrap().unwrap();
        assert_eq!(summary.keyframes > 0, summary.frames > 0, "depth {depth}");
        assert!(
            !sigint_handler_is_ours(),
            "the previous handler is restored"
        );
    }
}
