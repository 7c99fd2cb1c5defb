//! `framelab profile A B`: each function's inclusive and self share of the samples in A
//! and in B (the samples of all the runs given for a side pooled), side by side with the
//! change in percentage points, largest change first, with the change's 95% interval; and a
//! differential flame graph.

use std::collections::HashMap;

use serde::Serialize;

use super::summary::{FunctionTable, Z95};
use crate::render::document::{pretty_json, write, Block, Document, Span};
use crate::render::format::PROFILE;
use crate::render::table::{Align, Layout, Table};
use crate::render::{Format, Value};

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DiffRow {
    pub function: String,
    pub module: String,
    pub a_inclusive_pct: f64,
    pub b_inclusive_pct: f64,
    /// B − A, percentage points.
    pub change_pct: f64,
    /// Half the 95% interval of the change, points: from each side's sampling spread
    /// (binomial), or the spread of the share between its runs where that is larger.
    pub change_ci95_pct: f64,
    /// The interval covers no change: sampling alone could give this difference.
    pub within_noise: bool,
    pub a_self_pct: f64,
    pub b_self_pct: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Diff {
    pub a: String,
    pub b: String,
    pub a_samples: u64,
    pub b_samples: u64,
    pub a_runs: usize,
    pub b_runs: usize,
    pub rows: Vec<DiffRow>,
}

/// A function: its name and module.
type Key = (String, String);

/// Pools the tables of one side's runs: samples per function summed over runs, and each
/// run's inclusive counts for the spread between runs.
#[derive(Default)]
pub struct Side {
    pub name: String,
    pub runs: usize,
    pub samples: u64,
    counts: HashMap<Key, (u64, u64)>,
    /// Each run's samples and inclusive samples per function.
    per_run: Vec<(u64, HashMap<Key, u64>)>,
}

impl Side {
    pub fn new(name: &str) -> Side {
        Side {
            name: name.to_owned(),
            ..Side::default()
        }
    }

    pub fn add(&mut self, table: &FunctionTable) {
        self.runs += 1;
        self.samples += table.samples;
        let mut run = HashMap::new();
        for f in &table.functions {
            let key = (f.function.clone(), f.module.clone());
            run.insert(key.clone(), f.inclusive_samples);
            let c = self.counts.entry(key).or_default();
            c.0 += f.inclusive_samples;
            c.1 += f.self_samples;
        }
        self.per_run.push((table.samples, run));
    }

    fn pct(&self, key: &Key) -> (f64, f64) {
        let (incl, selfs) = self.counts.get(key).copied().unwrap_or_default();
        let whole = self.samples.max(1) as f64;
        (incl as f64 * 100.0 / whole, selfs as f64 * 100.0 / whole)
    }

    /// The variance of the inclusive share of `key` (a fraction): binomial over the pooled
    /// samples, or the variance of the mean of the runs' shares where that is larger (runs
    /// differ by more than sampling: other inputs, other scheduling).
    fn share_variance(&self, key: &Key) -> f64 {
        if self.samples == 0 {
            return 0.0;
        }
        let p = self.counts.get(key).map_or(0, |c| c.0) as f64 / self.samples as f64;
        let binomial = p * (1.0 - p) / self.samples as f64;
        let shares: Vec<f64> = (self.per_run.iter())
            .filter(|(n, _)| *n > 0)
            .map(|(n, run)| run.get(key).copied().unwrap_or(0) as f64 / *n as f64)
            .collect();
        if shares.len() < 2 {
            return binomial;
        }
        let k = shares.len() as f64;
        let mean = shares.iter().sum::<f64>() / k;
        let between = shares.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0) / k;
        binomial.max(between)
    }
}

