//! Where sources put what they read: series registered once, values pushed per tick,
//! problems counted. The sampler hands the accumulated batch to the run file writer.

use crate::model::{Sample, SampleSeries, SeriesKind};

/// What a source needs to know about the current reading.
#[derive(Clone, Copy, Debug)]
pub struct Tick<'a> {
    /// ns after launch.
    pub t_ns: i64,
    /// The command's processes (and watched ones), for per-process sources.
    pub pids: &'a [u32],
    /// The last reading of the run: read everything, even what is read rarely.
    pub closing: bool,
    /// The measured window has closed: the command is being stopped.
    pub window_closed: bool,
    /// The reading taken as the measured window opens: look for new threads now.
    pub opening: bool,
    /// The reading taken as the measured window closes: read every counter, even one read
    /// rarely, so the window's totals end at its edge.
    pub closes_window: bool,
    /// CLOCK_MONOTONIC at launch, to place what /proc dates since boot.
    pub origin_mono_ns: i64,
}

/// New series and samples since the last batch; series come before the samples using them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    pub series: Vec<(u32, SampleSeries)>,
    pub samples: Vec<Sample>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.samples.is_empty()
    }
}

/// Per source: readings skipped and the first reason, for the one-line status.
#[derive(Clone, Debug, Default)]
pub struct Problems {
    pub skipped: u64,
    pub first: Option<String>,
}

pub struct Readings {
    source: usize,
    t_ns: i64,
    /// The last reading of the run: counters are written even when unchanged.
    closing: bool,
    names: Vec<&'static str>,
    series: Vec<SampleSeries>,
    /// Per series, the value last written (counters are written only when they change).
    written: Vec<Option<i64>>,
    /// Per series, a counter's value read but not written since it did not change.
    pending: Vec<Option<(i64, i64)>>,
    batch: Batch,
    problems: Vec<Problems>,
}

impl Readings {
    /// `names`: the source names, indexed as `begin`'s `source`.
    pub fn new(names: Vec<&'static str>) -> Readings {
        let problems = vec![Problems::default(); names.len()];
        Readings {
            source: 0,
            t_ns: 0,
            closing: false,
            names,
            series: Vec::new(),
            written: Vec::new(),
            pending: Vec::new(),
            batch: Batch::default(),
            problems,
        }
    }

    /// Starts a reading of source `source` at `t_ns`.
    pub fn begin(&mut self, source: usize, t_ns: i64, closing: bool) {
        self.source = source;
        self.t_ns = t_ns;
        self.closing = closing;
    }

    /// Registers a series of the current source and returns its id; sources keep the id.
    pub fn series(
        &mut self,
        metric: &str,
        entity: impl Into<String>,
        label: impl Into<String>,
        unit: &str,
        kind: SeriesKind,
    ) -> u32 {
        let id = self.series.len() as u32;
        let series = SampleSeries {
            source: self.names.get(self.source).copied().unwrap_or("?").into(),
            metric: metric.into(),
            entity: entity.into(),
            label: label.into(),
            unit: unit.into(),
            kind,
        };
        self.series.push(series.clone());
        self.written.push(None);
        self.pending.push(None);
        self.batch.series.push((id, series));
        id
    }

    /// Records `value` of `series` now. A counter that did not change since it was last
    /// written is held back; it is written when it changes (with its last unchanged
    /// reading before it, so a rate starts at the right moment) or at the closing read.
    pub fn push(&mut self, series: u32, value: i64) {
        let index = series as usize;
        let Some(def) = self.series.get(index) else {
            return;
        };
        if def.kind == SeriesKind::Counter {
            if self.written[index] == Some(value) && !self.closing {
                self.pending[index] = Some((self.t_ns, value));
                return;
            }
            if let Some((t_ns, held)) = self.pending[index].take() {
                if held != value {
                    self.batch.samples.push(Sample {
                        series,
                        t_ns,
                        value: held,
                    });
                }
            }
            self.written[index] = Some(value);
        }
        self.batch.samples.push(Sample {
            series,
            t_ns: self.t_ns,
            value,
        });
    }

    /// Records `value` of `series` as of `t_ns`, an instant after the series' last reading
    /// and up to now: what was learnt late (a thread's totals at its exit, from its record).
    pub fn push_at(&mut self, series: u32, t_ns: i64, value: i64) {
        let now_ns = std::mem::replace(&mut self.t_ns, t_ns);
        self.push(series, value);
        self.t_ns = now_ns;
    }

    /// A counter that started from 0 at `t_ns`, before its first reading (a thread born
    /// after the launch): its value before the first reading is then known.
    pub fn born(&mut self, series: u32, t_ns: i64) {
        let index = series as usize;
        if self.written.get(index) != Some(&None) {
            return;
        }
        self.written[index] = Some(0);
        self.batch.samples.push(Sample {
            series,
            t_ns,
            value: 0,
        });
    }

    /// A value of the current source that could not be read: counted, the first reason kept.
    pub fn skip(&mut self, problem: impl FnOnce() -> String) {
        if let Some(p) = self.problems.get_mut(self.source) {
            p.skipped += 1;
            if p.first.is_none() {
                p.first = Some(problem());
            }
        }
    }

    pub fn problems(&self, source: usize) -> Problems {
        self.problems.get(source).cloned().unwrap_or_default()
    }

    /// Samples waiting for the writer.
    pub fn pending_samples(&self) -> usize {
        self.batch.samples.len()
    }

    pub fn take_batch(&mut self) -> Batch {
        std::mem::take(&mut self.batch)
    }

    /// Every series registered so far.
    pub fn all_series(&self) -> &[SampleSeries] {
        &self.series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_written_when_they_change_and_at_the_close() {
        let mut r = Readings::new(vec!["threads"]);
        r.begin(0, 0, false);
        let cpu = r.series("cpu_time", "1/1", "main", "ns", SeriesKind::Counter);
        let freq = r.series("freq", "0", "cpu0", "kHz", SeriesKind::Gauge);
        for (t, v) in [(0, 10), (10, 10), (20, 10), (30, 50), (40, 50), (50, 50)] {
            r.begin(0, t, t == 50);
            r.push(cpu, v);
            r.push(freq, 7);
        }
        let batch = r.take_batch();
        assert_eq!(batch.series.len(), 2);
        assert_eq!(batch.series[0].1.source, "threads");
        let cpu_samples: Vec<(i64, i64)> = batch
            .samples
            .iter()
            .filter(|s| s.series == cpu)
            .map(|s| (s.t_ns, s.value))
            .collect();
        // 10 at 0, held until 20 (written with the change at 30), 50 at 30, and the close.
        assert_eq!(cpu_samples, vec![(0, 10), (20, 10), (30, 50), (50, 50)]);
        // Gauges: every reading.
        assert_eq!(batch.samples.iter().filter(|s| s.series == freq).count(), 6);
    }

    #[test]
    fn skips_are_counted_per_source_with_the_first_reason() {
        let mut r = Readings::new(vec!["a", "b"]);
        r.begin(1, 0, false);
        r.skip(|| "first".into());
        r.skip(|| "second".into());
        assert_eq!(r.problems(0).skipped, 0);
        assert_eq!(r.problems(1).skipped, 2);
        assert_eq!(r.problems(1).first.as_deref(), Some("first"));
    }
}
