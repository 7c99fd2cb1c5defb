//! Threads' final counters, from their exit records, on their way from the accounting
//! (which reads the run's exit records) to the threads source (which keeps each thread's
//! series): a thread's last reading is up to a `--sample-every` before its exit, and its
//! exit record holds what it had counted when it ended.

use std::sync::{Arc, Mutex};

use super::query::ThreadCounters;

/// Thread ends waiting past this are dropped (the threads source is off or stopped, and
/// nothing takes them): the oldest first.
const MAX_WAITING: usize = 65_536;

/// One thread's end, as its exit record told it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadEnd {
    /// Its process (thread group) and itself.
    pub pid: u32,
    pub tid: u32,
    /// Its name as it ended.
    pub comm: String,
    /// Its own counters at its exit.
    pub counters: ThreadCounters,
    /// ns after launch by which it had ended: when its record was read (the record says
    /// how long the thread lived, not when it started, in anything finer than clock ticks).
    pub by_ns: i64,
    /// How long it lived, start to exit (ns, in µs steps; `None` from a record without it).
    pub lifetime_ns: Option<i64>,
}

/// The mailbox between the two threads: cloned, both ends hold the same one.
#[derive(Clone, Debug, Default)]
pub struct ThreadExits(Arc<Mutex<Vec<ThreadEnd>>>);

impl ThreadExits {
    pub fn post(&self, ends: impl IntoIterator<Item = ThreadEnd>) {
        let mut waiting = self.0.lock().unwrap_or_else(|e| e.into_inner());
        waiting.extend(ends);
        if waiting.len() > MAX_WAITING {
            let excess = waiting.len() - MAX_WAITING;
            waiting.drain(..excess);
        }
    }

    /// Every end posted since the last call, oldest first.
    pub fn take(&self) -> Vec<ThreadEnd> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(tid: u32) -> ThreadEnd {
        ThreadEnd {
            pid: 1,
            tid,
            ..ThreadEnd::default()
        }
    }

    #[test]
    fn ends_nobody_takes_keep_only_the_newest() {
        let exits = ThreadExits::default();
        let reader = exits.clone();
        exits.post((0..MAX_WAITING as u32 + 10).map(end));
        let taken = reader.take();
        assert_eq!(taken.len(), MAX_WAITING);
        assert_eq!(taken[0].tid, 10);
        assert!(reader.take().is_empty());
    }
}
