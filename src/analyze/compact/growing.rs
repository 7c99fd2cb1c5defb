//! A column of i64 nanoseconds filled by index while spans stream past (the frames'
//! starts or ends, widened as their spans come), in about 4 bytes a value: blocks of
//! values, the latest few as i64 and the older ones as u32 offsets from their smallest
//! value. Frames come nearly in index order, so an older block is seldom written again;
//! when it is and the value does not fit, that block turns back to i64. Where the table's
//! columns were `Vec<i64>`s they took 8 bytes a frame each (12 while they grew by half),
//! the peak of every analysis of a run with one span a frame (issue 29).

/// Values a block.
const BLOCK: usize = 1024;
/// Blocks kept as i64 behind the last one: spans a little late write there.
const RECENT_BLOCKS: usize = 4;

#[derive(Clone, Debug)]
enum Block {
    Wide(Box<[i64]>),
    Narrow { base: i64, offsets: Box<[u32]> },
}

impl Block {
    fn get(&self, j: usize) -> i64 {
        match self {
            Block::Wide(values) => values[j],
            Block::Narrow { base, offsets } => base + i64::from(offsets[j]),
        }
    }

    fn set(&mut self, j: usize, v: i64) {
        match self {
            Block::Wide(values) => values[j] = v,
            Block::Narrow { base, offsets } => match u32::try_from(v as i128 - *base as i128) {
                Ok(offset) => offsets[j] = offset,
                Err(_) => {
                    let mut values: Box<[i64]> =
                        offsets.iter().map(|&o| *base + i64::from(o)).collect();
                    values[j] = v;
                    *self = Block::Wide(values);
                }
            },
        }
    }

    /// As offsets when every value is within u32 of the smallest.
    fn narrow(&mut self) {
        let Block::Wide(values) = self else {
            return;
        };
        let (min, max) =
            (values.iter()).fold((i64::MAX, i64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if (max as i128 - min as i128) <= u32::MAX as i128 {
            let offsets = values.iter().map(|&v| (v as i128 - min as i128) as u32);
            *self = Block::Narrow {
                base: min,
                offsets: offsets.collect(),
            };
        }
    }
}

/// The column; slots not written yet hold `fill`.
#[derive(Clone, Debug)]
pub struct GrowingNs {
    blocks: Vec<Block>,
    len: usize,
    fill: i64,
}

impl GrowingNs {
    pub fn new(fill: i64) -> GrowingNs {
        GrowingNs {
            blocks: Vec::new(),
            len: 0,
            fill,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> i64 {
        debug_assert!(i < self.len);
        self.blocks[i / BLOCK].get(i % BLOCK)
    }

    pub fn set(&mut self, i: usize, v: i64) {
        debug_assert!(i < self.len);
        self.blocks[i / BLOCK].set(i % BLOCK, v);
    }

    /// At least `len` slots, the new ones `fill`.
    pub fn grow_to(&mut self, len: usize) {
        while self.blocks.len() * BLOCK < len {
            self.blocks
                .push(Block::Wide(vec![self.fill; BLOCK].into_boxed_slice()));
            if let Some(old) = self.blocks.len().checked_sub(RECENT_BLOCKS + 2) {
                self.blocks[old].narrow();
            }
        }
        self.len = self.len.max(len);
    }

    pub fn push(&mut self, v: i64) {
        let i = self.len;
        self.grow_to(i + 1);
        self.set(i, v);
    }

    /// The values from the first to the last, each block freed once read.
    pub fn into_values(self) -> impl Iterator<Item = i64> {
        let len = self.len;
        (self.blocks.into_iter())
            .flat_map(|block| (0..BLOCK).map(move |j| block.get(j)))
            .take(len)
    }

    /// The values from the last to the first, each block freed once read.
    pub fn into_values_rev(mut self) -> impl Iterator<Item = i64> {
        let len = self.len;
        let in_last = match len % BLOCK {
            0 => BLOCK,
            n => n,
        };
        let mut first = true;
        std::iter::from_fn(move || self.blocks.pop())
            .flat_map(move |block| {
                let n = if std::mem::take(&mut first) {
                    in_last
                } else {
                    BLOCK
                };
                (0..n).rev().map(move |j| block.get(j))
            })
            .take(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_written_whatever_block_they_are_in() {
        let mut column = GrowingNs::new(i64::MAX);
        let mut expected = Vec::new();
        for i in 0..20 * BLOCK {
            let v = 1_000_000_000 + i as i64 * 7;
            column.push(v);
            expected.push(v);
        }
        // Late writes into packed blocks: one that fits, one that does not (widened).
        column.set(3, 1_000_000_001);
        expected[3] = 1_000_000_001;
        column.set(5 * BLOCK + 9, -5);
        expected[5 * BLOCK + 9] = -5;
        column.grow_to(20 * BLOCK + 10);
        expected.extend([i64::MAX; 10]);
        assert!(matches!(column.blocks[0], Block::Narrow { .. }));
        assert!(matches!(column.blocks[5], Block::Wide(_)));
        let read: Vec<i64> = (0..column.len()).map(|i| column.get(i)).collect();
        assert_eq!(read, expected);
        assert_eq!(column.clone().into_values().collect::<Vec<_>>(), expected);
        let mut reversed = expected.clone();
        reversed.reverse();
        assert_eq!(column.into_values_rev().collect::<Vec<_>>(), reversed);
        assert_eq!(GrowingNs::new(0).into_values_rev().count(), 0);
    }
}
