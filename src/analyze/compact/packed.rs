//! A column of i64 nanoseconds in about 4 bytes a value: blocks of consecutive values are
//! stored as u32 offsets from the block's smallest value. Times recorded close together
//! (starts of one drain, durations) fit; a block that does not is kept as i64.

/// Values per block: small enough that a block of starts spans less than u32 nanoseconds
/// (4.29 s) down to ~300 spans a second, large enough that its 16-byte header costs nothing.
const BLOCK: usize = 1024;

#[derive(Clone, Copy, Debug)]
enum Block {
    /// `base + offset` for each value.
    Narrow { base: i64 },
    /// The values as they are, at `wide[at..]`.
    Wide { at: usize },
}

#[derive(Clone, Debug, Default)]
pub struct PackedNs {
    offsets: Vec<u32>,
    blocks: Vec<Block>,
    wide: Vec<i64>,
    /// The block being filled, sealed when full or by [`PackedNs::seal`].
    pending: Vec<i64>,
}

impl PackedNs {
    pub fn with_capacity(values: usize) -> PackedNs {
        PackedNs {
            offsets: Vec::with_capacity(values),
            ..PackedNs::default()
        }
    }

    pub fn push(&mut self, v: i64) {
        if self.pending.capacity() == 0 {
            self.pending.reserve_exact(BLOCK);
        }
        self.pending.push(v);
        if self.pending.len() == BLOCK {
            self.flush();
        }
    }

    /// Stores the last, partial block: call once every value is pushed.
    pub fn seal(&mut self) {
        if !self.pending.is_empty() {
            self.flush();
        }
        self.pending = Vec::new();
        self.offsets.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    fn flush(&mut self) {
        let (min, max) = self
            .pending
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if (max as i128 - min as i128) <= u32::MAX as i128 {
            self.blocks.push(Block::Narrow { base: min });
            (self.offsets).extend(
                self.pending
                    .iter()
                    .map(|&v| (v as i128 - min as i128) as u32),
            );
        } else {
            self.blocks.push(Block::Wide {
                at: self.wide.len(),
            });
            self.wide.extend_from_slice(&self.pending);
            self.offsets
                .extend(std::iter::repeat_n(0, self.pending.len()));
        }
        self.pending.clear();
    }

    /// Values stored (after [`PackedNs::seal`]).
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The value at `i` (sealed).
    pub fn get(&self, i: usize) -> i64 {
        match self.blocks[i / BLOCK] {
            Block::Narrow { base } => base + self.offsets[i] as i64,
            Block::Wide { at } => self.wide[at + i % BLOCK],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_whatever_their_spread() {
        // Close values (narrow blocks), a block with i64::MIN and i64::MAX in it (wide),
        // negative values, and a partial last block.
        let mut values: Vec<i64> = (0..BLOCK as i64).map(|i| 1_000_000_000 + i * 3).collect();
        values.extend((0..BLOCK as i64).map(|i| if i == 7 { i64::MIN } else { i64::MAX - i }));
        values.extend((0..BLOCK as i64).map(|i| -5 - i));
        values.extend([4, u32::MAX as i64, 0]); // spread exactly u32::MAX: narrow
        let mut packed = PackedNs::with_capacity(values.len());
        for &v in &values {
            packed.push(v);
        }
        packed.seal();
        assert_eq!(packed.len(), values.len());
        let back: Vec<i64> = (0..packed.len()).map(|i| packed.get(i)).collect();
        assert_eq!(back, values);
        // Only the block holding both ends of the i64 range is stored wide.
        assert_eq!(packed.wide.len(), BLOCK);
    }
}
