//! A column of small indices (threads) at the width its largest value needs: a byte each
//! for the usual handful of threads rather than four (issue 29: 3 bytes a span).

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NarrowIds {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Default for NarrowIds {
    fn default() -> NarrowIds {
        NarrowIds::U8(Vec::new())
    }
}

impl NarrowIds {
    pub fn with_capacity(capacity: usize) -> NarrowIds {
        NarrowIds::U8(Vec::with_capacity(capacity))
    }

    /// Appends `v`, widening every value so far when it does not fit (once per width).
    pub fn push(&mut self, v: u32) {
        match self {
            NarrowIds::U8(a) => match u8::try_from(v) {
                Ok(b) => a.push(b),
                Err(_) => {
                    self.widen(v);
                    self.push(v);
                }
            },
            NarrowIds::U16(a) => match u16::try_from(v) {
                Ok(b) => a.push(b),
                Err(_) => {
                    self.widen(v);
                    self.push(v);
                }
            },
            NarrowIds::U32(a) => a.push(v),
        }
    }

    /// Rewrites the values so far at the width `v` needs (keeping the room reserved).
    fn widen(&mut self, v: u32) {
        let room = self.capacity();
        let wide: Vec<u32> = match self {
            NarrowIds::U8(a) => a.iter().map(|&x| u32::from(x)).collect(),
            NarrowIds::U16(a) => a.iter().map(|&x| u32::from(x)).collect(),
            NarrowIds::U32(_) => return,
        };
        *self = if v <= u32::from(u16::MAX) {
            let mut a = Vec::with_capacity(room);
            a.extend(wide.iter().map(|&x| x as u16));
            NarrowIds::U16(a)
        } else {
            let mut a = Vec::with_capacity(room);
            a.extend(wide);
            NarrowIds::U32(a)
        };
    }

    fn capacity(&self) -> usize {
        match self {
            NarrowIds::U8(a) => a.capacity(),
            NarrowIds::U16(a) => a.capacity(),
            NarrowIds::U32(a) => a.capacity(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            NarrowIds::U8(a) => a.len(),
            NarrowIds::U16(a) => a.len(),
            NarrowIds::U32(a) => a.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `i` (panics past the end, as a slice does).
    pub fn get(&self, i: usize) -> u32 {
        match self {
            NarrowIds::U8(a) => u32::from(a[i]),
            NarrowIds::U16(a) => u32::from(a[i]),
            NarrowIds::U32(a) => a[i],
        }
    }

    pub fn shrink_to_fit(&mut self) {
        match self {
            NarrowIds::U8(a) => a.shrink_to_fit(),
            NarrowIds::U16(a) => a.shrink_to_fit(),
            NarrowIds::U32(a) => a.shrink_to_fit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_at_every_width() {
        let values = [3u32, 0, 255, 256, 7, 65_535, 65_536, u32::MAX, 1];
        let mut ids = NarrowIds::with_capacity(2);
        for (n, &v) in values.iter().enumerate() {
            ids.push(v);
            let expected = match v {
                _ if values[..=n].iter().all(|&x| x <= 255) => "u8",
                _ if values[..=n].iter().all(|&x| x <= 65_535) => "u16",
                _ => "u32",
            };
            let width = match ids {
                NarrowIds::U8(_) => "u8",
                NarrowIds::U16(_) => "u16",
                NarrowIds::U32(_) => "u32",
            };
            assert_eq!(width, expected, "after {n} values");
        }
        let back: Vec<u32> = (0..ids.len()).map(|i| ids.get(i)).collect();
        assert_eq!(back, values);
    }

    #[test]
    fn a_byte_wide_column_widens_straight_to_u32_when_it_must() {
        let mut ids = NarrowIds::default();
        ids.push(9);
        ids.push(70_000);
        assert!(matches!(ids, NarrowIds::U32(_)));
        assert_eq!((ids.get(0), ids.get(1)), (9, 70_000));
    }
}
