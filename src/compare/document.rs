//! The comparison as a neutral document (`crate::render::document`): the title, the
//! method, the headlines, a table per comparison and per sweep, what was excluded, the
//! pipeline and the notes for people (text, Markdown); the comparison itself as JSON; its
//! data table (`super::csv`) as CSV.

use super::comparison::{Comparison, Group, Row};
use super::metrics::Unit;
use crate::render::cells::{fixed, unit_name};
use crate::render::document::{plain, pretty_json, Block, Document, Line, Span, SpanKind};
use crate::render::{Table, Value};
use crate::stats::Verdict;

pub fn document(c: &Comparison) -> Document {
    let mut blocks = Vec::new();
    let runs: Vec<String> = c
        .variants
        .iter()
        .map(|v| format!("{v} {}", c.runs.get(v).copied().unwrap_or(0)))
        .collect();
    blocks.push(Block::Heading(vec![
        Span::plain("framelab compare · "),
        Span::name(c.sources.join(", ")),
        Span::plain(" · baseline "),
        Span::name(&c.baseline),
        Span::plain(" · measured runs: "),
        Span::name(runs.join(", ")),
    ]));
    let all_single = only_one_run_a_side(c);
    // One run a side has no verdict, so nothing is tested first: no primary line.
    if !all_single {
        blocks.push(Block::Paragraph(vec![Span::strong(primary_line(c))]));
    }
    let method = if all_single {
        ONE_RUN_METHOD.to_owned()
    } else {
        method_line(c)
    };
    blocks.push(Block::Paragraph(vec![Span::emphasis(method)]));
    let commands: Vec<Line> = (c.variants.iter())
        .map(|v| {
            let command = c.commands.get(v).map(String::as_str).unwrap_or("");
            vec![
                Span::name(crate::display::name(v)),
                Span::plain(": "),
                Span::code(crate::display::text(command)),
            ]
        })
        .collect();
    blocks.push(Block::Bullets(commands));
    blocks.push(Block::Blank);
    let mut headlines = Vec::new();
    for g in &c.groups {
        for cmp in &g.comparisons {
            let prefix = if g.label.is_empty() {
                String::new()
            } else if !cmp.baseline_params.is_empty() {
                format!("[{} vs {}] ", g.label, cmp.baseline_params)
            } else {
                format!("[{}] ", g.label)
            };
            let headline = Span::name(format!("{prefix}{}", cmp.headline));
            headlines.push(vec![headline.with(SpanKind::Strong)]);
        }
    }
    blocks.push(Block::Bullets(headlines));
    for g in &c.groups {
        group(&mut blocks, c, g);
    }
    if c.sweeps.len() > 1 {
        medians_table(&mut blocks, c);
    }
    for sweep in &c.sweeps {
        sweep_table(&mut blocks, c, sweep);
    }
    if !c.excluded.is_empty() {
        blocks.push(heading("excluded from the statistics"));
        let items = (c.excluded.iter())
            .map(|e| {
                let at = if e.params.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", e.params)
                };
                let from = match &e.metric {
                    Some(metric) => format!(" from {metric}"),
                    None => String::new(),
                };
                vec![
                    Span::plain(format!("run {} of ", e.run_id)),
                    Span::name(format!("{} ({}{at}){from}", e.path, e.variant)),
                    Span::plain(format!(": {}", e.why)),
                ]
            })
            .collect();
        blocks.push(Block::Bullets(items));
    }
    if !c.pipeline.is_empty() {
        blocks.push(heading("pipeline (medians; shown, not judged)"));
        let items = c.pipeline.iter().map(|l| vec![Span::name(l)]).collect();
        blocks.push(Block::Bullets(items));
    }
    if !c.notes.is_empty() {
        blocks.push(heading("notes"));
        // Sentences that name variants, stages and files: escaped whole in Markdown.
        let notes = c.notes.iter().map(|n| vec![Span::name(n)]).collect();
        blocks.push(Block::Bullets(notes));
    }
    blocks.push(Block::Data(super::csv::table(c)));
    Document {
        blocks,
        json: pretty_json(c),
    }
}

