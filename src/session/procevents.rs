//! The kernel's process events (the netlink proc connector: NETLINK_CONNECTOR, CN_IDX_PROC):
//! a message for every exec and every exit on the machine, as it happens. `--watch NAME`
//! learns of a new process from its exec event instead of rescanning /proc every 2 s, so a
//! process that lives a few milliseconds is read while it lives (or, ended, is matched to
//! its exit record by name: `taskstats`).
//!
//! Listening needs CAP_NET_ADMIN in the initial namespaces (root usually has it, containers
//! often do not), and the pids in events are those of the initial pid namespace.
//! `ProcEvents::open` checks both by watching a child of its own exit; when anything is
//! amiss framelab rescans /proc instead and says so.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// linux/netlink.h, linux/connector.h, linux/cn_proc.h: stable ABI.
const NETLINK_CONNECTOR: i32 = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const NLMSG_DONE: u16 = 3;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_EVENT_EXEC: u32 = 0x0000_0002;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;
/// `struct nlmsghdr` is 16 bytes, `struct cn_msg` 20; `struct proc_event` follows: what,
/// cpu, timestamp_ns, then the event's own data.
const NLMSG_HDR_LEN: usize = 16;
const CN_MSG_LEN: usize = 20;
const EVENT_DATA_AT: usize = NLMSG_HDR_LEN + CN_MSG_LEN + 16;

/// One event: a process (thread group) that exec'd, or a process that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcEvent {
    Exec {
        pid: u32,
    },
    /// The whole process ended (its last thread), `ppid` its parent.
    Exit {
        pid: u32,
        ppid: u32,
    },
}

pub struct ProcEvents {
    socket: OwnedFd,
    /// Times the kernel could not queue events (the socket's buffer was full).
    pub lost: u64,
    buffer: Vec<u8>,
}

