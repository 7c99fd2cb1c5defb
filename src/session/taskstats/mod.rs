//! Exit records from the kernel's taskstats interface (generic netlink, "TASKSTATS"): when
//! any task exits, the kernel sends its CPU time in nanoseconds (`cpu_run_virtual_total`,
//! the scheduler's own sum) to the listeners registered for the CPU it exited on, whoever
//! reaps it and however short it lived. When a thread group ends, the same message carries
//! the whole process's total. The sum is read without folding in the slice running since
//! the last scheduler tick, and before the exit frees the process's memory: it is short of
//! the CPU clock's final value by up to 1/HZ (measured 0.3-4.1 ms at HZ=250), so framelab
//! counts it as accurate to a clock tick (10 ms), like /proc's figures.
//!
//! Registering needs CAP_NET_ADMIN (root usually has it, containers often do not), and the
//! pids in exit records are those of the initial pid namespace. `Taskstats::open` checks both
//! by watching a child of its own exit; when anything is amiss framelab goes without, and
//! the accounting falls back on what /proc and the reapers tell (docs/metrics.md).

mod netlink;
pub mod query;
mod thread_exits;

pub(crate) use netlink::receive_waiting;
use netlink::{
    append_request, attributes, error_code, messages, nul_terminated, u32_at, u64_at, GenlSocket,
    NLMSG_ERROR, NLM_F_ACK, NLM_F_REQUEST,
};
use query::ThreadCounters;
pub use thread_exits::{ThreadEnd, ThreadExits};

/// `FRAMELAB_EXIT_RECORDS=off` does without exit records (to compare, or where listening
/// to every exit of a busy machine is not wanted).
pub const OFF_ENV: &str = "FRAMELAB_EXIT_RECORDS";

// linux/taskstats.h: stable ABI.
const TASKSTATS_CMD_GET: u8 = 1;
const TASKSTATS_CMD_ATTR_REGISTER_CPUMASK: u16 = 3;
const TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK: u16 = 4;
const TASKSTATS_TYPE_PID: u16 = 1;
const TASKSTATS_TYPE_TGID: u16 = 2;
const TASKSTATS_TYPE_STATS: u16 = 3;
const TASKSTATS_TYPE_AGGR_PID: u16 = 4;
const TASKSTATS_TYPE_AGGR_TGID: u16 = 5;
/// Offsets in `struct taskstats` (fields are only ever appended).
const OFF_CPU_RUN_VIRTUAL_TOTAL: usize = 72;
const OFF_COMM: usize = 80;
const COMM_LEN: usize = 32;
const OFF_PID: usize = 128;
const OFF_PPID: usize = 132;
/// `ac_etime`: from the task's start to its exit, µs.
const OFF_ETIME_US: usize = 144;
const OFF_UTIME_US: usize = 152;
const OFF_STIME_US: usize = 160;
/// `hiwater_rss`: the peak resident set of the task's memory (KiB), since its last exec.
const OFF_HIWATER_RSS_KIB: usize = 200;
const OFF_TGID: usize = 368;

/// A process that ended, as the kernel accounted it at its exit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The process (thread group) id.
    pub pid: u32,
    pub ppid: u32,
    /// The name of the last of its threads to exit.
    pub comm: String,
    /// User + sys of all its threads, ns.
    pub cpu_ns: i64,
    /// The kernel's own user / sys split (µs, from tick sampling): for proportions only.
    pub user_us: i64,
    pub sys_us: i64,
    /// The record is of the whole process: of its thread group, or of its only thread.
    pub whole: bool,
    /// Its peak resident set since its last exec, bytes, as the kernel kept it up to the
    /// exit (the last thread's record: its memory is the process's); 0 where the kernel
    /// does not say (without CONFIG_TASK_XACCT).
    pub hiwater_rss_bytes: u64,
    /// How long it lived, start to exit (ns, in µs steps): where the record's thread is the
    /// process's main one (its start is the process's).
    pub lifetime_ns: Option<i64>,
    /// How long the record's thread lived, whichever thread it is (ns, in µs steps).
    pub thread_lifetime_ns: Option<i64>,
    /// The thread whose exit this is, and its own counters at its exit (`None` from a
    /// kernel too old to hold them all): a thread's final figures, whether or not its
    /// process ended with it.
    pub thread: Option<(u32, ThreadCounters)>,
}

pub struct Taskstats {
    socket: GenlSocket,
    family: u16,
    mask: String,
    /// Notifications the kernel could not queue (the socket's buffer was full).
    pub lost: u64,
}