fn heading(text: &str) -> Block {
    Block::Subheading(plain(text))
}

/// A heading whose words are names (variants, parameter values, a metric's label): Markdown
/// escapes them.
fn named_heading(text: &str) -> Block {
    Block::Subheading(vec![Span::name(text)])
}

/// Every swept metric side by side: one row per parameter values and variant, one column
/// per metric (the "codec × path: wall, CPU of each process, load, cores" table).
fn medians_table(blocks: &mut Vec<Block>, c: &Comparison) {
    blocks.push(heading("medians per parameter value and variant"));
    let mut headers = vec![c.param_keys.join(" "), "variant".to_owned()];
    headers.extend(
        c.sweeps
            .iter()
            .map(|s| format!("{} ({})", s.label, unit_name(&s.unit))),
    );
    let names: Vec<usize> = (0..headers.len()).collect();
    let mut t = Table {
        headers,
        ..Table::default()
    }
    .with_names(&names, &[0, 1]);
    let first = &c.sweeps[0];
    for (r, row) in first.rows.iter().enumerate() {
        for (v, variant) in first.variants.iter().enumerate() {
            let cells = vec![row.params.clone(), variant.clone()];
            let mut cells: Vec<Value> = cells.into_iter().map(Value::Text).collect();
            cells.extend(c.sweeps.iter().map(|s| {
                let median = (s.rows.get(r)).and_then(|row| row.medians.get(v).copied().flatten());
                Value::or(median.map(|m| metric_cell(&s.unit, m, s.resolution)), "—")
            }));
            t.push(cells);
        }
    }
    blocks.push(Block::TableUnder(t));
}

/// One metric across the parameter values: the median of each variant, each change with
/// its interval and verdict.
fn sweep_table(blocks: &mut Vec<Block>, c: &Comparison, sweep: &super::comparison::Sweep) {
    let against = if sweep.baseline_params.is_empty() {
        String::new()
    } else {
        format!(", against {}", sweep.baseline_params)
    };
    blocks.push(named_heading(&format!(
        "sweep: {} ({}) per parameter value{against}",
        sweep.label,
        unit_name(&sweep.unit)
    )));
    let mut headers: Vec<String> = vec![c.param_keys.join(" ")];
    headers.extend(sweep.variants.iter().cloned());
    if sweep.baseline_params.is_empty() {
        for v in sweep.variants.iter().skip(1) {
            headers.push(format!("{v} difference"));
            headers.push(format!("{v} change [95% interval]"));
        }
    } else {
        headers.push(format!("difference vs {}", sweep.baseline_params));
        headers.push(format!(
            "change vs {} [95% interval]",
            sweep.baseline_params
        ));
    }
    let names: Vec<usize> = (0..headers.len()).collect();
    let mut t = Table {
        headers,
        ..Table::default()
    }
    .with_names(&names, &[0]);
    for row in &sweep.rows {
        let mut cells = vec![Value::Text(row.params.clone())];
        cells.extend((row.medians.iter()).map(|m| {
            Value::or(
                m.map(|v| metric_cell(&sweep.unit, v, sweep.resolution)),
                "—",
            )
        }));
        let is_baseline = !sweep.baseline_params.is_empty() && row.params == sweep.baseline_params;
        for ch in &row.changes {
            let (difference, change) = match ch {
                Some(ch) => (
                    difference_cell(&sweep.unit, ch.difference, sweep.resolution),
                    Value::Verdict {
                        change: Box::new(change(&ch.ratio)),
                        verdict: ch.verdict.clone(),
                    },
                ),
                None if is_baseline => (Value::from("baseline"), Value::from("baseline")),
                None => (Value::Missing("—"), Value::Missing("—")),
            };
            cells.push(difference);
            cells.push(change);
        }
        t.push(cells);
    }
    blocks.push(Block::TableUnder(t));
}

