//! The spans of columns already read, handed out again as spans: the HTML report reads a
//! run's spans once (with starts and threads, for its plots) and the analysis reads them
//! from here, not from the file a second time (a second pass over 10M spans in SQLite is
//! a second or more).

use crate::analyze::compact::columns::SpanColumns;
use crate::analyze::compact::table::FrameTable;
use crate::analyze::frames::NO_FRAME;
use crate::model::{CounterValue, Span, SpanSource};

/// Spans from `columns` (kept with starts and threads) in their order; counter values
/// from `counters`, as they are.
pub struct Replay<'a> {
    pub columns: &'a SpanColumns,
    pub table: &'a FrameTable,
    pub counters: &'a dyn SpanSource,
}

const CHUNK: usize = 8192;

impl SpanSource for Replay<'_> {
    fn span_count_hint(&self) -> usize {
        self.columns.len()
    }

    fn for_each_spans(
        &self,
        sink: &mut dyn FnMut(&[Span]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let c = self.columns;
        let (Some(starts), Some(threads)) = (&c.start, &c.thread) else {
            anyhow::bail!("internal: replayed columns need their starts and threads");
        };
        let mut chunk = Vec::with_capacity(CHUNK.min(c.len()));
        for (row, (&frame, &thread)) in c.frame.iter().zip(threads).enumerate() {
            chunk.push(Span {
                // A span of no frame has a negative duration: its id is never read.
                frame: if frame == NO_FRAME {
                    0
                } else {
                    self.table.id(frame)
                },
                stage: c.stage[row],
                thread,
                start_ns: starts.get(row),
                dur_ns: c.dur.get(row),
            });
            if chunk.len() == CHUNK {
                sink(&chunk)?;
                chunk.clear();
            }
        }
        if !chunk.is_empty() {
            sink(&chunk)?;
        }
        Ok(())
    }

    fn for_each_counters(
        &self,
        sink: &mut dyn FnMut(&[CounterValue]) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        self.counters.for_each_counters(sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::compact::analyze_from;
    use crate::analyze::compact::columns::{columns_of, Keep};
    use crate::analyze::fixtures::{crashed_run, degenerate_runs, reference_run};

    #[test]
    fn the_analysis_of_a_replay_is_the_analysis_of_the_run() {
        let mut runs = vec![reference_run(), crashed_run()];
        runs.extend(degenerate_runs());
        for run in runs {
            let keep = Keep {
                start: true,
                thread: true,
            };
            let (columns, table) = columns_of(&run.spans, keep);
            let replay = Replay {
                columns: &columns,
                table: &table,
                counters: &run,
            };
            let direct = serde_json::to_string(&analyze_from(&run, &run).unwrap()).unwrap();
            let replayed = serde_json::to_string(&analyze_from(&run, &replay).unwrap()).unwrap();
            assert_eq!(direct, replayed, "{}", run.meta.name);
        }
    }
}
