//! The packetize stage: the frame's bitstream cut into RTP-like packets small enough for one
//! UDP datagram on any path (≤ 1200 payload bytes). The 12-byte header has the RTP v2 layout
//! (sequence number, 90 kHz timestamp, marker on a frame's last packet, SSRC); the payload is
//! a plain slice of the Annex B stream, not RFC 6184 NAL fragmentation — the receiver here
//! only needs to be able to reassemble it.

/// Largest payload of one packet.
pub const MAX_PAYLOAD_BYTES: usize = 1200;
/// Size of the header in front of every payload.
pub const HEADER_BYTES: usize = 12;
/// A dynamic RTP payload type, as H.264 streams use.
const PAYLOAD_TYPE: u8 = 96;

/// The fields of one packet's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeader {
    pub sequence: u16,
    pub timestamp: u32,
    pub marker: bool,
    pub ssrc: u32,
}

/// Turns frames into packets, keeping the sequence number across frames. The packets of the
/// last frame live back to back in one reused buffer: a real copy, no allocation per frame.
pub struct Packetizer {
    ssrc: u32,
    next_sequence: u16,
    buffer: Vec<u8>,
    ends: Vec<usize>,
}

impl Packetizer {
    pub fn new(ssrc: u32) -> Packetizer {
        Packetizer {
            ssrc,
            next_sequence: 0,
            buffer: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Splits `bitstream` into packets stamped with `timestamp` (90 kHz units) and returns how
    /// many. An empty bitstream (a skipped frame) makes no packets.
    pub fn packetize(&mut self, bitstream: &[u8], timestamp: u32) -> usize {
        self.buffer.clear();
        self.ends.clear();
        let count = bitstream.len().div_ceil(MAX_PAYLOAD_BYTES);
        for (index, payload) in bitstream.chunks(MAX_PAYLOAD_BYTES).enumerate() {
            let header = PacketHeader {
                sequence: self.next_sequence,
                timestamp,
                marker: index + 1 == count,
                ssrc: self.ssrc,
            };
            write_header(&header, &mut self.buffer);
            self.buffer.extend_from_slice(payload);
            self.ends.push(self.buffer.len());
            self.next_sequence = self.next_sequence.wrapping_add(1);
        }
        count
    }

    /// The packets of the last frame, in order.
    pub fn packets(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(start, end)| &self.buffer[start..end])
    }
}

fn write_header(header: &PacketHeader, out: &mut Vec<u8>) {
    out.push(0x80); // version 2, no padding, no extension, no CSRC
    out.push(((header.marker as u8) << 7) | PAYLOAD_TYPE);
    out.extend_from_slice(&header.sequence.to_be_bytes());
    out.extend_from_slice(&header.timestamp.to_be_bytes());
    out.extend_from_slice(&header.ssrc.to_be_bytes());
}

/// Reads a packet back: its header and payload, or `None` when it is not one of ours.
pub fn parse_packet(packet: &[u8]) -> Option<(PacketHeader, &[u8])> {
    let (header, payload) = packet.split_at_checked(HEADER_BYTES)?;
    if header[0] != 0x80 || header[1] & 0x7f != PAYLOAD_TYPE {
        return None;
    }
    let parsed = PacketHeader {
        marker: header[1] & 0x80 != 0,
        sequence: u16::from_be_bytes([header[2], header[3]]),
        timestamp: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
        ssrc: u32::from_be_bytes([header[8], header[9], header[10], header[11]]),
    };
    Some((parsed, payload))
}

/// The 90 kHz RTP timestamp of frame `frame` at `fps` (wrapping, as RTP timestamps do).
pub fn rtp_timestamp(frame: u64, fps: f64) -> u32 {
    let ticks = frame as f64 * 90_000.0 / fps;
    (ticks as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips() {
        let mut p = Packetizer::new(0xDEAD_BEEF);
        assert_eq!(p.packetize(&[7; 10], 12345), 1);
        let packet = p.packets().next().unwrap();
        assert_eq!(packet.len(), HEADER_BYTES + 10);
        let (header, payload) = parse_packet(packet).unwrap();
        assert_eq!(
            header,
            PacketHeader {
                sequence: 0,
                timestamp: 12345,
                marker: true,
                ssrc: 0xDEAD_BEEF
            }
        );
        assert_eq!(payload, [7; 10]);
        assert_eq!(parse_packet(&packet[..5]), None);
        assert_eq!(parse_packet(&[0u8; 20]), None);
    }

    #[test]
    fn an_empty_frame_makes_no_packets() {
        let mut p = Packetizer::new(1);
        assert_eq!(p.packetize(&[], 0), 0);
        assert_eq!(p.packets().count(), 0);
    }

    #[test]
    fn timestamps_use_the_90khz_clock() {
        assert_eq!(rtp_timestamp(0, 120.0), 0);
        assert_eq!(rtp_timestamp(120, 120.0), 90_000);
        assert_eq!(rtp_timestamp(1, 30.0), 3_000);
    }
}
