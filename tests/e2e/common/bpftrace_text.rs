//! bpftrace's text print read again here, independently of framelab's importer, to check
//! what framelab says of it: the buckets of each map, and the values at either end of
//! every bucket (the two extreme data sets the buckets allow).

/// A bucket as printed: `[lo, hi)`, `[n]` (= [n, n+1)), `[lo, ...)` (`hi` None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextBucket {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
    pub count: u64,
}

/// `8K` = 8192, `1M` = 1048576: bpftrace's powers of 1024.
fn number(text: &str) -> Option<i64> {
    let text = text.trim();
    let (digits, power) = match text.chars().last()? {
        'K' => (&text[..text.len() - 1], 1),
        'M' => (&text[..text.len() - 1], 2),
        'G' => (&text[..text.len() - 1], 3),
        'T' => (&text[..text.len() - 1], 4),
        _ => (text, 0),
    };
    Some(digits.parse::<i64>().ok()? * 1024i64.pow(power))
}

/// Every histogram of the print, by the name on its `@name:` line, with its buckets.
pub fn maps(text: &str) -> Vec<(String, Vec<TextBucket>)> {
    let mut out: Vec<(String, Vec<TextBucket>)> = Vec::new();
    let mut current: Option<(String, Vec<TextBucket>)> = None;
    for line in text.lines() {
        if line.starts_with('@') && line.trim_end().ends_with(':') {
            out.extend(current.take().filter(|(_, b)| !b.is_empty()));
            let name = line.trim_end().trim_end_matches(':').to_owned();
            current = Some((name, Vec::new()));
            continue;
        }
        let Some((_, buckets)) = current.as_mut() else {
            continue;
        };
        let Some((head, _bar)) = line.split_once('|') else {
            out.extend(current.take().filter(|(_, b)| !b.is_empty()));
            continue;
        };
        let close = head.rfind([')', ']']).unwrap();
        let (range, count) = (&head[1..close], head[close + 1..].trim());
        let count: u64 = count.parse().unwrap();
        let bucket = match range.split_once(", ") {
            None => {
                let n = number(range).unwrap();
                TextBucket {
                    lo: Some(n),
                    hi: Some(n + 1),
                    count,
                }
            }
            Some((lo, hi)) => TextBucket {
                lo: number(lo),
                hi: number(hi),
                count,
            },
        };
        buckets.push(bucket);
    }
    out.extend(current.filter(|(_, b)| !b.is_empty()));
    out
}

/// The buckets of `name` in the print.
pub fn buckets_of(text: &str, name: &str) -> Vec<TextBucket> {
    maps(text)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no map {name} in the print"))
        .1
}

/// The values the buckets hold, each at its bucket's lowest value (`low`) or highest
/// (`hi - 1`), sorted. Buckets open on a side are left out by the caller's choice of map.
pub fn extreme_values(buckets: &[TextBucket], low: bool) -> Vec<i64> {
    let mut values = Vec::new();
    for b in buckets {
        let v = if low {
            b.lo.expect("a closed bucket")
        } else {
            b.hi.expect("a closed bucket") - 1
        };
        values.extend(std::iter::repeat_n(v, b.count as usize));
    }
    values.sort_unstable();
    values
}

/// The percentile of sorted values by linear interpolation at h = p·(N−1).
pub fn type7(sorted: &[i64], p: f64) -> f64 {
    let h = p * (sorted.len() - 1) as f64;
    let (k, frac) = (h.floor() as usize, h - h.floor());
    let next = sorted.get(k + 1).copied().unwrap_or(sorted[k]);
    sorted[k] as f64 + frac * (next - sorted[k]) as f64
}
