//! The wait mechanisms `framelab timers` compares. Each waits until an absolute
//! CLOCK_MONOTONIC deadline the way a program using it would, and never returns before it:
//! a wait that comes back early (a signal, a rounded timeout) is issued again for the rest.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use framelab_probe::monotonic_ns;
use framelab_probe::pacer::{self, MonotonicClock, SpinWindow, WaitMethod};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// `nanosleep` for the time left: what `std::thread::sleep` and `usleep` do.
    Nanosleep,
    /// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the deadline itself.
    ClockNanosleep,
    /// A `timerfd` armed with the absolute deadline, then a blocking `read`.
    Timerfd,
    /// `epoll_wait` with its timeout in whole ms, rounded up so it never wakes early (as
    /// event loops do).
    EpollWait,
    /// A condition variable's timed wait (Rust's `Condvar::wait_timeout`, a futex wait).
    Condvar,
    /// Reading the clock in a loop.
    Spin,
    /// The SDK pacer's wait: absolute sleep to an adaptive window before the deadline, then spin.
    Hybrid,
}

/// In table order.
pub const STRATEGIES: [Strategy; 7] = [
    Strategy::Nanosleep,
    Strategy::ClockNanosleep,
    Strategy::Timerfd,
    Strategy::EpollWait,
    Strategy::Condvar,
    Strategy::Spin,
    Strategy::Hybrid,
];

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Nanosleep => "nanosleep",
            Strategy::ClockNanosleep => "clock_nanosleep abs",
            Strategy::Timerfd => "timerfd",
            Strategy::EpollWait => "epoll_wait",
            Strategy::Condvar => "condvar",
            Strategy::Spin => "spin",
            Strategy::Hybrid => "hybrid",
        }
    }

    /// Whether it sleeps in the kernel at all (the timer slack only matters if it does).
    pub fn sleeps(self) -> bool {
        self != Strategy::Spin
    }
}

/// A strategy with what it needs set up (file descriptors, a condvar), for one thread.
pub enum Waiter {
    Nanosleep,
    ClockNanosleep,
    Timerfd(Fd),
    EpollWait(Fd),
    Condvar(Mutex<()>, Condvar),
    Spin,
    Hybrid(SpinWindow),
}

/// A file descriptor closed on drop.
pub struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: this struct owns the descriptor.
        unsafe { libc::close(self.0) };
    }
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl Waiter {
    /// Sets up `strategy` for waits about `interval_ns` apart.
    pub fn new(strategy: Strategy, interval_ns: u64) -> Result<Waiter, String> {
        Ok(match strategy {
            Strategy::Nanosleep => Waiter::Nanosleep,
            Strategy::ClockNanosleep => Waiter::ClockNanosleep,
            Strategy::Timerfd => {
                // SAFETY: plain system call.
                let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
                if fd < 0 {
                    return Err(os_error("timerfd_create"));
                }
                Waiter::Timerfd(Fd(fd))
            }
            Strategy::EpollWait => {
                // An empty interest list: only the timeout can end the wait.
                // SAFETY: plain system call.
                let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if fd < 0 {
                    return Err(os_error("epoll_create1"));
                }
                Waiter::EpollWait(Fd(fd))
            }
            Strategy::Condvar => Waiter::Condvar(Mutex::new(()), Condvar::new()),
            Strategy::Spin => Waiter::Spin,
            Strategy::Hybrid => Waiter::Hybrid(SpinWindow::for_period(interval_ns)),
        })
    }

    /// Returns at or after `deadline_ns` (CLOCK_MONOTONIC).
    pub fn wait_until(&mut self, deadline_ns: u64) {
        loop {
            let now = monotonic_ns();
            if now >= deadline_ns {
                return;
            }
            self.wait_once(now, deadline_ns);
        }
    }

    /// One call of the mechanism, for the time left from `now` to `deadline_ns`.
    fn wait_once(&mut self, now: u64, deadline_ns: u64) {
        let left = deadline_ns - now;
        match self {
            Waiter::Nanosleep => {
                let ts = timespec(left);
                // SAFETY: valid timespec; no remainder wanted (the loop re-reads the clock).
                unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
            }
            Waiter::ClockNanosleep => {
                let ts = timespec(deadline_ns);
                // SAFETY: valid timespec; an absolute sleep needs no remainder.
                unsafe {
                    libc::clock_nanosleep(
                        libc::CLOCK_MONOTONIC,
                        libc::TIMER_ABSTIME,
                        &ts,
                        std::ptr::null_mut(),
                    )
                };
            }
            Waiter::Timerfd(fd) => {
                let spec = libc::itimerspec {
                    it_interval: timespec(0),
                    it_value: timespec(deadline_ns),
                };
                let mut expirations = 0u64;
                // SAFETY: fd is our timerfd; the buffer is 8 bytes, as timerfd reads require.
                unsafe {
                    if libc::timerfd_settime(
                        fd.0,
                        libc::TFD_TIMER_ABSTIME,
                        &spec,
                        std::ptr::null_mut(),
                    ) == 0
                    {
                        libc::read(fd.0, (&mut expirations as *mut u64).cast(), 8);
                    }
                }
            }
            Waiter::EpollWait(fd) => {
                let timeout_ms = left.div_ceil(1_000_000).min(i32::MAX as u64) as i32;
                let mut event = libc::epoll_event { events: 0, u64: 0 };
                // SAFETY: fd is our epoll instance; room for one event.
                unsafe { libc::epoll_wait(fd.0, &mut event, 1, timeout_ms) };
            }
            Waiter::Condvar(mutex, condvar) => {
                // Shared: a timed wait needs a guard of a lock others could take.
                let (mutex, condvar) = (&*mutex, &*condvar);
                // Nobody notifies: only the timeout ends the wait. A poisoned lock cannot
                // happen (no code panics while holding it); treat it as a finished wait.
                if let Ok(guard) = mutex.lock() {
                    let _ = condvar.wait_timeout(guard, Duration::from_nanos(left));
                }
            }
            Waiter::Spin => std::hint::spin_loop(),
            Waiter::Hybrid(window) => {
                pacer::wait_until(&mut MonotonicClock, deadline_ns, WaitMethod::Hybrid, window);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_waits_until_its_deadline_and_not_less() {
        // A correctness check, not a timing one: the only bound asserted is "not before".
        for strategy in STRATEGIES {
            let mut waiter = Waiter::new(strategy, 200_000).unwrap();
            for _ in 0..3 {
                let deadline = monotonic_ns() + 200_000;
                waiter.wait_until(deadline);
                assert!(monotonic_ns() >= deadline, "{}", strategy.name());
            }
        }
    }

    #[test]
    fn names_are_distinct_and_only_spin_does_not_sleep() {
        let names: std::collections::HashSet<&str> = STRATEGIES.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), STRATEGIES.len());
        assert_eq!(
            STRATEGIES
                .iter()
                .filter(|s| !s.sleeps())
                .collect::<Vec<_>>(),
            [&Strategy::Spin]
        );
    }
}