pub fn diff(a: &Side, b: &Side) -> Diff {
    let mut keys: Vec<&Key> = a.counts.keys().chain(b.counts.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .map(|key| {
            let (ai, aself) = a.pct(key);
            let (bi, bself) = b.pct(key);
            let half = 100.0 * Z95 * (a.share_variance(key) + b.share_variance(key)).sqrt();
            DiffRow {
                function: key.0.clone(),
                module: key.1.clone(),
                a_inclusive_pct: ai,
                b_inclusive_pct: bi,
                change_pct: bi - ai,
                change_ci95_pct: half,
                within_noise: (bi - ai).abs() <= half,
                a_self_pct: aself,
                b_self_pct: bself,
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        y.change_pct
            .abs()
            .total_cmp(&x.change_pct.abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    Diff {
        a: a.name.clone(),
        b: b.name.clone(),
        a_samples: a.samples,
        b_samples: b.samples,
        a_runs: a.runs,
        b_runs: b.runs,
        rows,
    }
}

/// The `n` largest changes as a text or Markdown table.
pub fn render(d: &Diff, n: usize, md: bool) -> String {
    let format = if md { Format::Markdown } else { Format::Text };
    // Both formats are the profile's own: the writer cannot refuse them.
    write(&document(d, n), format, &PROFILE).unwrap_or_default()
}

/// The diff as one document for text and Markdown: a title (naming A and B), the legend,
/// the `n` largest changes in the profile's fixed columns, numbers before names.
fn document(d: &Diff, n: usize) -> Document {
    let runs = |n: usize| crate::units::plural(n as u64, "run", "runs");
    let samples = |n: u64| crate::units::plural(n, "sample", "samples");
    let title = format!(
        "profile diff · {} ({}, {}) → {} ({}, {})",
        d.a,
        runs(d.a_runs),
        samples(d.a_samples),
        d.b,
        runs(d.b_runs),
        samples(d.b_samples)
    );
    // The shares first, one space apart, `~` right after a change within the noise.
    let headers = [
        "A incl%",
        "B incl%",
        "change",
        "±95% ",
        "A self%",
        "B self%",
        "function [module]",
    ];
    let mut align = vec![Align::Right; 6];
    align.push(Align::Plain);
    let mut table = Table::new(&headers)
        .with_names(&[], &[6])
        .with_layout(Layout {
            min_widths: vec![9, 10, 9, 9, 9, 9],
            words: vec![6],
            numbers_first: true,
            cut: 100,
            align,
            ..Layout::default()
        });
    for r in d.rows.iter().take(n) {
        table.push(vec![
            Value::percent(r.a_inclusive_pct, 2),
            Value::percent(r.b_inclusive_pct, 2),
            Value::Signed {
                value: r.change_pct,
                decimals: 2,
                suffix: "",
            },
            Value::PlusMinus {
                half: r.change_ci95_pct,
                decimals: 2,
                noise: r.within_noise,
            },
            Value::percent(r.a_self_pct, 2),
            Value::percent(r.b_self_pct, 2),
            Value::Text(format!("{} [{}]", r.function, r.module)),
        ]);
    }
    Document {
        blocks: vec![
            // Names: the writer escapes the title and the functions.
            Block::Heading(vec![Span::name(title)]),
            Block::Detail(format!(
                "inclusive % of each side's samples, largest change first; {NOISE_LEGEND}"
            )),
            Block::Table(table),
        ],
        json: pretty_json(d),
    }
}

const NOISE_LEGEND: &str = "±95%: the change's interval from sampling and from the spread \
     between runs; ~ marks a change inside it (noise)";

/// A differential flame graph: B's stacks, coloured by how each frame's share changed
/// from A (red grew, blue shrank), A normalized to B's sample count.
pub fn flame_graph(a_folded: &str, b_folded: &str, title: &str) -> anyhow::Result<Vec<u8>> {
    let options = inferno::differential::Options {
        normalize: true,
        ..Default::default()
    };
    let mut diffed = Vec::new();
    inferno::differential::from_readers(
        options,
        a_folded.as_bytes(),
        b_folded.as_bytes(),
        &mut diffed,
    )?;
    let diffed = String::from_utf8_lossy(&diffed).into_owned();
    super::render::svg(&diffed, title)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::summary::FunctionRow;

    /// One run's table: `samples` in all, `inclusive` of them in function `f`.
    fn table(samples: u64, inclusive: u64) -> FunctionTable {
        FunctionTable {
            name: "all".into(),
            samples,
            share_pct: 100.0,
            functions: vec![FunctionRow {
                function: "f".into(),
                module: "m".into(),
                self_samples: inclusive,
                inclusive_samples: inclusive,
                self_pct: 0.0,
                inclusive_pct: 0.0,
            }],
        }
    }

    fn side(runs: &[(u64, u64)]) -> Side {
        let mut s = Side::new("x");
        for &(samples, inclusive) in runs {
            s.add(&table(samples, inclusive));
        }
        s
    }

    #[test]
    fn one_run_a_side_is_judged_by_its_sampling_spread() {
        // 30 of 100 → 50 of 100: ±1.96·√(.3·.7/100 + .5·.5/100) = ±13.29 points.
        let d = diff(&side(&[(100, 30)]), &side(&[(100, 50)]));
        let r = &d.rows[0];
        assert!((r.change_pct - 20.0).abs() < 1e-9);
        assert!(
            (r.change_ci95_pct - 13.293).abs() < 1e-3,
            "{}",
            r.change_ci95_pct
        );
        assert!(!r.within_noise);
        // 30 of 100 → 35 of 100 is inside it.
        let d = diff(&side(&[(100, 30)]), &side(&[(100, 35)]));
        assert!(d.rows[0].within_noise);
    }

    #[test]
    fn a_tables_shares_are_given_their_widest_sampling_spread() {
        // 100 samples: a 50% share is ±1.96·√(0.25/100) = ±9.8 points; 2500: ±1.96.
        assert!((crate::profile::summary::share_ci95_pct(100) - 9.80).abs() < 0.01);
        assert!((crate::profile::summary::share_ci95_pct(2500) - 1.96).abs() < 0.01);
        assert_eq!(crate::profile::summary::share_ci95_pct(0), 0.0);
    }

    #[test]
    fn runs_that_disagree_widen_the_interval() {
        // Runs of 20% and 40% (1000 samples each): the mean's variance 0.02 / 2 = 0.01 is
        // far above the binomial 0.3·0.7/2000; against a steady 30%: ±1.96·√(0.01 +
        // 0.3·0.7/2000) = ±19.70 points, so a change of 0 and even of 15 points is noise.
        let steady = side(&[(1000, 300), (1000, 300)]);
        let d = diff(&steady, &side(&[(1000, 200), (1000, 400)]));
        let r = &d.rows[0];
        assert!(
            (r.change_ci95_pct - 19.70).abs() < 0.01,
            "{}",
            r.change_ci95_pct
        );
        assert!(r.within_noise);
        let d = diff(&steady, &side(&[(1000, 350), (1000, 550)]));
        assert!(d.rows[0].within_noise, "{:?}", d.rows[0]);
    }

    /// A share that fell is signed with a true minus, as `compare`'s tables sign theirs;
    /// the change and its interval are typed cells, not words.
    #[test]
    fn a_fall_is_signed_with_a_true_minus() {
        let d = diff(&side(&[(100, 50)]), &side(&[(100, 30)]));
        let text = render(&d, 10, false);
        assert!(
            text.lines().nth(4).unwrap().contains("  −20.00  ±13.29 "),
            "{text}"
        );
        let table = match &document(&d, 10).blocks[2] {
            Block::Table(table) => table.clone(),
            _ => panic!("the third block is the table"),
        };
        assert!(matches!(table.rows[0][2], Value::Signed { .. }));
        assert!(matches!(table.rows[0][3], Value::PlusMinus { .. }));
    }

    /// A change within the noise: `~` right after its interval, the columns still in line.
    #[test]
    fn a_change_in_the_noise_is_marked_in_line() {
        let d = diff(&side(&[(100, 30)]), &side(&[(100, 35)]));
        let text = render(&d, 10, false);
        let lines: Vec<&str> = text.lines().collect();
        let (header, row) = (lines[3], lines[4]);
        assert_eq!(
            header,
            "    A incl%   B incl%   change    ±95%   A self%  B self%  function [module]"
        );
        assert_eq!(
            row,
            "     30.00%    35.00%    +5.00  ±12.96~   30.00%   35.00%  f [m]"
        );
    }

    /// The diff's text and Markdown against `tests/snapshots/profile_diff.*`.
    #[test]
    fn the_diff_in_text_and_markdown() {
        let mut a = side(&[(100, 30), (100, 34)]);
        a.name = "before_fix".into();
        let mut b = side(&[(100, 50)]);
        b.name = "after".into();
        let d = diff(&a, &b);
        let (text, md) = (render(&d, 10, false), render(&d, 10, true));
        crate::snapshot::check("profile_diff.txt", &text);
        crate::snapshot::check("profile_diff.md", &md);
        // One document: the same figures in both.
        assert_eq!(
            crate::render::numbers_in(&text),
            crate::render::numbers_in(&md),
            "{text}\n{md}"
        );
    }
}
