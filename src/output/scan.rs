//! Matching the lines of one stream as they go by. A line ends at `\n` or `\r` (progress
//! lines that redraw themselves, like ffmpeg's `frame=… fps=…\r`, are lines too). Only
//! the lines a metric may need are kept: the first matching line, or the latest one.

use super::spec::{MetricSpec, Pick};

/// A line longer than this is matched in pieces of this size (counted in `split_lines`).
pub const MAX_LINE: usize = 64 * 1024;

/// Where a line was seen, to order lines of two streams: (ns when its chunk was read,
/// line number in its stream).
pub type Order = (i64, u64);

/// A matching line and where it was.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hit {
    pub order: Order,
    pub line: Vec<u8>,
}

/// What one metric saw in one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub first: Option<Hit>,
    pub last: Option<Hit>,
    /// A line matched the metric's `after=` regex: the lines after it count.
    pub after_seen: bool,
}

struct Rule {
    metric: usize,
    regex: regex::bytes::Regex,
    pick: Pick,
    /// `after=`: no line counts until one matches this.
    after: Option<regex::bytes::Regex>,
}

/// Scans one stream for the metrics that read it.
pub struct Scanner {
    rules: Vec<Rule>,
    partial: Vec<u8>,
    /// Indexed like the metrics given to `new`.
    pub seen: Vec<Seen>,
    pub lines: u64,
    /// Lines longer than `MAX_LINE`, matched in pieces.
    pub split_lines: u64,
}

impl Scanner {
    /// A scanner for the metrics of `metrics` that read stdout (`stdout`) or stderr.
    pub fn new(metrics: &[MetricSpec], stdout: bool) -> Scanner {
        let rules = metrics
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                let (out, err) = m.streams();
                if stdout {
                    out
                } else {
                    err
                }
            })
            .filter_map(|(metric, m)| {
                let pick = match &m.source {
                    super::MetricSource::Output { pick, .. } => *pick,
                    super::MetricSource::Json { .. } => return None,
                };
                Some(Rule {
                    metric,
                    regex: m.regex()?,
                    pick,
                    after: m.after(),
                })
            })
            .collect();
        Scanner {
            rules,
            partial: Vec::new(),
            seen: vec![Seen::default(); metrics.len()],
            lines: 0,
            split_lines: 0,
        }
    }

    /// Whether any metric reads this stream (no scanning at all otherwise).
    pub fn is_needed(&self) -> bool {
        !self.rules.is_empty()
    }

    /// Scans the complete lines of `chunk`, keeping an unfinished last line for later.
    pub fn feed(&mut self, chunk: &[u8], read_ns: i64) {
        if self.rules.is_empty() {
            return;
        }
        let (Some(first_end), Some(last_end)) = (
            memchr::memchr2(b'\n', b'\r', chunk),
            memchr::memrchr2(b'\n', b'\r', chunk),
        ) else {
            self.partial.extend_from_slice(chunk);
            self.split_long_partial(read_ns);
            return;
        };
        // The line the previous chunk left unfinished ends here.
        let mut head = std::mem::take(&mut self.partial);
        head.extend_from_slice(&chunk[..first_end]);
        self.line(&head, read_ns);
        head.clear();
        self.partial = head;
        // Every line between, each ending with its terminator.
        self.whole_lines(&chunk[first_end + 1..=last_end], read_ns);
        self.partial.extend_from_slice(&chunk[last_end + 1..]);
        self.split_long_partial(read_ns);
    }

    /// Lines of `body` (which ends with a terminator): a `last` rule looks from the end and
    /// stops at the first match (the only one that can matter), a `first` rule from the
    /// start; so a stream of progress lines that all match costs one match per chunk.
    fn whole_lines(&mut self, body: &[u8], read_ns: i64) {
        if body.is_empty() {
            return;
        }
        // Until each `after=` line has gone by, line by line: which lines count depends on
        // where it is.
        if (self.rules.iter()).any(|r| r.after.is_some() && !self.seen[r.metric].after_seen) {
            for line in lines_forward(body) {
                self.line(line, read_ns);
            }
            return;
        }
        let count = memchr::memchr2_iter(b'\n', b'\r', body).count() as u64;
        let first_number = self.lines + 1;
        self.lines += count;
        let (rules, seen) = (&self.rules, &mut self.seen);
        for rule in rules {
            let slot = &mut seen[rule.metric];
            let found = match rule.pick {
                Pick::First if slot.first.is_some() => continue,
                Pick::First => lines_forward(body)
                    .enumerate()
                    .find(|(_, line)| rule.regex.is_match(line)),
                Pick::Last => {
                    lines_backward(body, count).find(|(_, line)| rule.regex.is_match(line))
                }
            };
            let Some((index, line)) = found else {
                continue;
            };
            let hit = match rule.pick {
                Pick::First => &mut slot.first,
                Pick::Last => &mut slot.last,
            }
            .get_or_insert_with(Hit::default);
            hit.order = (read_ns, first_number + index as u64);
            hit.line.clear();
            hit.line.extend_from_slice(line);
        }
    }

    /// An unfinished line longer than `MAX_LINE` is matched in pieces of that size.
    fn split_long_partial(&mut self, read_ns: i64) {
        while self.partial.len() >= MAX_LINE {
            let tail = self.partial.split_off(MAX_LINE);
            let head = std::mem::replace(&mut self.partial, tail);
            self.split_lines += 1;
            self.line(&head, read_ns);
        }
    }

    /// The stream ended: its last line need not end with a newline.
    pub fn finish(&mut self, read_ns: i64) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&line, read_ns);
        }
    }

    fn line(&mut self, line: &[u8], read_ns: i64) {
        self.lines += 1;
        let order = (read_ns, self.lines);
        for rule in &self.rules {
            let seen = &mut self.seen[rule.metric];
            if let Some(after) = rule.after.as_ref().filter(|_| !seen.after_seen) {
                seen.after_seen = after.is_match(line);
                continue;
            }
            if rule.pick == Pick::First && seen.first.is_some() {
                continue;
            }
            if !rule.regex.is_match(line) {
                continue;
            }
            let slot = match rule.pick {
                Pick::First => &mut seen.first,
                Pick::Last => &mut seen.last,
            };
            let hit = slot.get_or_insert_with(Hit::default);
            hit.order = order;
            hit.line.clear();
            hit.line.extend_from_slice(line);
        }
    }
}