impl ProcEvents {
    /// Subscribes to process events and checks they arrive, with pids as framelab sees
    /// them. `Err` says why not, in a few words.
    pub fn open() -> Result<ProcEvents, String> {
        // SAFETY: plain socket call; the fd is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_CONNECTOR,
            )
        };
        if fd < 0 {
            return Err(format!(
                "no connector netlink socket ({})",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut events = ProcEvents {
            socket,
            lost: 0,
            buffer: vec![0; 1 << 16],
        };
        events.subscribe()?;
        events.check()?;
        Ok(events)
    }

    fn subscribe(&mut self) -> Result<(), String> {
        let fd = self.socket.as_raw_fd();
        // SAFETY: a zeroed sockaddr_nl is valid; fields set below.
        let mut address: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        address.nl_family = libc::AF_NETLINK as u16;
        address.nl_groups = CN_IDX_PROC;
        // SAFETY: binding our socket to a valid address of the right size.
        let bound = unsafe {
            libc::bind(
                fd,
                &address as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if bound < 0 {
            return Err(format!(
                "cannot join the process-events group ({})",
                std::io::Error::last_os_error()
            ));
        }
        // Room for bursts of events between two drains (a build starts thousands).
        let size: libc::c_int = 4 << 20;
        // SAFETY: setting an int option on our socket.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
        let message = listen_message();
        // SAFETY: sending our own buffer.
        let sent = unsafe {
            libc::send(
                fd,
                message.as_ptr() as *const libc::c_void,
                message.len(),
                0,
            )
        };
        if sent < 0 {
            return Err(format!(
                "cannot ask for process events ({})",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Forks a child that exits at once: its exit event must come, with its pid as framelab
    /// saw it. The kernel ignores the request silently without the capability or from
    /// inside a pid namespace: no event is how that shows.
    fn check(&mut self) -> Result<(), String> {
        let child = super::taskstats::fork_and_reap_a_child("process events")?;
        let mut seen = Vec::new();
        for _ in 0..50 {
            self.drain(&mut seen);
            if seen
                .iter()
                .any(|e| matches!(e, ProcEvent::Exit { pid, .. } if *pid == child))
            {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Err("no process events arrive (they need CAP_NET_ADMIN outside a pid namespace)".into())
    }

    /// Reads every event waiting, without blocking, into `out`.
    pub fn drain(&mut self, out: &mut Vec<ProcEvent>) {
        super::taskstats::receive_waiting(
            &self.socket,
            &mut self.buffer,
            &mut self.lost,
            |datagram| out.extend(parse_events(datagram)),
        );
    }
}

/// The request to listen: a netlink header, a connector header, PROC_CN_MCAST_LISTEN.
fn listen_message() -> Vec<u8> {
    let total = NLMSG_HDR_LEN + CN_MSG_LEN + 4;
    let mut m = Vec::with_capacity(total);
    m.extend((total as u32).to_ne_bytes());
    m.extend(NLMSG_DONE.to_ne_bytes());
    m.extend(0u16.to_ne_bytes()); // flags
    m.extend(0u32.to_ne_bytes()); // seq
    m.extend(std::process::id().to_ne_bytes());
    m.extend(CN_IDX_PROC.to_ne_bytes());
    m.extend(CN_VAL_PROC.to_ne_bytes());
    m.extend(0u32.to_ne_bytes()); // seq
    m.extend(0u32.to_ne_bytes()); // ack
    m.extend(4u16.to_ne_bytes()); // len
    m.extend(0u16.to_ne_bytes()); // flags
    m.extend(PROC_CN_MCAST_LISTEN.to_ne_bytes());
    m
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

/// The events of one datagram (one or more netlink messages); anything malformed is skipped.
fn parse_events(mut data: &[u8]) -> Vec<ProcEvent> {
    let mut events = Vec::new();
    while data.len() >= NLMSG_HDR_LEN {
        let Some(len) = u32_at(data, 0).map(|l| l as usize) else {
            break;
        };
        if len < NLMSG_HDR_LEN || len > data.len() {
            break;
        }
        let message = &data[..len];
        let what = u32_at(message, NLMSG_HDR_LEN + CN_MSG_LEN);
        let at = EVENT_DATA_AT;
        let event = match what {
            // exec_proc_event: process_pid, process_tgid.
            Some(PROC_EVENT_EXEC) => u32_at(message, at + 4).map(|pid| ProcEvent::Exec { pid }),
            // exit_proc_event: process_pid, process_tgid, exit_code, exit_signal,
            // parent_pid, parent_tgid. Only the group's end (its leader's pid) is a process's.
            Some(PROC_EVENT_EXIT) => match (u32_at(message, at), u32_at(message, at + 4)) {
                (Some(tid), Some(pid)) if tid == pid => {
                    u32_at(message, at + 20).map(|ppid| ProcEvent::Exit { pid, ppid })
                }
                _ => None,
            },
            _ => None,
        };
        events.extend(event);
        let next = (len + 3) & !3;
        if next >= data.len() {
            break;
        }
        data = &data[next..];
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(what: u32, fields: &[u32]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(what.to_ne_bytes());
        body.extend(0u32.to_ne_bytes()); // cpu
        body.extend(0u64.to_ne_bytes()); // timestamp
        for f in fields {
            body.extend(f.to_ne_bytes());
        }
        let total = NLMSG_HDR_LEN + CN_MSG_LEN + body.len();
        let mut m = Vec::new();
        m.extend((total as u32).to_ne_bytes());
        m.extend([0u8; 12]);
        m.extend([0u8; CN_MSG_LEN]);
        m.extend(body);
        m
    }

    #[test]
    fn reads_exec_and_whole_process_exits() {
        let mut datagram = event(PROC_EVENT_EXEC, &[7, 7]);
        datagram.extend(event(PROC_EVENT_EXIT, &[9, 9, 0, 17, 3, 3]));
        // A thread's exit is not the process's.
        datagram.extend(event(PROC_EVENT_EXIT, &[10, 9, 0, 17, 3, 3]));
        assert_eq!(
            parse_events(&datagram),
            [
                ProcEvent::Exec { pid: 7 },
                ProcEvent::Exit { pid: 9, ppid: 3 }
            ]
        );
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..80 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let _ = parse_events(&bytes);
        }
        let short = event(PROC_EVENT_EXIT, &[9]);
        assert!(parse_events(&short).is_empty());
    }
}
