//! Work spread over a few threads, the caller's among them. Where no thread can be started
//! (a container's limit), the caller does all of it: the work is done either way.

use std::sync::{Mutex, PoisonError};

/// Runs `work` on each of `items`, on up to `most_threads` threads (the cores permitting),
/// the caller's included; returns when all are done. A panic in `work` is the caller's.
pub fn for_each<T: Send>(items: Vec<T>, most_threads: usize, work: impl Fn(T) + Sync) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = most_threads.min(cores).min(items.len());
    if threads < 2 {
        items.into_iter().for_each(work);
        return;
    }
    let queue = Mutex::new(items.into_iter());
    let next = || queue.lock().unwrap_or_else(PoisonError::into_inner).next();
    let run = || {
        while let Some(item) = next() {
            work(item);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            if std::thread::Builder::new()
                .spawn_scoped(scope, run)
                .is_err()
            {
                break;
            }
        }
        run();
    });
}

/// `here()` on this thread and `beside()` on another at once, where a second core and a
/// thread are to be had (else one after the other); both results.
pub fn join<A, B: Send>(here: impl FnOnce() -> A, beside: impl FnOnce() -> B + Send) -> (A, B) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        return (here(), beside());
    }
    // The closure is kept until a thread has taken it: where none can be started, it runs here.
    let pending = Mutex::new(Some(beside));
    let take = || {
        pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    };
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new().spawn_scoped(scope, || take().map(|f| f()));
        let a = here();
        let b = match started {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            Err(_) => None,
        };
        (
            a,
            b.or_else(|| take().map(|f| f()))
                .expect("run on one thread or the other"),
        )
    })
}

/// `work` of each of `items` as [`for_each`] runs it, the results in the items' order.
pub fn map<T: Send, R: Send>(
    items: Vec<T>,
    most_threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let done = Mutex::new(Vec::with_capacity(items.len()));
    let numbered: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    for_each(numbered, most_threads, |(k, item)| {
        let result = work(item);
        done.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((k, result));
    });
    let mut done = done.into_inner().unwrap_or_else(PoisonError::into_inner);
    done.sort_unstable_by_key(|&(k, _)| k);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Every item once, whatever the number of threads.
    #[test]
    fn each_item_is_worked_on_once() {
        for threads in [0, 1, 2, 8] {
            let sum = AtomicU64::new(0);
            let count = AtomicU64::new(0);
            super::for_each((1..=1000u64).collect(), threads, |v| {
                sum.fetch_add(v, Ordering::Relaxed);
                count.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(sum.into_inner(), 500_500);
            assert_eq!(count.into_inner(), 1000);
        }
    }

    #[test]
    fn join_gives_both_results() {
        let (a, b) = super::join(|| 6 * 7, || "beside".to_string());
        assert_eq!((a, b.as_str()), (42, "beside"));
    }

    #[test]
    fn map_keeps_the_order_of_the_items() {
        for threads in [1, 3] {
            let squares = super::map((0..500u64).collect(), threads, |v| v * v);
            assert_eq!(squares, (0..500u64).map(|v| v * v).collect::<Vec<_>>());
        }
    }
}
