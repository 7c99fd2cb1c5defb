//! Folds the write-ahead log into the main file on a thread of its own.
//!
//! A checkpoint copies up to a second of recorded data and fsyncs twice; done inline by
//! SQLite's auto-checkpoint it stalled the committing call for ~170 ms at 1M spans/s,
//! long enough for the collector's rings to overflow. SQLite lets a second connection
//! checkpoint while the first keeps writing, so the recording thread never waits.

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

/// At most one checkpoint per this interval: bounds the WAL to about this much recording
/// without fsyncing on every commit.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

pub struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens a second connection to `path` and starts the thread.
    pub fn start(path: &Path) -> anyhow::Result<Checkpointer> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.execute_batch("PRAGMA synchronous = NORMAL")?;
        // One pending nudge is enough: nudges arriving during a checkpoint coalesce.
        let (nudge, nudges) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("framelab-checkpoint".into())
            .spawn(move || run(conn, nudges))?;
        Ok(Checkpointer {
            nudge: Some(nudge),
            thread: Some(thread),
        })
    }

    /// Asks for a checkpoint soon (after a commit). Never blocks.
    pub fn nudge(&self) {
        if let Some(nudge) = &self.nudge {
            let _ = nudge.try_send(());
        }
    }

    /// Finishes the checkpoint under way, if any, and closes the connection.
    pub fn stop(&mut self) {
        self.nudge = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(conn: Connection, nudges: Receiver<()>) {
    let mut last = Instant::now();
    while nudges.recv().is_ok() {
        // Let the interval pass, swallowing further nudges; stopping ends the wait.
        let deadline = last + MIN_INTERVAL;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match nudges.recv_timeout(left) {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        // PASSIVE never waits for the writer or readers. A failure loses nothing: the
        // frames stay in the WAL, and `RunWriter::finish` checkpoints and reports.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        last = Instant::now();
    }
}
