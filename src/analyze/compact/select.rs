//! Exact order statistics of a set of values read more than once rather than held: the
//! percentiles, lows and sums of [`crate::analyze::stats::Ranked`] from a fixed amount of
//! memory, whatever the number of values (issue 29: a run's report in memory independent of
//! its length).
//!
//! The first read counts the values into log-spaced buckets (exact counts, sums, least and
//! greatest value of each). The statistics are then computed over the buckets: a question
//! a bucket cannot answer exactly (a rank inside it, a threshold across it) names that
//! bucket, and the next read keeps its values, or splits it into finer buckets when it holds
//! too many to keep. A bucket whose values are all equal answers everything. Each read
//! narrows what is unknown; two reads usually answer all, never more than a few.
//!
//! The caller reads its values once per pass, in any order but the same values each time,
//! calling [`Selection::add`] for each and [`Selection::end_pass`] after, until that says
//! the statistics are exact; they are then computed over the selection as over a sorted
//! slice, by the same code (`Dist::of_ranked`, `fps_summary_ranked`).

use std::cell::RefCell;

use crate::analyze::stats::{value_digest, Ranked};

/// Sub-buckets per power of two: a bucket is 1/256 of its value wide (values below 256 get
/// a bucket each).
const SUB_BITS: u32 = 8;
/// Bucket 0 holds the negative values (none in durations or intervals); then one per
/// value below 2^SUB_BITS, then 2^SUB_BITS per power of two above.
const BUCKETS: usize = 1 + ((64 - SUB_BITS as usize + 1) << SUB_BITS);
/// A bucket too large to keep is split into this many (or one per value, when fewer).
const SPLIT_PARTS: u64 = 4096;
/// Values kept at once by one selection, at most (4 MiB); more are split instead. The
/// library's tests keep a handful, so that every analysis they compare splits buckets and
/// reads again.
pub const KEEP_LIMIT: usize = if cfg!(test) { 4 } else { 1 << 19 };

