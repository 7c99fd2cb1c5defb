//! Spans read on another thread a few chunks ahead of whoever takes them: the reading
//! (SQLite's pages, the blocks decoded) and the work on the spans overlap rather than take
//! turns (issue 29: the export's and whatif's time on a host with cores to spare). Where no
//! thread can be started, the caller reads them itself.

use std::sync::mpsc;

use crate::model::{CounterValue, Span, SpanSource};

/// Spans a reader sends at once.
const CHUNK: usize = 8192;
/// Chunks a reader may have sent ahead of the one being taken.
pub const AHEAD: usize = 2;

/// Chunks of spans as a reader sends them (a failure of the reading in their place).
pub type Chunks = mpsc::Receiver<anyhow::Result<Vec<Span>>>;

/// A merge's place in one reader's spans ([`send_spans`]): the chunk being read, each
/// used chunk handed back for the reader to fill again.
pub struct Cursor {
    chunks: Chunks,
    returned: mpsc::Sender<Vec<Span>>,
    chunk: Vec<Span>,
    next: usize,
}

impl Cursor {
    pub fn new(chunks: Chunks, returned: mpsc::Sender<Vec<Span>>) -> Self {
        Cursor {
            chunks,
            returned,
            chunk: Vec::new(),
            next: 0,
        }
    }

    /// The reader's next span, `None` once it sent its last chunk.
    pub fn next_span(&mut self) -> anyhow::Result<Option<Span>> {
        while self.next == self.chunk.len() {
            let used = std::mem::take(&mut self.chunk);
            let _ = self.returned.send(used);
            self.next = 0;
            match self.chunks.recv() {
                Ok(chunk) => self.chunk = chunk?,
                // The reader sent its last chunk.
                Err(_) => return Ok(None),
            }
        }
        self.next += 1;
        Ok(Some(self.chunk[self.next - 1]))
    }
}

/// `source.for_each_spans(sink)`, read ahead on another thread.
pub fn for_each_read_ahead(
    source: &(dyn SpanSource + Sync),
    sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel(AHEAD);
        let (back_tx, back_rx) = mpsc::channel::<Vec<Span>>();
        let Ok(reader) = std::thread::Builder::new().spawn_scoped(scope, move || {
            send_spans(source, (0, u64::MAX), full_tx, back_rx)
        }) else {
            return source.for_each_spans(sink);
        };
        let mut outcome = Ok(());
        for chunk in &full_rx {
            match chunk.and_then(|chunk| sink(&chunk).map(|()| chunk)) {
                Ok(chunk) => drop(back_tx.send(chunk)),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        // The reader stops at its next chunk.
        drop(full_rx);
        match (reader.join(), outcome) {
            (Err(_), Ok(())) => anyhow::bail!("reading the spans failed in a worker thread"),
            (_, outcome) => outcome,
        }
    })
}

/// A source whose spans are read ahead ([`for_each_read_ahead`]).
pub struct ReadAhead<'a>(pub &'a (dyn SpanSource + Sync));

impl SpanSource for ReadAhead<'_> {
    fn span_count_hint(&self) -> usize {
        self.0.span_count_hint()
    }

    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        for_each_read_ahead(self.0, sink)
    }

    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.0.for_each_counters(sink)
    }
}

/// A reader that has read all it was asked for: not a failure.
#[derive(Debug)]
struct ReadAll;

impl std::fmt::Display for ReadAll {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the spans asked for were read")
    }
}

impl std::error::Error for ReadAll {}

/// Sends the spans at places `from..to` of `source` (the first is place 0) to `full` in
/// chunks, reusing those that come back on `back`; stops early once past `to`, or when
/// nobody takes them any more. A failure of the reading is sent in their place.
pub fn send_spans(
    source: &dyn SpanSource,
    (from, to): (u64, u64),
    full: mpsc::SyncSender<anyhow::Result<Vec<Span>>>,
    back: mpsc::Receiver<Vec<Span>>,
) {
    let mut at = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK);
    let read = source.for_each_spans(&mut |spans| {
        let (start, end) = (at, at + spans.len() as u64);
        at = end;
        if end <= from {
            return Ok(());
        }
        let lo = from.saturating_sub(start) as usize;
        let hi = (to.min(end) - start) as usize;
        for s in &spans[lo..hi.max(lo)] {
            chunk.push(*s);
            if chunk.len() == CHUNK {
                let next = match back.try_recv() {
                    Ok(mut used) => {
                        used.clear();
                        used
                    }
                    Err(_) => Vec::with_capacity(CHUNK),
                };
                full.send(Ok(std::mem::replace(&mut chunk, next)))
                    .map_err(|_| anyhow::Error::new(ReadAll))?;
            }
        }
        if end >= to {
            return Err(anyhow::Error::new(ReadAll));
        }
        Ok(())
    });
    let _ = match read {
        Err(e) if !e.is::<ReadAll>() => full.send(Err(e)),
        _ if chunk.is_empty() => Ok(()),
        _ => full.send(Ok(chunk)),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Run;

    fn run(spans: u64) -> Run {
        Run {
            spans: (0..spans)
                .map(|i| Span {
                    frame: i,
                    stage: 0,
                    thread: 0,
                    start_ns: i as i64,
                    dur_ns: 1,
                })
                .collect(),
            ..Run::default()
        }
    }

    #[test]
    fn spans_read_ahead_arrive_whole_and_in_order_and_a_failing_sink_stops_them() {
        let run = run(50_000);
        let mut read = Vec::new();
        for_each_read_ahead(&run, &mut |chunk| {
            read.extend_from_slice(chunk);
            Ok(())
        })
        .unwrap();
        assert_eq!(read, run.spans);
        let mut chunks = 0;
        let err = ReadAhead(&run)
            .for_each_spans(&mut |_| {
                chunks += 1;
                anyhow::ensure!(chunks < 2, "enough");
                Ok(())
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "enough");
    }

    #[test]
    fn a_stretch_of_places_is_sent_and_the_reading_stops_past_it() {
        let run = run(50_000);
        for (from, to) in [
            (0, 0),
            (0, 1),
            (8_191, 8_193),
            (20_000, 50_000),
            (49_999, 60_000),
        ] {
            let (full_tx, full_rx) = mpsc::sync_channel(64);
            let (_back_tx, back_rx) = mpsc::channel();
            send_spans(&run, (from, to), full_tx, back_rx);
            let sent: Vec<Span> = full_rx.iter().flat_map(|c| c.unwrap()).collect();
            let to = to.min(50_000) as usize;
            assert_eq!(sent, run.spans[from as usize..to], "{from}..{to}");
        }
    }
}
