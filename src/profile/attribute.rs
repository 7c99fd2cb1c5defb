//! Which stage span was open on the sampled thread at the sampled instant: the innermost
//! one (the latest started of those containing the instant; of two starting together,
//! the shorter), or none. A span holds [start, end): a sample at its end belongs to
//! what comes next.

use std::collections::HashMap;

use super::model::ProfileSample;
use crate::model::{Run, Span};

/// The span a sample fell in: its stage and its frame id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InSpan {
    pub stage: u16,
    pub frame: u64,
}

/// One thread's spans by start, with the latest end among each prefix: walking back from
/// the last span started before an instant can stop as soon as no earlier span reaches it.
struct ThreadSpans {
    starts: Vec<i64>,
    ends: Vec<i64>,
    max_end: Vec<i64>,
    spans: Vec<InSpan>,
}

impl ThreadSpans {
    fn new(mut spans: Vec<&Span>) -> ThreadSpans {
        // Same start: the longer (outer) first, so the inner one is met first walking back.
        spans.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.dur_ns)));
        let mut max_end = Vec::with_capacity(spans.len());
        let mut latest = i64::MIN;
        for s in &spans {
            latest = latest.max(s.end_ns());
            max_end.push(latest);
        }
        ThreadSpans {
            starts: spans.iter().map(|s| s.start_ns).collect(),
            ends: spans.iter().map(|s| s.end_ns()).collect(),
            max_end,
            spans: spans
                .iter()
                .map(|s| InSpan {
                    stage: s.stage,
                    frame: s.frame,
                })
                .collect(),
        }
    }

    fn at(&self, t_ns: i64) -> Option<InSpan> {
        let mut i = self.starts.partition_point(|&s| s <= t_ns);
        while i > 0 {
            i -= 1;
            if self.max_end[i] <= t_ns {
                return None;
            }
            if self.ends[i] > t_ns {
                return Some(self.spans[i]);
            }
        }
        None
    }
}

/// For each sample, the span it fell in (`None`: no stage was open on its thread).
pub fn attribute(run: &Run, samples: &[ProfileSample]) -> Vec<Option<InSpan>> {
    let mut by_thread: HashMap<(u32, u32), Vec<&Span>> = HashMap::new();
    for span in run.spans.iter().filter(|s| s.dur_ns >= 0) {
        if let Some(t) = run.threads.get(span.thread as usize) {
            by_thread.entry((t.pid, t.tid)).or_default().push(span);
        }
    }
    let threads: HashMap<(u32, u32), ThreadSpans> = by_thread
        .into_iter()
        .map(|(k, spans)| (k, ThreadSpans::new(spans)))
        .collect();
    samples
        .iter()
        .map(|s| threads.get(&(s.pid, s.tid))?.at(s.t_ns))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixtures::span;
    use crate::model::ThreadInfo;

    fn sample(tid: u32, t_ns: i64) -> ProfileSample {
        ProfileSample {
            t_ns,
            pid: 1,
            tid,
            cpu: 0,
            stack: None,
        }
    }

    #[test]
    fn each_sample_goes_to_the_innermost_span_open_on_its_thread() {
        let run = Run {
            threads: vec![
                ThreadInfo {
                    pid: 1,
                    tid: 1,
                    name: "main".into(),
                    dropped: 0,
                },
                ThreadInfo {
                    pid: 1,
                    tid: 2,
                    name: "worker".into(),
                    dropped: 0,
                },
            ],
            spans: vec![
                // Thread 1: frame 7's stage 0 from 100 to 200, with stage 1 nested 120..150;
                // a long outer span 0..1000 of frame 9 (stage 2) around everything.
                span(7, 0, 0, 100, 100),
                span(7, 1, 0, 120, 30),
                span(9, 2, 0, 0, 1000),
                // Thread 2: stage 3 at 100..200.
                span(7, 3, 1, 100, 100),
                // Same start as its outer span: the shorter is the inner one.
                span(8, 4, 1, 500, 10),
                span(8, 5, 1, 500, 100),
            ],
            ..Run::default()
        };
        let samples = [
            sample(1, 110),  // stage 0 (inside 2 too)
            sample(1, 130),  // stage 1 (innermost)
            sample(1, 150),  // end of stage 1 excluded: stage 0
            sample(1, 200),  // end of stage 0: outer stage 2
            sample(1, 1000), // end of everything: none
            sample(2, 130),  // other thread: stage 3
            sample(2, 50),   // before anything on thread 2
            sample(3, 130),  // a thread with no spans
            sample(2, 505),  // shorter of two starting together
            sample(2, 550),  // then the longer one
        ];
        let got: Vec<Option<u16>> = attribute(&run, &samples)
            .iter()
            .map(|a| a.map(|a| a.stage))
            .collect();
        assert_eq!(
            got,
            [
                Some(0),
                Some(1),
                Some(0),
                Some(2),
                None,
                Some(3),
                None,
                None,
                Some(4),
                Some(5)
            ]
        );
        assert_eq!(attribute(&run, &samples)[1].unwrap().frame, 7);
    }
}
