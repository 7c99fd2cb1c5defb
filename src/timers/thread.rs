//! The measuring thread's settings: timer slack and scheduling class. Each cell runs on a
//! fresh thread, so a setting never leaks into the next cell or into framelab itself.

use serde::{Deserialize, Serialize};

/// The timer slack a cell runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slack {
    /// The thread's default (50 µs unless the process was started with another).
    Default,
    /// `PR_SET_TIMERSLACK` 1 ns: timers fire when asked instead of being coalesced.
    OneNs,
}

/// The scheduling class a cell runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sched {
    /// SCHED_OTHER, the default time-sharing class.
    Other,
    /// SCHED_FIFO at [`FIFO_PRIORITY`]: preempts every ordinary thread, and the kernel ignores
    /// timer slack for it.
    Fifo,
}

/// The lowest real-time priority: enough to preempt ordinary threads, below the kernel's
/// threaded interrupt handlers (50).
pub const FIFO_PRIORITY: i32 = 1;

impl Slack {
    pub fn name(self) -> &'static str {
        match self {
            Slack::Default => "default",
            Slack::OneNs => "1 ns",
        }
    }
}

impl Sched {
    pub fn name(self) -> &'static str {
        match self {
            Sched::Other => "other",
            Sched::Fifo => "fifo",
        }
    }
}

/// Applies `slack` and `sched` to the calling thread.
pub fn configure(slack: Slack, sched: Sched) -> Result<(), String> {
    // 0 restores the thread's default slack.
    let value: libc::c_ulong = match slack {
        Slack::Default => 0,
        Slack::OneNs => 1,
    };
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, value, 0, 0, 0) } != 0 {
        return Err(format!(
            "PR_SET_TIMERSLACK: {}",
            std::io::Error::last_os_error()
        ));
    }
    if sched == Sched::Fifo {
        set_fifo().map_err(|e| format!("SCHED_FIFO: {e}"))?;
    }
    Ok(())
}

fn set_fifo() -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: FIFO_PRIORITY,
    };
    // SAFETY: the calling thread's own handle and a valid parameter.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::from_raw_os_error(rc)),
    }
}

/// Whether this process may use SCHED_FIFO, tried on a scratch thread; the error says why not.
pub fn fifo_permitted() -> Result<(), String> {
    match std::thread::spawn(set_fifo).join() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the check's thread panicked".into()),
    }
}

/// The calling thread's timer slack, ns.
pub fn current_slack_ns() -> u64 {
    // SAFETY: prctl with integer arguments; returns the slack.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    slack.max(0) as u64
}

/// CPU time of the calling thread, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; this clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_is_set_on_the_calling_thread_only() {
        let outside = current_slack_ns();
        let inside = std::thread::spawn(|| {
            configure(Slack::OneNs, Sched::Other).unwrap();
            let one = current_slack_ns();
            configure(Slack::Default, Sched::Other).unwrap();
            (one, current_slack_ns())
        })
        .join()
        .unwrap();
        assert_eq!(inside.0, 1);
        assert_eq!(inside.1, outside, "0 restores the default");
        assert_eq!(current_slack_ns(), outside);
    }

    #[test]
    fn the_fifo_check_answers_either_way_without_changing_this_thread() {
        // Permitted or not depends on the machine; either answer is fine, a change is not.
        // SAFETY: reads this thread's policy.
        let before = unsafe { libc::sched_getscheduler(0) };
        let _ = fifo_permitted();
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, before);
    }
}
