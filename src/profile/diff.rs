//! `framelab profile A B`: each function's inclusive and self share of the samples in A
//! and in B (the samples of all the runs given for a side pooled), side by side with the
//! change in percentage points, largest change first; and a differential flame graph.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::summary::Table;
use crate::display;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DiffRow {
    pub function: String,
    pub module: String,
    pub a_inclusive_pct: f64,
    pub b_inclusive_pct: f64,
    /// B − A, percentage points.
    pub change_pct: f64,
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

/// Pools the tables of one side's runs: samples per function summed over runs.
#[derive(Default)]
pub struct Side {
    pub name: String,
    pub runs: usize,
    pub samples: u64,
    counts: HashMap<(String, String), (u64, u64)>,
}

impl Side {
    pub fn new(name: &str) -> Side {
        Side {
            name: name.to_owned(),
            ..Side::default()
        }
    }

    pub fn add(&mut self, table: &Table) {
        self.runs += 1;
        self.samples += table.samples;
        for f in &table.functions {
            let c = self
                .counts
                .entry((f.function.clone(), f.module.clone()))
                .or_default();
            c.0 += f.inclusive_samples;
            c.1 += f.self_samples;
        }
    }

    fn pct(&self, key: &(String, String)) -> (f64, f64) {
        let (incl, selfs) = self.counts.get(key).copied().unwrap_or_default();
        let whole = self.samples.max(1) as f64;
        (incl as f64 * 100.0 / whole, selfs as f64 * 100.0 / whole)
    }
}

pub fn diff(a: &Side, b: &Side) -> Diff {
    let mut keys: Vec<&(String, String)> = a.counts.keys().chain(b.counts.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<DiffRow> = keys
        .into_iter()
        .map(|key| {
            let (ai, aself) = a.pct(key);
            let (bi, bself) = b.pct(key);
            DiffRow {
                function: key.0.clone(),
                module: key.1.clone(),
                a_inclusive_pct: ai,
                b_inclusive_pct: bi,
                change_pct: bi - ai,
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
    let mut out = String::new();
    let (a, b) = (display::text(&d.a), display::text(&d.b));
    if md {
        let _ = writeln!(
            out,
            "### profile diff · {} ({} runs, {} samples) → {} ({} runs, {} samples)\n\n\
             | function | {} incl % | {} incl % | change (points) | {} self % | {} self % |\n\
             | --- | ---: | ---: | ---: | ---: | ---: |",
            display::markdown(&d.a),
            d.a_runs,
            d.a_samples,
            display::markdown(&d.b),
            d.b_runs,
            d.b_samples,
            display::markdown(&d.a),
            display::markdown(&d.b),
            display::markdown(&d.a),
            display::markdown(&d.b),
        );
    } else {
        let _ = writeln!(
            out,
            "profile diff · {a} ({} runs, {} samples) → {b} ({} runs, {} samples)\n\
             inclusive % of each side's samples, largest change first\n\n  {:>9} {:>9} {:>8}  {:>8} {:>8}  function [module]",
            d.a_runs, d.a_samples, d.b_runs, d.b_samples, "A incl%", "B incl%", "change", "A self%", "B self%"
        );
    }
    for r in d.rows.iter().take(n) {
        let name = format!("{} [{}]", r.function, r.module);
        if md {
            let _ = writeln!(
                out,
                "| {} | {:.2} | {:.2} | {:+.2} | {:.2} | {:.2} |",
                display::markdown(&name),
                r.a_inclusive_pct,
                r.b_inclusive_pct,
                r.change_pct,
                r.a_self_pct,
                r.b_self_pct
            );
        } else {
            let _ = writeln!(
                out,
                "  {:>8.2}% {:>8.2}% {:>+8.2}  {:>7.2}% {:>7.2}%  {}",
                r.a_inclusive_pct,
                r.b_inclusive_pct,
                r.change_pct,
                r.a_self_pct,
                r.b_self_pct,
                display::escaped(&name, 100)
            );
        }
    }
    out
}

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
