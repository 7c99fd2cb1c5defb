//! What a read takes in the run's order, handed over a batch at a time to what takes it:
//! here, or, in a long read, on a thread of its own beside the read (issue 29: the report's
//! analysing thread and the scheduler's split each did two threads' worth of orderly work
//! on a long run). The batches come to the taker in the order they were handed, whichever
//! thread takes them, so what it computes is the same.

use std::sync::mpsc;

/// Spans of a read below which its batches are taken on the reading thread: a thread of
/// their own would cost more than it saves.
#[cfg(not(test))]
pub const BESIDE_FROM_SPANS: usize = 1_000_000;
/// Small enough that the tests' larger runs take them on a thread of their own too.
#[cfg(test)]
pub const BESIDE_FROM_SPANS: usize = 10_000;

/// Whether a read of `spans` spans hands its batches to a thread of their own.
pub fn beside_for(spans: usize) -> bool {
    spans >= BESIDE_FROM_SPANS && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// Where the batches go.
pub enum Hand<'t, B> {
    Here(&'t mut (dyn FnMut(&mut B) + Send)),
    Beside {
        full: mpsc::SyncSender<B>,
        emptied: mpsc::Receiver<B>,
    },
}

impl<B: Default> Hand<'_, B> {
    /// Hands over `batch`, leaving it empty.
    pub fn hand(&mut self, batch: &mut B) {
        match self {
            Hand::Here(take) => take(batch),
            Hand::Beside { full, emptied } => {
                let next = emptied.try_recv().unwrap_or_default();
                // A taker gone (it panicked) is said when the scope joins it.
                let _ = full.send(std::mem::replace(batch, next));
            }
        }
    }
}

/// Runs `read` with a [`Hand`] whose batches `take` takes, in order, leaving each empty:
/// on a thread of its own when `beside` (and one can be started), else as they are handed.
/// Every batch handed is taken when this returns; a taker that panicked panics here.
pub fn handing<B: Default + Send, R>(
    beside: bool,
    take: &mut (dyn FnMut(&mut B) + Send),
    read: impl FnOnce(&mut Hand<'_, B>) -> R,
) -> R {
    if !beside {
        return read(&mut Hand::Here(take));
    }
    let started = std::thread::scope(|scope| {
        // Batches go over and come back to be filled again: a few at a time.
        let (full, filled) = mpsc::sync_channel::<B>(2);
        let (empty, emptied) = mpsc::channel::<B>();
        let take = &mut *take;
        let taker = std::thread::Builder::new().spawn_scoped(scope, move || {
            for mut batch in filled {
                take(&mut batch);
                let _ = empty.send(batch);
            }
        });
        match taker {
            // The taker ends once the hand is dropped, at the end of this closure.
            Ok(_) => Ok(read(&mut Hand::Beside { full, emptied })),
            Err(_) => Err(read),
        }
    });
    match started {
        Ok(out) => out,
        // No thread to be had: taken here.
        Err(read) => read(&mut Hand::Here(take)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches handed to a thread beside are taken in the order they were handed, all of
    /// them, as they are here.
    #[test]
    fn batches_are_taken_in_order_here_and_beside() {
        for beside in [false, true] {
            let mut seen = Vec::new();
            let mut take = |batch: &mut Vec<u32>| {
                seen.extend_from_slice(batch);
                batch.clear();
            };
            let handed = handing(beside, &mut take, |hand| {
                let mut batch = Vec::new();
                for k in 0..1000u32 {
                    batch.push(k);
                    if k % 7 == 0 {
                        hand.hand(&mut batch);
                    }
                }
                hand.hand(&mut batch);
                batch.len()
            });
            assert_eq!(handed, 0, "the batch handed is left empty");
            assert_eq!(seen, (0..1000).collect::<Vec<_>>(), "beside: {beside}");
        }
    }
}