impl Taskstats {
    /// Registers for exit records of every CPU and checks they arrive, with pids as framelab
    /// sees them. `Err` says why not, in a few words.
    pub fn open() -> Result<Taskstats, String> {
        // Room for bursts of exits between two drains.
        let (socket, family) = taskstats_socket(OFF_ENV, 8 << 20)?;
        let mut listener = Taskstats {
            socket,
            family,
            mask: possible_cpus(),
            lost: 0,
        };
        listener.request(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK)?;
        // Registered: from now on exit records come whether read or not.
        listener
            .wait_for_ack(2)
            .map_err(|e| format!("cannot register for exit records: {e}"))?;
        listener.socket.set_nonblocking();
        listener.check()?;
        Ok(listener)
    }

    /// Forks a child that exits at once: its record must come, with its pid as framelab saw
    /// it (not so in a pid namespace of a container).
    fn check(&mut self) -> Result<(), String> {
        let child = fork_and_reap_a_child("exit records")?;
        // The kernel sends the record before the parent can reap; a few tries for safety.
        let mut seen = Vec::new();
        for _ in 0..50 {
            self.drain(&mut seen);
            if seen.iter().any(|e| e.pid == child) {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Err("exit records do not name processes as this pid namespace does".into())
    }

    /// Registers or deregisters (`attr`) for the exit records of every CPU, asking for an ack.
    fn request(&self, attr: u16) -> Result<(), String> {
        let mut message = Vec::new();
        append_request(
            &mut message,
            self.family,
            NLM_F_REQUEST | NLM_F_ACK,
            1,
            TASKSTATS_CMD_GET,
            attr,
            &nul_terminated(&self.mask),
        );
        self.socket.send(&message)
    }

    /// Reads until the ack of the last request (exit records read meanwhile are dropped:
    /// only the set-up waits here).
    fn wait_for_ack(&mut self, tries: usize) -> Result<(), String> {
        for _ in 0..tries.max(1) * 64 {
            let n = self.socket.recv()?;
            for (kind, _, payload) in messages(&self.socket.buffer[..n]) {
                if kind == NLMSG_ERROR {
                    return match error_code(payload) {
                        Some(0) => Ok(()),
                        Some(code) => Err(std::io::Error::from_raw_os_error(-code).to_string()),
                        None => Err("a malformed netlink error".into()),
                    };
                }
            }
        }
        Err("no reply".into())
    }

    /// Reads every record waiting, without blocking, into `out`.
    pub fn drain(&mut self, out: &mut Vec<Exit>) {
        let family = self.family;
        let GenlSocket { socket, buffer } = &mut self.socket;
        receive_waiting(socket, buffer, &mut self.lost, |datagram| {
            for (kind, _, payload) in messages(datagram) {
                if kind == family {
                    out.extend(parse_exit(payload));
                }
            }
        });
    }
}

/// Where a run's exit records come from: the kernel (`Taskstats`), or a test's script.
pub trait ExitRecords: Send {
    /// Appends every record received since the last call, without blocking.
    fn drain(&mut self, out: &mut Vec<Exit>);
}

impl ExitRecords for Taskstats {
    fn drain(&mut self, out: &mut Vec<Exit>) {
        Taskstats::drain(self, out);
    }
}

/// The run's exit records, or why there are none (in a few words).
pub type ExitSource = Result<Box<dyn ExitRecords>, String>;

impl Drop for Taskstats {
    fn drop(&mut self) {
        let _ = self.request(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK);
    }
}

/// A socket to the kernel's taskstats family and the family's id, unless `off_env` is "off".
fn taskstats_socket(off_env: &str, receive_buffer: i32) -> Result<(GenlSocket, u16), String> {
    if std::env::var(off_env).is_ok_and(|v| v == "off") {
        return Err(format!("switched off with {off_env}=off"));
    }
    let mut socket = GenlSocket::open(receive_buffer)?;
    let family = socket.family("TASKSTATS")?;
    Ok((socket, family))
}

/// Every CPU that can ever be online (`/sys/devices/system/cpu/possible`, e.g. `0-15`).
fn possible_cpus() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            // SAFETY: sysconf has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
            format!("0-{}", n - 1)
        })
}

