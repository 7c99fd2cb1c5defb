//! Sorting what is nearly in order already: frames by end, where a few late frames (a
//! stall, a frame overlapping the next) break an order the rest keep.

/// Sorts `items` ascending by `key`, whose keys must be unique (ties end in no set order).
/// One pass keeps the items already in order in place and sets the others aside; those
/// few are sorted and merged in from the back: O(n) and a copy of the late ones only,
/// where a general sort of millions of items compares each a dozen times or more. Falls
/// back to a general sort when more than one item in 16 is out of order.
pub fn sort_nearly_sorted<K: Ord>(items: &mut [u32], key: impl Fn(u32) -> K) {
    let most_late = items.len() / 16;
    let mut late: Vec<u32> = Vec::new();
    let mut kept = 0;
    for at in 0..items.len() {
        let item = items[at];
        if kept > 0 && key(item) < key(items[kept - 1]) {
            late.push(item);
            if late.len() > most_late {
                // Items up to here are the kept ones, then the late ones.
                items[kept..=at].copy_from_slice(&late);
                items.sort_unstable_by_key(|&i| key(i));
                return;
            }
        } else {
            items[kept] = item;
            kept += 1;
        }
    }
    if late.is_empty() {
        return;
    }
    late.sort_unstable_by_key(|&i| key(i));
    // Merge from the back: the largest of the two tails goes last.
    let (mut k, mut l, mut out) = (kept, late.len(), items.len());
    while l > 0 {
        out -= 1;
        if k > 0 && key(items[k - 1]) > key(late[l - 1]) {
            items[out] = items[k - 1];
            k -= 1;
        } else {
            items[out] = late[l - 1];
            l -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sort_nearly_sorted;

    /// Against a plain sort: in order, a few late items, one early item, reversed (the
    /// general sort), empty, one.
    #[test]
    fn sorts_as_a_general_sort_does() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<Vec<u32>> = vec![
            (0..1000).collect(),
            (0..1000).rev().collect(),
            vec![],
            vec![7],
            vec![
                500, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
            ],
        ];
        for _ in 0..50 {
            // Mostly ascending keys with a few moved back by a random amount.
            let mut v: Vec<u32> = (0..3000).map(|i| i * 3).collect();
            for _ in 0..(next() % 60) {
                let at = (next() % 3000) as usize;
                v[at] = v[at].saturating_sub((next() % 9000) as u32) | 1;
            }
            v.sort_unstable();
            v.dedup();
            for _ in 0..(next() % 60) {
                let (a, b) = (
                    (next() % v.len() as u64) as usize,
                    (next() % v.len() as u64) as usize,
                );
                v.swap(a, b);
            }
            cases.push(v);
        }
        for case in cases {
            // Items are indices into keys, as the frames' order is.
            let keys: Vec<u64> = case.iter().map(|&k| u64::from(k) * 10).collect();
            let mut items: Vec<u32> = (0..case.len() as u32).collect();
            let mut expected = items.clone();
            expected.sort_unstable_by_key(|&i| keys[i as usize]);
            sort_nearly_sorted(&mut items, |i| keys[i as usize]);
            assert_eq!(items, expected, "{case:?}");
        }
    }
}