/// "primary metric: fps, tested first at the full α = 0.05; the other metrics only once it
/// changed (--show NAME,... puts another first)".
/// How a comparison of one run a side is made (its method line).
pub const ONE_RUN_METHOD: &str = "one run a side: each value is that run's; difference = \
    variant − baseline, change = variant ÷ baseline − 1; no interval, p-value or verdict";

/// Whether every comparison has a single run on a side: then nothing is judged.
pub fn only_one_run_a_side(c: &Comparison) -> bool {
    (c.groups.iter().flat_map(|g| &g.comparisons)).all(|cmp| cmp.one_run_a_side)
}

pub fn primary_line(c: &Comparison) -> String {
    let label = (c.metrics.iter())
        .find(|m| m.key == c.primary_metric)
        .map_or(c.primary_metric.as_str(), |m| m.label.as_str());
    format!(
        "primary metric: {}, tested first at the full α = {}; the other metrics only once it \
         changed (--show NAME,... puts another first)",
        crate::display::name(label),
        c.options.alpha
    )
}

fn group(blocks: &mut Vec<Block>, c: &Comparison, g: &Group) {
    let at = if g.label.is_empty() {
        String::new()
    } else {
        format!(" [{}]", g.label)
    };
    for cmp in &g.comparisons {
        let title = if cmp.baseline_params.is_empty() {
            format!("{} vs {}{at}", cmp.variant, cmp.baseline)
        } else {
            format!("{}{at} vs [{}]", cmp.variant, cmp.baseline_params)
        };
        blocks.push(named_heading(&title));
        if !c.histograms.is_empty() {
            // Runs of imported histograms: a table per histogram instead of metric rows.
            let of_this = (c.histograms.iter())
                .filter(|h| h.variant == cmp.variant && h.baseline == cmp.baseline);
            for h in of_this {
                blocks.push(Block::Captioned {
                    caption: vec![Span::name(super::histograms::title(h)).with(SpanKind::Strong)],
                    table: super::histograms::table(h),
                });
            }
            continue;
        }
        let (base_head, var_head) = if cmp.baseline_params.is_empty() {
            (cmp.baseline.clone(), cmp.variant.clone())
        } else {
            (cmp.baseline_params.clone(), g.label.clone())
        };
        let judged = !cmp.one_run_a_side;
        let mut headers = vec!["metric", "unit", &base_head, &var_head, "difference"];
        if judged {
            headers.extend(["change [95% interval]", "p (adj.)", "verdict"]);
        } else {
            headers.push("change");
        }
        let mut t = Table::new(&headers).with_names(&[2, 3], &[0]);
        for row in &cmp.rows {
            let mut cells = vec![
                Value::Text(row.label.clone()),
                Value::from(unit_name(&row.unit)),
                summary_cell(&row.unit, row.baseline.as_ref()),
                summary_cell(&row.unit, row.variant.as_ref()),
                difference_cell(&row.unit, row.difference, row_resolution(row)),
                change_cell(row),
            ];
            if judged {
                cells.push(Value::or(row.p_holm.map(Value::P), "—"));
                cells.push(Value::from(row.verdict.word()));
            }
            t.push(cells);
        }
        blocks.push(Block::TableUnder(t));
        if !judged {
            continue;
        }
        let open: Vec<&Row> = cmp
            .rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Inconclusive { .. }))
            .collect();
        let items: Vec<Line> = (open.iter())
            .filter_map(|r| match &r.verdict {
                Verdict::Inconclusive { reason, more_runs } => {
                    let more = match more_runs {
                        Some(n) => format!(
                            "; if the change is what was measured, about {n} more run{} a side \
                             would likely settle it",
                            if *n == 1 { "" } else { "s" }
                        ),
                        None => String::new(),
                    };
                    Some(vec![
                        Span::name(&r.label),
                        Span::plain(format!(": {reason}{more}")),
                    ])
                }
                _ => None,
            })
            .collect();
        if !items.is_empty() {
            blocks.push(Block::SubList {
                title: "inconclusive".into(),
                items,
            });
        }
    }
    if !g.steps.is_empty() {
        let metric = c.metrics.iter().find(|m| m.key == c.headline_metric);
        let (label, unit) = metric.map_or(("", Unit::Fps), |m| (m.label.as_str(), m.unit.clone()));
        blocks.push(named_heading(&format!(
            "step by step{at}: {label} ({})",
            unit_name(&unit)
        )));
        let mut t = Table::new(&[
            "variant",
            "median",
            "step difference",
            "step [95% interval]",
            "difference from the baseline",
            "from the baseline [95% interval]",
        ])
        .with_names(&[], &[0]);
        for s in &g.steps {
            let cell =
                |r: &Option<crate::stats::RatioInterval>| Value::or(r.as_ref().map(change), "—");
            t.push(vec![
                Value::Text(s.variant.clone()),
                metric_cell(&unit, s.median, s.resolution),
                difference_cell(&unit, s.step_difference, s.resolution),
                cell(&s.step),
                difference_cell(&unit, s.cumulative_difference, s.resolution),
                cell(&s.cumulative),
            ]);
        }
        blocks.push(Block::TableUnder(t));
    }
    if !g.worst.is_empty() {
        let mut remark = vec![
            Span::plain("worst frame total"),
            Span::name(at.as_str()),
            Span::plain(", shown, never used for a verdict: "),
        ];
        for (i, w) in g.worst.iter().enumerate() {
            if i > 0 {
                remark.push(Span::plain(" · "));
            }
            remark.push(Span::name(&w.variant));
            remark.push(Span::plain(format!(
                " {} µs (run {}, frame {})",
                fixed(w.total_us, 0),
                w.run_id,
                w.frame
            )));
        }
        blocks.push(Block::Remark(remark));
    }
}