/// The exit of a generic netlink taskstats message (after its 4-byte genl header): the
/// thread group's record when there is one, else the thread's, whole when it was its
/// process's only thread.
fn parse_exit(payload: &[u8]) -> Option<Exit> {
    let mut task: Option<&[u8]> = None;
    let mut group: Option<(u32, &[u8])> = None;
    for (kind, value) in attributes(payload.get(4..)?) {
        let (mut id, mut stats) = (None, None);
        for (inner, v) in attributes(value) {
            match inner {
                TASKSTATS_TYPE_PID | TASKSTATS_TYPE_TGID => id = u32_at(v, 0),
                TASKSTATS_TYPE_STATS => stats = Some(v),
                _ => {}
            }
        }
        match (kind, id, stats) {
            (TASKSTATS_TYPE_AGGR_PID, Some(_), Some(s)) => task = Some(s),
            (TASKSTATS_TYPE_AGGR_TGID, Some(tgid), Some(s)) => group = Some((tgid, s)),
            _ => {}
        }
    }
    let task = task?;
    let comm_bytes = task.get(OFF_COMM..OFF_COMM + COMM_LEN)?;
    let end = comm_bytes.iter().position(|&b| b == 0).unwrap_or(COMM_LEN);
    let comm = String::from_utf8_lossy(&comm_bytes[..end]).into_owned();
    let ppid = u32_at(task, OFF_PPID)?;
    let tid = u32_at(task, OFF_PID)?;
    // Memory is the process's, whichever thread's record holds it; the group record has none.
    let hiwater_rss_bytes = u64_at(task, OFF_HIWATER_RSS_KIB)
        .unwrap_or(0)
        .saturating_mul(1024);
    let lifetime_ns = u64_at(task, OFF_ETIME_US)
        .and_then(|us| i64::try_from(us).ok())
        .map(|us| us.saturating_mul(1000));
    let thread = query::counters_in(task).map(|counters| (tid, counters));
    let record = |pid: u32, stats: &[u8], whole: bool| -> Option<Exit> {
        Some(Exit {
            pid,
            ppid,
            comm: comm.clone(),
            cpu_ns: i64::try_from(u64_at(stats, OFF_CPU_RUN_VIRTUAL_TOTAL)?).ok()?,
            user_us: i64::try_from(u64_at(stats, OFF_UTIME_US)?).ok()?,
            sys_us: i64::try_from(u64_at(stats, OFF_STIME_US)?).ok()?,
            whole,
            hiwater_rss_bytes,
            lifetime_ns: lifetime_ns.filter(|_| tid == pid),
            thread_lifetime_ns: lifetime_ns,
            thread,
        })
    };
    match group {
        Some((tgid, stats)) => record(tgid, stats, true),
        None => {
            // A thread's record; the whole process's when it is its main (and, with no
            // group record, only) thread. Kernels before ac_tgid: taken as a process.
            let tgid = u32_at(task, OFF_TGID).filter(|&t| t != 0).unwrap_or(tid);
            record(tgid, task, tgid == tid)
        }
    }
}

