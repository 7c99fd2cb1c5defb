//! Generic netlink plumbing shared by the exit records (`Taskstats`) and the per-thread
//! queries (`ThreadQuery`): a bound socket, the family lookup, requests with one attribute,
//! and the walk over messages and attributes of a datagram (linux/netlink.h,
//! linux/genetlink.h: stable ABI).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub const NLMSG_ERROR: u16 = 2;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_ACK: u16 = 4;
pub const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// A netlink header (16 bytes) and a generic netlink one (4).
pub const HEADERS_LEN: usize = 20;

/// A bound generic netlink socket and the buffer its replies are read into.
pub struct GenlSocket {
    pub socket: OwnedFd,
    pub buffer: Vec<u8>,
}

impl GenlSocket {
    /// A socket bound to a port of its own, asking for `receive_buffer` bytes of room
    /// (beyond `net.core.rmem_max` only with privilege), whose blocking reads give up
    /// after a second.
    pub fn open(receive_buffer: i32) -> Result<GenlSocket, String> {
        // SAFETY: plain socket call; the fd is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return Err(format!(
                "no generic netlink socket ({})",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: valid sockaddr_nl and option values for this socket.
        unsafe {
            let mut addr: libc::sockaddr_nl = std::mem::zeroed();
            addr.nl_family = libc::AF_NETLINK as u16;
            if libc::bind(
                fd,
                &addr as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            ) != 0
            {
                return Err(format!(
                    "cannot bind a netlink socket ({})",
                    std::io::Error::last_os_error()
                ));
            }
            let len = std::mem::size_of::<libc::c_int>() as u32;
            let ptr = &receive_buffer as *const libc::c_int as *const libc::c_void;
            if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, ptr, len) != 0 {
                libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, ptr, len);
            }
            let timeout = libc::timeval {
                tv_sec: 1,
                tv_usec: 0,
            };
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &timeout as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as u32,
            );
        }
        Ok(GenlSocket {
            socket,
            buffer: vec![0; 1 << 16],
        })
    }

    /// The id of the generic netlink family `name` (e.g. "TASKSTATS").
    pub fn family(&mut self, name: &str) -> Result<u16, String> {
        let mut message = Vec::new();
        append_request(
            &mut message,
            GENL_ID_CTRL,
            NLM_F_REQUEST,
            1,
            CTRL_CMD_GETFAMILY,
            CTRL_ATTR_FAMILY_NAME,
            &nul_terminated(name),
        );
        self.send(&message)?;
        let n = self.recv()?;
        let mut found = None;
        for (kind, _, payload) in messages(&self.buffer[..n]) {
            if kind == NLMSG_ERROR {
                let code = error_code(payload).unwrap_or(-1);
                return Err(format!(
                    "no {} in this kernel ({})",
                    name.to_lowercase(),
                    std::io::Error::from_raw_os_error(-code)
                ));
            }
            for (attr, value) in attributes(payload.get(4..).unwrap_or_default()) {
                if attr == CTRL_ATTR_FAMILY_ID && value.len() >= 2 {
                    found = Some(u16::from_ne_bytes([value[0], value[1]]));
                }
            }
        }
        found.ok_or_else(|| format!("no {} family in the reply", name.to_lowercase()))
    }

    pub fn send(&self, message: &[u8]) -> Result<(), String> {
        // SAFETY: sending our own buffer.
        let sent = unsafe {
            libc::send(
                self.socket.as_raw_fd(),
                message.as_ptr() as *const libc::c_void,
                message.len(),
                0,
            )
        };
        if sent != message.len() as isize {
            return Err(format!(
                "netlink send failed ({})",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// One datagram into `buffer` (waiting at most a second); its length.
    pub fn recv(&mut self) -> Result<usize, String> {
        // SAFETY: receiving into our own buffer.
        let n = unsafe {
            libc::recv(
                self.socket.as_raw_fd(),
                self.buffer.as_mut_ptr() as *mut libc::c_void,
                self.buffer.len(),
                0,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        Ok(n as usize)
    }

    /// Reads never block from now on.
    pub fn set_nonblocking(&self) {
        let fd = self.socket.as_raw_fd();
        // SAFETY: fcntl on our own descriptor.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// `value` as a netlink string attribute wants it.
pub fn nul_terminated(value: &str) -> Vec<u8> {
    let mut bytes = value.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// Appends a generic netlink request with one attribute to `out` (requests may be sent
/// several to a datagram: the kernel answers each).
pub fn append_request(
    out: &mut Vec<u8>,
    family: u16,
    flags: u16,
    seq: u32,
    cmd: u8,
    attr: u16,
    value: &[u8],
) {
    let attr_len = 4 + value.len();
    let total = HEADERS_LEN + align4(attr_len);
    out.extend_from_slice(&(total as u32).to_ne_bytes());
    out.extend_from_slice(&family.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel fills it
    out.extend_from_slice(&[cmd, 1, 0, 0]);
    out.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    out.extend_from_slice(&attr.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize(out.len() + align4(attr_len) - attr_len, 0);
}

/// The netlink messages of a datagram: (type, sequence number, payload after the 16-byte
/// header).
pub fn messages(mut data: &[u8]) -> impl Iterator<Item = (u16, u32, &[u8])> {
    std::iter::from_fn(move || {
        if data.len() < 16 {
            return None;
        }
        let len = u32::from_ne_bytes(data[0..4].try_into().ok()?) as usize;
        let kind = u16::from_ne_bytes(data[4..6].try_into().ok()?);
        let seq = u32::from_ne_bytes(data[8..12].try_into().ok()?);
        if len < 16 || len > data.len() {
            return None;
        }
        let payload = &data[16..len];
        data = &data[align4(len).min(data.len())..];
        Some((kind, seq, payload))
    })
}

/// Attributes (type without its flag bits, value) of a payload.
pub fn attributes(mut data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if data.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([data[0], data[1]]) as usize;
        let kind = u16::from_ne_bytes([data[2], data[3]]) & 0x3fff;
        if len < 4 || len > data.len() {
            return None;
        }
        let value = &data[4..len];
        data = &data[align4(len).min(data.len())..];
        Some((kind, value))
    })
}

pub fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The error code of an NLMSG_ERROR payload (0 for an ack).
pub fn error_code(payload: &[u8]) -> Option<i32> {
    Some(i32::from_ne_bytes(payload.get(0..4)?.try_into().ok()?))
}

pub fn u32_at(bytes: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        bytes.get(offset..offset + 4)?.try_into().ok()?,
    ))
}

pub fn u64_at(bytes: &[u8], offset: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        bytes.get(offset..offset + 8)?.try_into().ok()?,
    ))
}

/// Hands every datagram waiting on a netlink `socket` to `visit`, without blocking; counts
/// in `lost` each time the kernel dropped some for want of room (reading goes on).
pub(crate) fn receive_waiting(
    socket: &OwnedFd,
    buffer: &mut [u8],
    lost: &mut u64,
    mut visit: impl FnMut(&[u8]),
) {
    loop {
        // SAFETY: receiving into our own buffer, never blocking.
        let n = unsafe {
            libc::recv(
                socket.as_raw_fd(),
                buffer.as_mut_ptr() as *mut libc::c_void,
                buffer.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOBUFS) {
                *lost += 1;
                continue;
            }
            return;
        }
        if n == 0 {
            return;
        }
        visit(&buffer[..n as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_walks_back_as_one_message_with_its_attribute() {
        let mut datagram = Vec::new();
        append_request(
            &mut datagram,
            31,
            NLM_F_REQUEST,
            7,
            1,
            1,
            &4321u32.to_ne_bytes(),
        );
        append_request(&mut datagram, 31, NLM_F_REQUEST, 8, 1, 2, b"ab\0");
        let walked: Vec<_> = messages(&datagram).collect();
        assert_eq!(walked.len(), 2);
        let (kind, seq, payload) = walked[1];
        assert_eq!((kind, seq, payload[0]), (31, 8, 1));
        let attrs: Vec<_> = attributes(&payload[4..]).collect();
        assert_eq!(attrs, vec![(2, &b"ab\0"[..])]);
        assert_eq!(
            u32_at(attributes(&walked[0].2[4..]).next().unwrap().1, 0),
            Some(4321)
        );
    }
}