/// A change with its interval, as a cell.
fn change(r: &crate::stats::RatioInterval) -> Value {
    Value::Change {
        ratio: r.ratio,
        low: r.low,
        high: r.high,
    }
}

fn change_cell(row: &Row) -> Value {
    Value::or(row.ratio.as_ref().map(change), "—")
}

/// A metric's value in its unit, as a cell.
fn metric_cell(unit: &Unit, value: f64, resolution: Option<f64>) -> Value {
    Value::Metric {
        unit: unit.clone(),
        value,
        resolution,
        spread_pct: None,
    }
}

/// An absolute change in the metric's unit, signed with a true minus: "+192.0", "−0.42".
fn difference_cell(unit: &Unit, difference: Option<f64>, resolution: Option<f64>) -> Value {
    let difference = difference
        .filter(|d| !d.is_nan())
        .map(|value| Value::Difference {
            unit: unit.clone(),
            value,
            resolution,
        });
    Value::or(difference, "—")
}

/// The coarser resolution of a row's two sides, for its difference.
fn row_resolution(row: &Row) -> Option<f64> {
    let b = row.baseline.as_ref()?.resolution?;
    let v = row.variant.as_ref()?.resolution?;
    Some(b.max(v))
}

fn summary_cell(unit: &Unit, s: Option<&super::comparison::Summary>) -> Value {
    let summary = s.map(|s| Value::Metric {
        unit: unit.clone(),
        value: s.median,
        resolution: s.resolution,
        // One run has no spread.
        spread_pct: (s.runs != 1).then_some(s.spread_pct),
    });
    Value::or(summary, "—")
}

/// How the numbers were got: medians, intervals, p-values and the noise band.
fn method_line(c: &Comparison) -> String {
    format!(
        "median across runs ± robust spread; change of the median with its 95% interval \
         (two-level bootstrap, {} resamples, seed {}); Mann–Whitney p, adjusted (p (adj.)): the \
         primary metric's own, the others' Holm-corrected among themselves, tested only once \
         the primary changed (fixed-sequence gatekeeping); noise band ±{}%, α = {}",
        c.options.resamples,
        c.options.seed,
        fixed(
            c.options.noise * 100.0,
            if (c.options.noise * 100.0).fract() == 0.0 {
                0
            } else {
                1
            }
        ),
        c.options.alpha
    )
}