/// Forks a child that exits at once and reaps it: a kernel source of process records
/// (`what`) is checked by waiting for this child's record. Returns its pid.
pub(crate) fn fork_and_reap_a_child(what: &str) -> Result<u32, String> {
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("cannot fork to check {what}"));
    }
    if child == 0 {
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    Ok(child as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A netlink message as the kernel sends an exit: AGGR_PID (and AGGR_TGID).
    fn message(family: u16, tid: u32, tgid: u32, cpu_ns: u64, group_cpu: Option<u64>) -> Vec<u8> {
        let stats = |pid: u32, tgid: u32, ppid: u32, cpu: u64| {
            let mut s = vec![0u8; 416];
            s[0..2].copy_from_slice(&16u16.to_ne_bytes());
            s[OFF_CPU_RUN_VIRTUAL_TOTAL..OFF_CPU_RUN_VIRTUAL_TOTAL + 8]
                .copy_from_slice(&cpu.to_ne_bytes());
            s[OFF_COMM..OFF_COMM + 6].copy_from_slice(b"burner");
            s[OFF_PID..OFF_PID + 4].copy_from_slice(&pid.to_ne_bytes());
            s[OFF_PPID..OFF_PPID + 4].copy_from_slice(&ppid.to_ne_bytes());
            s[OFF_UTIME_US..OFF_UTIME_US + 8].copy_from_slice(&(cpu / 1000).to_ne_bytes());
            s[OFF_TGID..OFF_TGID + 4].copy_from_slice(&tgid.to_ne_bytes());
            // The task's memory: 3 MiB plus a KiB per thread id.
            s[OFF_HIWATER_RSS_KIB..OFF_HIWATER_RSS_KIB + 8]
                .copy_from_slice(&(3072 + pid as u64).to_ne_bytes());
            s[OFF_ETIME_US..OFF_ETIME_US + 8].copy_from_slice(&(1_000 * pid as u64).to_ne_bytes());
            s
        };
        let attr = |kind: u16, value: &[u8]| {
            let mut a = Vec::new();
            a.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
            a.extend_from_slice(&kind.to_ne_bytes());
            a.extend_from_slice(value);
            while a.len() % 4 != 0 {
                a.push(0);
            }
            a
        };
        let nested = |outer: u16, id_kind: u16, id: u32, s: &[u8]| {
            let mut inner = attr(id_kind, &id.to_ne_bytes());
            inner.extend(attr(TASKSTATS_TYPE_STATS, s));
            attr(outer, &inner)
        };
        let mut payload = vec![2u8, 1, 0, 0];
        payload.extend(nested(
            TASKSTATS_TYPE_AGGR_PID,
            TASKSTATS_TYPE_PID,
            tid,
            &stats(tid, tgid, 77, cpu_ns),
        ));
        if let Some(group) = group_cpu {
            payload.extend(nested(
                TASKSTATS_TYPE_AGGR_TGID,
                TASKSTATS_TYPE_TGID,
                tgid,
                &stats(0, 0, 0, group),
            ));
        }
        let mut m = Vec::new();
        m.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&family.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend(payload);
        m
    }

    fn parse(datagram: &[u8]) -> Vec<Exit> {
        messages(datagram)
            .filter(|&(kind, _, _)| kind == 31)
            .filter_map(|(_, _, p)| parse_exit(p))
            .collect()
    }

    #[test]
    fn reads_a_single_threaded_exit_and_a_thread_groups() {
        let mut datagram = message(31, 500, 500, 400_087_612, None);
        datagram.extend(message(31, 601, 600, 1_000, Some(9_000_000)));
        datagram.extend(message(31, 602, 600, 1_000, None));
        let exits = parse(&datagram);
        assert_eq!(exits.len(), 3);
        assert_eq!(
            (exits[0].pid, exits[0].ppid, exits[0].cpu_ns, exits[0].whole),
            (500, 77, 400_087_612, true)
        );
        assert_eq!(exits[0].comm, "burner");
        // The last thread of group 600: the group's total.
        assert_eq!(
            (exits[1].pid, exits[1].cpu_ns, exits[1].whole),
            (600, 9_000_000, true)
        );
        // A thread that is not its group's last: not the process's total.
        assert_eq!((exits[2].pid, exits[2].whole), (600, false));
        // The peak RSS comes from the thread's record (the group's has none), in bytes.
        assert_eq!(exits[0].hiwater_rss_bytes, (3072 + 500) * 1024);
        assert_eq!(exits[1].hiwater_rss_bytes, (3072 + 601) * 1024);
        // The lifetime is the thread's: the process's only from its main thread.
        assert_eq!(exits[0].lifetime_ns, Some(500_000_000));
        assert_eq!(exits[1].lifetime_ns, None);
        // Each record carries its thread's own counters: the last thread of a group's too,
        // beside the group's total.
        let thread = |e: &Exit| e.thread.map(|(tid, c)| (tid, c.cpu_ns));
        assert_eq!(thread(&exits[0]), Some((500, 400_087_612)));
        assert_eq!(thread(&exits[1]), Some((601, 1_000)));
        assert_eq!(thread(&exits[2]), Some((602, 1_000)));
    }

    #[test]
    fn garbage_never_panics() {
        let good = message(31, 500, 500, 1, Some(2));
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
            let mut bad = good.clone();
            for _ in 0..8 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let i = (state % bad.len() as u64) as usize;
                bad[i] = (state >> 32) as u8;
            }
            let _ = parse(&bad);
        }
    }

    /// Where this machine lets framelab register (root, CAP_NET_ADMIN), a child's exit
    /// comes with its exact CPU time; elsewhere opening says why not, in one line.
    #[test]
    fn a_childs_exit_record_holds_its_cpu_time() {
        let mut listener = match Taskstats::open() {
            Ok(listener) => listener,
            Err(why) => {
                assert!(!why.contains('\n'), "{why}");
                eprintln!("taskstats unavailable here: {why}");
                return;
            }
        };
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        // Read as a zombie, before reaping: its final CPU clock.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        let clock = crate::session::procfs::process_cpu_clock_ns(pid).unwrap();
        child.wait().unwrap();
        let mut exits = Vec::new();
        listener.drain(&mut exits);
        let exit = exits
            .iter()
            .find(|e| e.pid == pid)
            .expect("the child's exit record");
        assert!(exit.whole);
        // The same scheduler sum as its CPU clock, but read without folding in the slice
        // running since the last scheduler tick (at most 1/HZ, 10 ms at the coarsest), and
        // before the exit's own last work (freeing its memory).
        let short = clock - exit.cpu_ns;
        assert!(
            (0..12_000_000).contains(&short),
            "record {} ns, clock {clock} ns",
            exit.cpu_ns
        );
    }
}
