//! The send stage: packets go out over UDP on loopback to a receiver in this process, so the
//! kernel does the real work of a network send (a system call and a copy per packet). The
//! socket is non-blocking: a full socket buffer drops the packet and counts it, it never
//! stalls the pipeline. A small thread drains the receiver every few milliseconds, standing in
//! for the client; it polls rather than waking on each packet so that it does not preempt the
//! pipeline at every send.

use std::io::ErrorKind;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

/// How often the drain thread empties the receiver. The socket buffer (about 200 KiB by
/// default) holds far more than the demo sends in this time.
const DRAIN_EVERY: Duration = Duration::from_millis(4);

/// What one frame's send did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOutcome {
    pub sent: u64,
    /// Packets dropped because the socket would have blocked.
    pub dropped: u64,
}

pub struct UdpSender {
    socket: UdpSocket,
    receiver: Option<Receiver>,
}

struct Receiver {
    stop: Arc<AtomicBool>,
    received_packets: Arc<AtomicU64>,
    thread: JoinHandle<()>,
}

impl UdpSender {
    /// Binds a receiver on an ephemeral loopback port, starts its drain thread, and connects a
    /// non-blocking sending socket to it.
    pub fn new() -> Result<UdpSender> {
        let what = "cannot set up the demo's loopback UDP sockets";
        let receiver_socket = UdpSocket::bind("127.0.0.1:0").context(what)?;
        receiver_socket.set_nonblocking(true).context(what)?;
        let address = receiver_socket.local_addr().context(what)?;
        let socket = UdpSocket::bind("127.0.0.1:0").context(what)?;
        socket.connect(address).context(what)?;
        socket.set_nonblocking(true).context(what)?;

        let stop = Arc::new(AtomicBool::new(false));
        let received_packets = Arc::new(AtomicU64::new(0));
        let thread = std::thread::Builder::new()
            .name("demo-receiver".into())
            .spawn({
                let (stop, received) = (stop.clone(), received_packets.clone());
                move || drain(receiver_socket, &stop, &received)
            })
            .context("cannot start the demo's UDP receiver thread")?;
        Ok(UdpSender {
            socket,
            receiver: Some(Receiver {
                stop,
                received_packets,
                thread,
            }),
        })
    }

    /// Sends each packet once; would-block (and a refused port) counts as a drop, any other
    /// error ends the run.
    pub fn send<'a>(&self, packets: impl Iterator<Item = &'a [u8]>) -> Result<SendOutcome> {
        let mut outcome = SendOutcome::default();
        for packet in packets {
            match self.socket.send(packet) {
                Ok(_) => outcome.sent += 1,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::ConnectionRefused
                    ) =>
                {
                    outcome.dropped += 1
                }
                Err(e) => return Err(e).context("sending a packet over loopback UDP failed"),
            }
        }
        Ok(outcome)
    }

    /// Packets the receiver has read so far.
    pub fn received_packets(&self) -> u64 {
        self.receiver
            .as_ref()
            .map_or(0, |r| r.received_packets.load(Relaxed))
    }
}

impl Drop for UdpSender {
    fn drop(&mut self) {
        if let Some(receiver) = self.receiver.take() {
            receiver.stop.store(true, Relaxed);
            let _ = receiver.thread.join();
        }
    }
}

fn drain(socket: UdpSocket, stop: &AtomicBool, received: &AtomicU64) {
    let mut buffer = [0u8; 2048];
    while !stop.load(Relaxed) {
        std::thread::sleep(DRAIN_EVERY);
        loop {
            match socket.recv(&mut buffer) {
                Ok(_) => {
                    received.fetch_add(1, Relaxed);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Would block: empty for now. Anything else: the socket is unusable, and the
                // sender will see its own errors.
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_reach_the_receiver() {
        let sender = UdpSender::new().unwrap();
        let packets = [vec![1u8; 100], vec![2u8; 1212]];
        let outcome = sender.send(packets.iter().map(|p| p.as_slice())).unwrap();
        assert_eq!(outcome.sent + outcome.dropped, 2);
        // Loopback delivery is asynchronous: wait for it rather than assume it is instant.
        for _ in 0..1000 {
            if sender.received_packets() == outcome.sent {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(sender.received_packets(), outcome.sent);
    }
}