/// The lines of `body` (terminators dropped), first to last.
fn lines_forward(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = body;
    std::iter::from_fn(move || {
        let end = memchr::memchr2(b'\n', b'\r', rest)?;
        let line = &rest[..end];
        rest = &rest[end + 1..];
        Some(line)
    })
}

/// The lines of `body` last to first, with their index from the first (`count` lines).
fn lines_backward(body: &[u8], count: u64) -> impl Iterator<Item = (usize, &[u8])> {
    // Without its final terminator, the body's lines are separated by terminators.
    let mut rest = &body[..body.len() - 1];
    let mut index = count as usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        index -= 1;
        match memchr::memrchr2(b'\n', b'\r', rest) {
            Some(at) => {
                let line = &rest[at + 1..];
                rest = &rest[..at];
                Some((index, line))
            }
            None => {
                done = true;
                Some((index, rest))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> MetricSpec {
        MetricSpec::parse(text).unwrap()
    }

    #[test]
    fn lines_end_at_newlines_and_carriage_returns_across_chunks() {
        let metrics = [
            spec(r"enc=fps=\s*([\d.]+)"),
            spec(r"a:first=fps=\s*([\d.]+)"),
        ];
        let mut s = Scanner::new(&metrics, true);
        s.feed(b"frame= 10 fps= 5.0\rframe= 20 fp", 1);
        s.feed(b"s= 7.5\rdone\n", 2);
        s.feed(b"frame= 30 fps= 9.25", 3);
        assert_eq!(s.seen[0].last.as_ref().unwrap().line, b"frame= 20 fps= 7.5");
        s.finish(4);
        assert_eq!(s.lines, 4);
        assert_eq!(
            s.seen[0].last.as_ref().unwrap().line,
            b"frame= 30 fps= 9.25"
        );
        assert_eq!(s.seen[0].last.as_ref().unwrap().order, (4, 4));
        assert_eq!(
            s.seen[1].first.as_ref().unwrap().line,
            b"frame= 10 fps= 5.0"
        );
        assert_eq!(s.seen[1].first.as_ref().unwrap().order, (1, 1));
    }

    #[test]
    fn only_the_streams_a_metric_reads() {
        let metrics = [spec(r"x:stderr=x(\d)"), spec(r"y:stdout=y(\d)")];
        let mut out = Scanner::new(&metrics, true);
        out.feed(b"x1\ny2\n", 0);
        assert!(out.seen[0].last.is_none());
        assert!(out.seen[1].last.is_some());
        let json = [spec("j=json:f.json:$.a")];
        assert!(!Scanner::new(&json, true).is_needed());
    }

    #[test]
    fn lines_found_from_either_end_are_numbered_alike() {
        let body = b"a1\nb2\r\nc3\n";
        let forward: Vec<&[u8]> = lines_forward(body).collect();
        assert_eq!(forward, [&b"a1"[..], b"b2", b"", b"c3"]);
        let backward: Vec<(usize, &[u8])> = lines_backward(body, 4).collect();
        assert_eq!(
            backward,
            [(3, &b"c3"[..]), (2, b""), (1, b"b2"), (0, b"a1")]
        );
        // The numbers a scanner gives hits agree with one line at a time.
        let metrics = [spec(r"v=v(\d)"), spec(r"w:first=v(\d)")];
        let mut s = Scanner::new(&metrics, true);
        s.feed(b"x\nv1\nv2\ny\n", 5);
        assert_eq!(s.lines, 4);
        assert_eq!(s.seen[0].last.as_ref().unwrap().order, (5, 3));
        assert_eq!(s.seen[1].first.as_ref().unwrap().order, (5, 2));
    }

    #[test]
    fn a_very_long_line_is_matched_in_pieces() {
        let metrics = [spec(r"n=n=(\d+)")];
        let mut s = Scanner::new(&metrics, true);
        let mut long = vec![b'a'; MAX_LINE + 10];
        long.extend_from_slice(b" n=42");
        s.feed(&long, 0);
        s.finish(1);
        assert_eq!(s.split_lines, 1);
        assert!(s.seen[0].last.as_ref().unwrap().line.ends_with(b"n=42"));
    }
}