/// The bucket of a value in the first pass.
fn bucket_of(v: i64) -> usize {
    if v < 0 {
        return 0;
    }
    let k = v as u64;
    if k < 1 << SUB_BITS {
        return 1 + k as usize;
    }
    let top = 63 - k.leading_zeros();
    let sub = (k >> (top - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    1 + ((((top - SUB_BITS + 1) as usize) << SUB_BITS) | sub as usize)
}

/// Values of one range, as far as they are known: their count, sum and bounds, and the
/// values themselves (sorted) once kept.
#[derive(Clone, Debug)]
struct Cell {
    min: i64,
    max: i64,
    count: u64,
    sum: i128,
    kept: Option<Vec<i64>>,
}

impl Cell {
    fn empty() -> Cell {
        Cell {
            min: i64::MAX,
            max: i64::MIN,
            count: 0,
            sum: 0,
            kept: None,
        }
    }

    fn add(&mut self, v: i64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.count += 1;
        self.sum += v as i128;
    }

    /// Adds the values `other` counted.
    fn absorb(&mut self, other: &Cell) {
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    /// Its values are all one value.
    fn uniform(&self) -> bool {
        self.min == self.max
    }
}

/// What the next pass learns of a cell the statistics asked about.
#[derive(Debug)]
enum Detail {
    /// Its values, all of them.
    Keep(Vec<i64>),
    /// Counts in `parts` ranges `width` values wide from the cell's least value.
    Split { width: u64, parts: Vec<Cell> },
}

impl Detail {
    /// The same detail with nothing collected yet.
    fn empty_like(&self) -> Detail {
        match self {
            Detail::Keep(_) => Detail::Keep(Vec::new()),
            Detail::Split { width, parts } => Detail::Split {
                width: *width,
                parts: vec![Cell::empty(); parts.len()],
            },
        }
    }

    /// Adds what `other` (an [`Detail::empty_like`] of it) collected.
    fn absorb(&mut self, other: Detail) {
        match (self, other) {
            (Detail::Keep(mine), Detail::Keep(theirs)) => mine.extend(theirs),
            (Detail::Split { parts: mine, .. }, Detail::Split { parts: theirs, .. }) => {
                for (m, t) in mine.iter_mut().zip(&theirs) {
                    m.absorb(t);
                }
            }
            // Parts are made from the selection they return to.
            _ => unreachable!("a part of a selection collected another detail"),
        }
    }
}

/// The values of one set, as far as the passes so far tell them (see the module's doc).
#[derive(Debug)]
pub struct Selection {
    count: u64,
    total: i128,
    /// The values' [`value_digest`]s summed, when asked for.
    digest: Option<u64>,
    /// Values added in the current pass (each pass must see the same ones).
    seen: u64,
    passes: u32,
    keep_limit: usize,
    /// The first pass's buckets, allocated at the first value.
    buckets: Vec<Cell>,
    /// Ascending, disjoint, non-empty; after the first pass.
    cells: Vec<Cell>,
    /// Values in the cells before each.
    before: Vec<u64>,
    /// What the current pass collects: (cell index, detail), ascending by cell.
    pending: Vec<(usize, Detail)>,
    /// Cells the statistics asked about and could not be answered from (a dry run).
    misses: RefCell<Vec<usize>>,
    resolved: bool,
}

impl Default for Selection {
    fn default() -> Selection {
        Selection::with_keep_limit(KEEP_LIMIT)
    }
}

impl Selection {
    /// A selection keeping at most `keep_limit` values at once (tests make it small to
    /// split more often).
    pub fn with_keep_limit(keep_limit: usize) -> Selection {
        Selection {
            count: 0,
            total: 0,
            digest: None,
            seen: 0,
            passes: 0,
            keep_limit: keep_limit.max(1),
            buckets: Vec::new(),
            cells: Vec::new(),
            before: Vec::new(),
            pending: Vec::new(),
            misses: RefCell::new(Vec::new()),
            resolved: false,
        }
    }

    /// [`Selection::with_keep_limit`], also taking the values' digest
    /// ([`Selection::digest`]).
    pub fn digesting(keep_limit: usize) -> Selection {
        Selection {
            digest: Some(0),
            ..Selection::with_keep_limit(keep_limit)
        }
    }

    /// The values' [`value_digest`]s summed, when made [`Selection::digesting`].
    pub fn digest(&self) -> Option<u64> {
        self.digest
    }

    /// Whether the statistics asked of it last are exact.
    pub fn is_resolved(&self) -> bool {
        self.resolved
    }

    /// Passes ended so far.
    pub fn passes(&self) -> u32 {
        self.passes
    }

    /// One value of the current pass.
    #[inline]
    pub fn add(&mut self, v: i64) {
        self.seen += 1;
        if self.passes == 0 {
            if self.buckets.is_empty() {
                self.buckets = vec![Cell::empty(); BUCKETS];
            }
            self.buckets[bucket_of(v)].add(v);
            self.count += 1;
            self.total += v as i128;
            if let Some(d) = &mut self.digest {
                *d = d.wrapping_add(value_digest(v));
            }
            return;
        }
        if self.pending.is_empty() {
            return;
        }
        // The pending cell holding v, if any.
        let cells = &self.cells;
        let at = self.pending.partition_point(|(c, _)| cells[*c].max < v);
        let Some((c, detail)) = self.pending.get_mut(at) else {
            return;
        };
        let min = cells[*c].min;
        if v < min {
            return;
        }
        match detail {
            Detail::Keep(values) => values.push(v),
            Detail::Split { width, parts } => {
                let part = ((v as i128 - min as i128) as u128 / *width as u128) as usize;
                parts[part].add(v);
            }
        }
    }

    /// An empty part of the current pass, to take some of its values elsewhere (another
    /// thread), added back by [`Selection::absorb`] before the pass ends: a pass's values
    /// may be shared among parts in any way, the counts, sums and kept values are the same.
    /// It holds only the cells the pass collects, not those known already.
    pub fn part(&self) -> Selection {
        let cells: Vec<Cell> = (self.pending.iter())
            .map(|&(c, _)| Cell {
                min: self.cells[c].min,
                max: self.cells[c].max,
                ..Cell::empty()
            })
            .collect();
        let pending = (self.pending.iter().enumerate())
            .map(|(i, (_, detail))| (i, detail.empty_like()))
            .collect();
        Selection {
            digest: self.digest.map(|_| 0),
            passes: self.passes,
            cells,
            pending,
            resolved: self.resolved,
            ..Selection::with_keep_limit(self.keep_limit)
        }
    }

    /// Adds the values a [`Selection::part`] of this pass took.
    pub fn absorb(&mut self, part: Selection) {
        self.seen += part.seen;
        if self.passes == 0 {
            self.count += part.count;
            self.total += part.total;
            if let (Some(d), Some(theirs)) = (&mut self.digest, part.digest) {
                *d = d.wrapping_add(theirs);
            }
            match self.buckets.is_empty() {
                true => self.buckets = part.buckets,
                false => {
                    for (m, t) in self.buckets.iter_mut().zip(&part.buckets) {
                        m.absorb(t);
                    }
                }
            }
            return;
        }
        for ((_, mine), (_, theirs)) in self.pending.iter_mut().zip(part.pending) {
            mine.absorb(theirs);
        }
    }

    /// Ends a pass: true when `stats` (the statistics to be asked of the selection) can be
    /// answered exactly from what is known, else another pass is needed. An error when this
    /// pass did not see the values the first did (the run changed between reads).
    pub fn end_pass(&mut self, stats: &dyn Fn(&dyn Ranked)) -> anyhow::Result<bool> {
        let seen = std::mem::take(&mut self.seen);
        if self.passes > 0 && seen != self.count {
            anyhow::bail!(
                "the run changed while it was read ({seen} values in one read, {} in the \
                 first): analyse it again once nothing writes it",
                self.count
            );
        }
        if self.passes == 0 {
            let buckets = std::mem::take(&mut self.buckets);
            self.cells = buckets.into_iter().filter(|b| b.count > 0).collect();
        } else {
            self.take_pending();
        }
        self.passes += 1;
        self.index();
        self.misses.borrow_mut().clear();
        stats(&*self);
        let mut misses = std::mem::take(&mut *self.misses.borrow_mut());
        misses.sort_unstable();
        misses.dedup();
        self.resolved = misses.is_empty();
        self.plan(misses);
        Ok(self.resolved)
    }

    /// The cells of the pass that ended, in place of those they detail.
    fn take_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if pending.is_empty() {
            return;
        }
        let mut details = pending.into_iter().peekable();
        let mut cells = Vec::with_capacity(self.cells.len());
        for (c, cell) in std::mem::take(&mut self.cells).into_iter().enumerate() {
            match details.next_if(|(at, _)| *at == c) {
                None => cells.push(cell),
                Some((_, Detail::Keep(mut values))) => {
                    values.sort_unstable();
                    cells.push(Cell {
                        kept: Some(values),
                        ..cell
                    });
                }
                Some((_, Detail::Split { parts, .. })) => {
                    cells.extend(parts.into_iter().filter(|p| p.count > 0));
                }
            }
        }
        self.cells = cells;
    }

    fn index(&mut self) {
        self.before.clear();
        let mut n = 0;
        for cell in &self.cells {
            self.before.push(n);
            n += cell.count;
        }
    }

    /// What the next pass collects for the cells asked about: their values while they fit
    /// the limit (smallest cells first), finer buckets for the rest.
    fn plan(&mut self, mut misses: Vec<usize>) {
        misses.sort_by_key(|&c| self.cells[c].count);
        let mut kept = 0usize;
        let mut pending: Vec<(usize, Detail)> = Vec::with_capacity(misses.len());
        for c in misses {
            let cell = &self.cells[c];
            let n = cell.count as usize;
            if kept + n <= self.keep_limit {
                kept += n;
                pending.push((c, Detail::Keep(Vec::with_capacity(n))));
                continue;
            }
            let span = (cell.max as i128 - cell.min as i128 + 1) as u128;
            let width = span.div_ceil(SPLIT_PARTS as u128) as u64;
            let parts = span.div_ceil(width as u128) as usize;
            pending.push((
                c,
                Detail::Split {
                    width,
                    parts: vec![Cell::empty(); parts],
                },
            ));
        }
        pending.sort_unstable_by_key(|(c, _)| *c);
        self.pending = pending;
    }

    /// The cell holding rank `rank`, and the values before it.
    fn cell_of(&self, rank: usize) -> (usize, u64) {
        let c = self.before.partition_point(|&b| b <= rank as u64) - 1;
        (c, self.before[c])
    }

    fn miss(&self, c: usize) {
        self.misses.borrow_mut().push(c);
    }
}

impl Ranked for Selection {
    fn count(&self) -> usize {
        self.count as usize
    }

    fn at(&self, rank: usize) -> i64 {
        let (c, before) = self.cell_of(rank);
        let cell = &self.cells[c];
        // A cell's least and greatest values are known exactly.
        if cell.uniform() || rank as u64 == before {
            return cell.min;
        }
        if rank as u64 == before + cell.count - 1 {
            return cell.max;
        }
        match &cell.kept {
            Some(values) => values[(rank as u64 - before) as usize],
            None => {
                self.miss(c);
                cell.min
            }
        }
    }

    fn total(&self) -> i128 {
        self.total
    }

    fn at_least(&self, threshold: f64) -> (usize, i128) {
        let (mut count, mut sum) = (0usize, 0i128);
        for (c, cell) in self.cells.iter().enumerate() {
            if cell.min as f64 >= threshold {
                count += cell.count as usize;
                sum += cell.sum;
            } else if cell.max as f64 >= threshold {
                // Across the threshold: only its values tell.
                match &cell.kept {
                    Some(values) => {
                        let tail = &values[values.partition_point(|&v| (v as f64) < threshold)..];
                        count += tail.len();
                        sum += tail.iter().map(|&v| v as i128).sum::<i128>();
                    }
                    None => self.miss(c),
                }
            }
        }
        (count, sum)
    }

    fn reaching_share(&self, denominator: usize) -> Option<i64> {
        let d = denominator as i128;
        let reached = |running: i128| running * d >= self.total;
        let mut running: i128 = 0;
        for (c, cell) in self.cells.iter().enumerate().rev() {
            if cell.min >= 0 {
                // Values not negative: the running sum only grows, so it first reaches the
                // share inside the first cell after which it has.
                if !reached(running + cell.sum) {
                    running += cell.sum;
                    continue;
                }
                if cell.uniform() {
                    return Some(cell.min);
                }
            }
            // Value by value (a negative value can bring the running sum back down).
            if cell.uniform() {
                for _ in 0..cell.count {
                    running += cell.min as i128;
                    if reached(running) {
                        return Some(cell.min);
                    }
                }
                continue;
            }
            let Some(values) = &cell.kept else {
                self.miss(c);
                return Some(cell.max);
            };
            for &v in values.iter().rev() {
                running += v as i128;
                if reached(running) {
                    return Some(v);
                }
            }
        }
        None
    }
}

/// The selection of `values` for `stats`, read as many times as it takes (tests, and
/// values a caller holds anyway).
pub fn select_from(
    values: &[i64],
    keep_limit: usize,
    stats: &dyn Fn(&dyn Ranked),
) -> anyhow::Result<Selection> {
    let mut selection = Selection::with_keep_limit(keep_limit);
    loop {
        for &v in values {
            selection.add(v);
        }
        if selection.end_pass(stats)? {
            return Ok(selection);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::xorshift;
    use crate::analyze::fps::fps_summary_ranked;
    use crate::analyze::stats::sort_ns;
    use crate::analyze::Dist;

    /// Everything the report asks of a set of values.
    fn stats<R: Ranked + ?Sized>(r: &R) -> String {
        format!("{:?} {:?}", Dist::of_ranked(r), fps_summary_ranked(r))
    }

    /// The same statistics from the selection as from the sorted values, at several keep
    /// limits (a small one splits buckets, pass after pass); the passes it took.
    fn same_as_sorted(label: &str, values: &[i64]) -> u32 {
        let mut sorted = values.to_vec();
        sort_ns(&mut sorted);
        let expected = stats(sorted.as_slice());
        let mut most = 0;
        for limit in [1, 7, 100, KEEP_LIMIT] {
            let selection = select_from(values, limit, &|r| {
                stats(r);
            })
            .unwrap();
            assert!(selection.is_resolved());
            assert_eq!(stats(&selection), expected, "{label}, keeping {limit}");
            most = most.max(selection.passes());
        }
        most
    }

    #[test]
    fn adversarial_sets_give_the_sorted_values_statistics() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let all_equal = vec![8_333_333i64; 5000];
        let mut outlier = vec![1000i64; 4999];
        outlier.push(i64::MAX / 4);
        let two_clusters: Vec<i64> = (0..6000)
            .map(|i| match i % 3 {
                0 => 1_000_000 + (next() % 50) as i64,
                _ => 40_000_000 + (next() % 50_000) as i64,
            })
            .collect();
        // Q0.99 of 2000 values has h = 1979.01: ranks 1979 and 1980 straddle two values
        // tied many times over, and the 1% lows' tail starts inside a tie.
        let mut ties = vec![5_000i64; 1980];
        ties.extend(vec![7_000i64; 20]);
        let spread: Vec<i64> = (0..20_000).map(|_| (next() >> 11) as i64).collect();
        let small: Vec<i64> = (0..3000).map(|_| (next() % 300) as i64).collect();
        let mut with_zeros = vec![0i64; 500];
        with_zeros.extend((0..1500).map(|_| (next() % 10_000_000) as i64));
        let negatives: Vec<i64> = (0..2000).map(|_| (next() % 2000) as i64 - 1500).collect();
        let extremes = vec![i64::MIN, -1, 0, 1, i64::MAX, i64::MAX, 3, i64::MIN + 1];
        let sets: [(&str, Vec<i64>); 10] = [
            ("all equal", all_equal),
            ("one huge outlier", outlier),
            ("two clusters", two_clusters),
            ("ties at the rank boundary", ties),
            ("spread over 53 bits", spread),
            ("small integers", small),
            ("zeros and a spread", with_zeros),
            ("negatives", negatives),
            ("extremes", extremes),
            ("one value", vec![42]),
        ];
        for (label, mut values) in sets {
            same_as_sorted(label, &values);
            // Order does not matter.
            values.reverse();
            same_as_sorted(label, &values);
        }
        let none = select_from(&[], 1, &|r| {
            stats(r);
        })
        .unwrap();
        assert_eq!(stats(&none), stats(&[0i64; 0][..]));
    }

    /// Each pass's values dealt among `parts` parts (the main selection takes some too),
    /// in an order that changes from pass to pass.
    fn select_in_parts(values: &[i64], keep_limit: usize, parts: usize) -> Selection {
        let mut selection = Selection::digesting(keep_limit);
        let mut next = xorshift(parts as u64 + 1);
        loop {
            let mut taking: Vec<Selection> = (0..parts).map(|_| selection.part()).collect();
            for &v in values {
                match (next() % (parts as u64 + 1)) as usize {
                    0 => selection.add(v),
                    p => taking[p - 1].add(v),
                }
            }
            for part in taking {
                selection.absorb(part);
            }
            if selection.end_pass(&|r| drop(stats(r))).unwrap() {
                return selection;
            }
        }
    }

    #[test]
    fn values_taken_in_parts_give_what_one_selection_gives() {
        let mut next = xorshift(11);
        let close: Vec<i64> = (0..20_000)
            .map(|_| (1 << 30) + (next() % 4_000_000) as i64)
            .collect();
        let spread: Vec<i64> = (0..20_000).map(|_| (next() >> 11) as i64).collect();
        let mut ties = vec![5_000i64; 1980];
        ties.extend(vec![7_000i64; 20]);
        for (label, values) in [("close", close), ("spread", spread), ("ties", ties)] {
            for limit in [1, 7, 100, KEEP_LIMIT] {
                let whole = select_from(&values, limit, &|r| drop(stats(r))).unwrap();
                let mut digesting = Selection::digesting(limit);
                loop {
                    values.iter().for_each(|&v| digesting.add(v));
                    if digesting.end_pass(&|r| drop(stats(r))).unwrap() {
                        break;
                    }
                }
                for parts in [1, 3] {
                    let in_parts = select_in_parts(&values, limit, parts);
                    assert_eq!(stats(&in_parts), stats(&whole), "{label}, {limit}, {parts}");
                    assert_eq!(in_parts.passes(), whole.passes(), "{label}, {limit}");
                    assert_eq!(in_parts.digest(), digesting.digest(), "{label}");
                }
            }
        }
    }

    #[test]
    fn a_bucket_of_equal_values_needs_no_second_pass_and_a_split_few() {
        assert_eq!(same_as_sorted("equal", &[77; 1000]), 1);
        // Values within one first-pass bucket (1/256 of 2^30 wide): the small limits split
        // it, once or twice, until every rank asked is a single value or kept.
        let mut next = xorshift(7);
        let close: Vec<i64> = (0..10_000)
            .map(|_| (1 << 30) + (next() % 4_000_000) as i64)
            .collect();
        let passes = same_as_sorted("close", &close);
        assert!((2..=5).contains(&passes), "{passes} passes");
    }

    #[test]
    fn a_pass_that_sees_other_values_is_an_error() {
        let mut s = Selection::with_keep_limit(1);
        // One first-pass bucket: its middle ranks need a second pass.
        for v in 100_000..100_005 {
            s.add(v);
        }
        let ask = |r: &dyn Ranked| {
            Dist::of_ranked(r);
        };
        assert!(!s.end_pass(&ask).unwrap());
        s.add(1);
        let e = s.end_pass(&ask).unwrap_err().to_string();
        assert!(e.contains("changed"), "{e}");
    }
}
