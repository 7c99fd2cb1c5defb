//! Non-negative nanosecond values (durations, totals, intervals) at half the width when
//! every one fits in a u32 (4.29 s): the statistics are computed on either width and are
//! the same numbers.

use crate::analyze::stats::{sort_ns, sort_u32};
use crate::analyze::Dist;

/// Sets sorted at once, at most (each set is held while it is sorted).
pub const SORTS_AT_ONCE: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NsValues {
    Narrow(Vec<u32>),
    Wide(Vec<i64>),
}

/// Runs `$body` with `$v` bound to the values as a `Vec` of their width.
macro_rules! with_ns {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            $crate::analyze::compact::values::NsValues::Narrow($v) => $body,
            $crate::analyze::compact::values::NsValues::Wide($v) => $body,
        }
    };
}
pub(crate) use with_ns;

impl NsValues {
    /// Room for `capacity` values in `[min, max]`: u32 when they all fit.
    pub fn for_range(min: i64, max: i64, capacity: usize) -> NsValues {
        if min >= 0 && max <= u32::MAX as i64 {
            NsValues::Narrow(Vec::with_capacity(capacity))
        } else {
            NsValues::Wide(Vec::with_capacity(capacity))
        }
    }

    /// Appends `v`; a value that does not fit a narrow set widens it (sized by
    /// [`NsValues::for_range`], that never happens).
    pub fn push(&mut self, v: i64) {
        match self {
            NsValues::Narrow(narrow) => match u32::try_from(v) {
                Ok(v) => narrow.push(v),
                Err(_) => {
                    let mut wide: Vec<i64> = Vec::with_capacity(narrow.capacity().max(1));
                    wide.extend(narrow.iter().map(|&n| i64::from(n)));
                    wide.push(v);
                    *self = NsValues::Wide(wide);
                }
            },
            NsValues::Wide(wide) => wide.push(v),
        }
    }

    /// Appends all of `other`, widening where it must.
    pub fn append(&mut self, other: NsValues) {
        match (self, other) {
            (NsValues::Narrow(a), NsValues::Narrow(b)) => a.extend(b),
            (NsValues::Wide(a), NsValues::Wide(b)) => a.extend(b),
            (NsValues::Wide(a), NsValues::Narrow(b)) => a.extend(b.into_iter().map(i64::from)),
            (this @ NsValues::Narrow(_), NsValues::Wide(b)) => {
                let NsValues::Narrow(a) = std::mem::replace(this, NsValues::Wide(Vec::new()))
                else {
                    unreachable!("matched narrow");
                };
                let mut wide: Vec<i64> = Vec::with_capacity(a.len() + b.len());
                wide.extend(a.into_iter().map(i64::from));
                wide.extend(b);
                *this = NsValues::Wide(wide);
            }
        }
    }

    pub fn len(&self) -> usize {
        with_ns!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorts ascending, in place (a radix sort that needs no buffer).
    pub fn sort(&mut self) {
        match self {
            NsValues::Narrow(v) => sort_u32(v),
            NsValues::Wide(v) => sort_ns(v),
        }
    }

    /// The value at `i`.
    #[allow(clippy::useless_conversion)] // from u32 and from i64 alike, through `with_ns!`
    pub fn get(&self, i: usize) -> Option<i64> {
        with_ns!(self, v => v.get(i).map(|&x| i64::from(x)))
    }

    /// The summary of values already sorted; `None` when empty.
    pub fn dist_of_sorted(&self) -> Option<Dist> {
        with_ns!(self, v => Dist::of_sorted(v))
    }

    /// The values as i64, for callers that want them so (small sets, tests).
    pub fn to_i64(&self) -> Vec<i64> {
        match self {
            NsValues::Narrow(v) => v.iter().map(|&x| i64::from(x)).collect(),
            NsValues::Wide(v) => v.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_keeps_every_value_at_the_width_needed() {
        let narrow = |v: &[u32]| NsValues::Narrow(v.to_vec());
        let wide = |v: &[i64]| NsValues::Wide(v.to_vec());
        let mut a = narrow(&[1, 2]);
        a.append(narrow(&[3]));
        assert_eq!(a, narrow(&[1, 2, 3]));
        a.append(wide(&[u32::MAX as i64 + 1]));
        assert_eq!(a, wide(&[1, 2, 3, u32::MAX as i64 + 1]));
        a.append(narrow(&[4]));
        assert_eq!(a.to_i64(), vec![1, 2, 3, u32::MAX as i64 + 1, 4]);
    }

    #[test]
    fn a_value_over_u32_widens_and_keeps_the_rest() {
        let mut v = NsValues::for_range(0, 10, 2);
        assert!(matches!(v, NsValues::Narrow(_)));
        v.push(7);
        v.push(u32::MAX as i64 + 1);
        v.push(3);
        assert!(matches!(v, NsValues::Wide(_)));
        assert_eq!(v.to_i64(), vec![7, u32::MAX as i64 + 1, 3]);
        v.sort();
        assert_eq!(v.to_i64(), vec![3, 7, u32::MAX as i64 + 1]);
        assert!(matches!(NsValues::for_range(-1, 5, 0), NsValues::Wide(_)));
    }
}
