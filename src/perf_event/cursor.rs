//! A little cursor over one ring-buffer record's bytes. Reads past the end give zeros: a
//! short record is the kernel's, but a zero is safer than a panic.

use super::bindings as b;

pub struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

impl<'a> Cursor<'a> {
    /// At the first field after the record's 8-byte header.
    pub fn after_header(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 8 }
    }

    pub fn u64(&mut self) -> u64 {
        let v = self
            .bytes
            .get(self.at..self.at + 8)
            .map_or(0, |s| u64::from_ne_bytes(s.try_into().unwrap()));
        self.at += 8;
        v
    }

    pub fn u32(&mut self) -> u32 {
        let v = self
            .bytes
            .get(self.at..self.at + 4)
            .map_or(0, |s| u32::from_ne_bytes(s.try_into().unwrap()));
        self.at += 4;
        v
    }

    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.bytes.len());
        let end = self.at.saturating_add(n).min(self.bytes.len());
        self.at = self.at.saturating_add(n);
        &self.bytes[start..end]
    }

    /// The `sample_id_all` trailer of a non-sample record: TID, TIME, CPU.
    pub fn trailer_time(&self, sample_type: u64) -> u64 {
        let mut fields = 0;
        if sample_type & b::PERF_SAMPLE_CPU as u64 != 0 {
            fields += 1;
        }
        if sample_type & b::PERF_SAMPLE_TIME as u64 != 0 {
            fields += 1;
        }
        let at = self.bytes.len().saturating_sub(fields * 8);
        Cursor {
            bytes: self.bytes,
            at,
        }
        .u64()
    }
}

/// A record's kind and `misc` flags, from its header.
pub fn header(bytes: &[u8]) -> Option<(u32, u32)> {
    let kind = u32::from_ne_bytes(bytes.get(0..4)?.try_into().ok()?);
    let misc = u16::from_ne_bytes(bytes.get(4..6)?.try_into().ok()?) as u32;
    Some((kind, misc))
}
