//! When the scheduler tracer's thread wakes: a ring the kernel says has passed its
//! watermark (`wakeup_watermark`, seen through `poll`), the stop bell rung by `finish`, or
//! the longest sleep allowed, whichever comes first. Each wakeup of framelab costs about
//! 100 µs on a loaded 2-vCPU guest (BENCHMARKS.md), so the tracer wakes only when there is
//! something worth draining.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An `eventfd` the tracer's thread polls beside its rings: written once to stop it.
pub struct StopBell(OwnedFd);

impl StopBell {
    pub fn new() -> io::Result<StopBell> {
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(StopBell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes from a local buffer to our eventfd; a full counter (never
        // reached: one write per tracer) would only mean it is rung already.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

/// Sleeps until one of `rings` is readable (past its watermark), `bell` is rung, or
/// `longest` has passed. Whether the bell was rung. A ring the kernel says is hung up or in
/// error is no longer waited on (it would end every wait at once); it is still drained.
pub fn wait(rings: &mut Vec<RawFd>, bell: &StopBell, longest: Duration) -> bool {
    let mut fds: Vec<libc::pollfd> = std::iter::once(bell.0.as_raw_fd())
        .chain(rings.iter().copied())
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout_ms = longest.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `fds` is a valid array of pollfd for its length.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    // An error (EINTR) is a short sleep: the caller drains and waits again.
    if ready <= 0 {
        return false;
    }
    let broken = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    let mut polled = fds[1..].iter();
    rings.retain(|_| polled.next().is_some_and(|p| p.revents & broken == 0));
    fds[0].revents != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rung_bell_ends_the_wait_and_an_unrung_one_lets_it_time_out() {
        let bell = StopBell::new().unwrap();
        assert!(!wait(&mut Vec::new(), &bell, Duration::from_millis(1)));
        bell.ring();
        // Far longer than any test run: it returns only because the bell was rung.
        assert!(wait(&mut Vec::new(), &bell, Duration::from_secs(3600)));
    }

    #[test]
    fn a_hung_up_descriptor_is_no_longer_waited_on() {
        let bell = StopBell::new().unwrap();
        let mut ends = [0; 2];
        // SAFETY: a two-int array for pipe to fill.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        // SAFETY: both ends are ours.
        let (read, write) =
            unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
        drop(write);
        let mut rings = vec![read.as_raw_fd()];
        assert!(!wait(&mut rings, &bell, Duration::from_secs(3600)));
        assert!(rings.is_empty());
    }
}
