//! `framelab history show`: each metric over commits, one table per machine (machines are
//! never averaged together), as text, Markdown, JSON or a trend page (the same document
//! under a title, with a plot per metric, through `render::html_writer`).

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use super::series::{series_from_rows, Series};
use super::store::{Filter, Store};
use crate::render::document::{pretty_json, write, Block, Document, Span};
use crate::render::format::HISTORY_SHOW;
use crate::render::plot::{Plot, Trend};
use crate::render::table::{Layout, Table};
use crate::render::value::StoreDigits;
use crate::render::{Format, Value};

/// What `show` prints, and its JSON (`framelab.history.show/1`).
#[derive(Clone, Debug, Serialize)]
pub struct Shown {
    pub schema: &'static str,
    /// The machines of the series below, by id.
    pub machines: Vec<MachineInfo>,
    pub series: Vec<ShownSeries>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MachineInfo {
    pub id: String,
    pub hostname: String,
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    pub gpu: String,
}

/// One metric on one machine.
#[derive(Clone, Debug, Serialize)]
pub struct ShownSeries {
    pub metric: String,
    pub unit: String,
    pub direction: String,
    pub machine: String,
    /// Each commit's runs, in the order the commits were first recorded.
    pub commits: Vec<CommitRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CommitRow {
    pub commit: String,
    pub branch: Option<String>,
    /// When its first run was recorded (seconds since 1970, UTC).
    pub first_recorded_at_unix_s: i64,
    pub runs: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// Reads what the filter lets through, grouped into series.
pub fn load(store: &mut Store, filter: &Filter) -> Result<Shown> {
    let rows = store.values(filter)?;
    if rows.is_empty() {
        return Err(no_values(store, filter));
    }
    let series = series_from_rows(rows, filter.branch.as_deref());
    let used: Vec<&str> = series.iter().map(|s| s.machine.as_str()).collect();
    let machines = store
        .machines()?
        .into_iter()
        .filter(|m| used.contains(&m.id.as_str()))
        .map(|m| MachineInfo {
            id: m.id,
            hostname: m.fingerprint.hostname,
            cpu_model: m.fingerprint.cpu_model,
            cores: m.fingerprint.cores,
            kernel: m.fingerprint.kernel,
            gpu: m.fingerprint.gpu,
        })
        .collect();
    let series = series
        .into_iter()
        .map(|s| ShownSeries {
            commits: by_commit(&s),
            metric: s.metric,
            unit: s.unit,
            direction: s.direction,
            machine: s.machine,
        })
        .collect();
    Ok(Shown {
        schema: "framelab.history.show/1",
        machines,
        series,
    })
}

/// Why a show, check or export has nothing: an empty store, or a filter that matches
/// nothing (a misspelt metric must not pass `check --fail-on-regression` on no series).
pub fn no_values(store: &mut Store, filter: &Filter) -> anyhow::Error {
    let filtered = filter.metric.is_some() || filter.branch.is_some() || filter.machine.is_some();
    let all = if filtered {
        store.values(&Filter::default()).unwrap_or_default()
    } else {
        Vec::new()
    };
    if all.is_empty() {
        return anyhow::anyhow!(
            "{} has no values{}: add runs with framelab history add RUN",
            store.location,
            describe_filter(filter)
        );
    }
    let mut known = Vec::new();
    let mut list = |what: &str, values: Vec<String>| {
        let mut values = values;
        // The run-wide metrics (fps, wall) before a stage's (encode.p50) or a wait's.
        values.sort_by(|a, b| {
            let staged = |m: &str| m.contains('.') || m.contains("->");
            (staged(a), a).cmp(&(staged(b), b))
        });
        values.dedup();
        let shown: Vec<String> = values.iter().take(10).cloned().collect();
        let more = if values.len() > 10 {
            format!(", ... ({} in all)", values.len())
        } else {
            String::new()
        };
        known.push(format!("{what}: {}{more}", shown.join(", ")));
    };
    if filter.metric.is_some() {
        list("metrics", all.iter().map(|r| r.metric.clone()).collect());
    }
    if filter.branch.is_some() {
        list(
            "branches",
            all.iter().filter_map(|r| r.branch.clone()).collect(),
        );
    }
    if filter.machine.is_some() {
        list("machines", all.iter().map(|r| r.machine.clone()).collect());
    }
    anyhow::anyhow!(
        "{} has no values{} (it has {}): check --metric, --branch and --machine",
        store.location,
        describe_filter(filter),
        known.join("; ")
    )
}

fn describe_filter(filter: &Filter) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &filter.metric {
        parts.push(format!("metric {m}"));
    }
    if let Some(b) = &filter.branch {
        parts.push(format!("branch {b}"));
    }
    if let Some(m) = &filter.machine {
        parts.push(format!("machine {m}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" for {}", parts.join(", "))
    }
}

/// The series' points grouped by commit, commits in the order first recorded.
fn by_commit(series: &Series) -> Vec<CommitRow> {
    let mut order: Vec<&str> = Vec::new();
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for p in &series.points {
        if !order.contains(&p.commit.as_str()) {
            order.push(&p.commit);
        }
        values.entry(&p.commit).or_default().push(p.value);
    }
    order
        .into_iter()
        .map(|commit| {
            let first = series.points.iter().find(|p| p.commit == commit);
            let v = &values[commit];
            CommitRow {
                commit: commit.to_owned(),
                branch: first.and_then(|p| p.branch.clone()),
                first_recorded_at_unix_s: first.map_or(0, |p| p.recorded_at_unix_s),
                runs: v.len(),
                median: crate::stats::quantile::median(v).unwrap_or(f64::NAN),
                min: v.iter().copied().fold(f64::INFINITY, f64::min),
                max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect()
}

/// The trends in text, Markdown or JSON.
pub fn render(shown: &Shown, format: Format) -> Result<String> {
    write(&document(shown), format, &HISTORY_SHOW)
}

/// The trends as a neutral document: per metric and machine a heading and a grid of
/// commits; its JSON form is `shown` itself.
fn document(shown: &Shown) -> Document {
    let mut blocks = Vec::new();
    for s in &shown.series {
        let machine = shown.machines.iter().find(|m| m.id == s.machine);
        let about = machine.map_or(String::new(), |m| {
            if m.hostname.is_empty() && m.cpu_model.is_empty() {
                " (unknown: imported runs carry no machine fingerprint)".to_string()
            } else {
                format!(" ({}, {}, {} cores)", m.hostname, m.cpu_model, m.cores)
            }
        });
        let unit = match crate::render::cells::shown_unit(&s.unit).as_str() {
            "" => String::new(),
            shown => format!(" [{shown}]"),
        };
        blocks.push(Block::Heading(vec![
            Span::name(&s.metric),
            Span::name(unit),
            Span::plain(format!(" on machine {}", s.machine)),
            Span::name(about),
        ]));
        let headers = [
            "commit",
            "branch",
            "recorded (UTC)",
            "runs",
            "median",
            "min",
            "max",
        ];
        let stored = |value| Value::Stored {
            value,
            unit: s.unit.clone(),
            digits: StoreDigits::Grid,
        };
        let rows = (s.commits.iter())
            .map(|c| {
                vec![
                    Value::Text(c.commit.chars().take(12).collect()),
                    Value::or(c.branch.clone().map(Value::Text), "-"),
                    Value::Text(super::export::rfc3339(c.first_recorded_at_unix_s)),
                    Value::Count(c.runs as i64),
                    stored(c.median),
                    stored(c.min),
                    stored(c.max),
                ]
            })
            .collect();
        let grid = Table {
            rows,
            ..Table::new(&headers)
        };
        // Commits and branches are names; the words' columns left, the numbers' right.
        let every: Vec<usize> = (0..headers.len()).collect();
        let grid =
            (grid.with_names(&every, &every)).with_layout(Layout::grid(headers.len(), vec![1, 2]));
        blocks.push(Block::TableUnder(grid));
        blocks.push(Block::Blank);
    }
    Document {
        blocks,
        json: pretty_json(shown),
    }
}

/// The trend page's schema (its data, `assets/html/page.js`, `renderHistory`).
pub const PAGE_SCHEMA: &str = "framelab.html-history/1";

/// The trend page as a document for the HTML writer: the document text and Markdown show,
/// under the page's title, with a plot per metric over commits (a line per machine).
pub fn page(shown: &Shown) -> Document {
    let mut page = document(shown);
    page.blocks
        .insert(0, Block::Title("framelab history".into()));
    page.blocks.push(Block::Plot(Plot::Trends(trends(shown))));
    page
}

/// Per metric (in the order of its first series), its commits in the order first recorded
/// on any machine (those of one second in their series' order), and each machine's medians
/// at them.
fn trends(shown: &Shown) -> Vec<Trend> {
    let mut metrics: Vec<&str> = Vec::new();
    for s in &shown.series {
        if !metrics.contains(&s.metric.as_str()) {
            metrics.push(&s.metric);
        }
    }
    let machine = |id: &str| {
        (shown.machines.iter().find(|m| m.id == id)).map_or(id.to_owned(), |m| {
            format!("{id} ({}, {})", m.hostname, m.cpu_model)
        })
    };
    (metrics.into_iter())
        .map(|metric| {
            let series: Vec<&ShownSeries> = (shown.series.iter())
                .filter(|s| s.metric == metric)
                .collect();
            // Commits as the series list them, then (a stable sort) by the second first
            // recorded: those of one second keep their series' order, which is finer.
            let mut first: BTreeMap<&str, i64> = BTreeMap::new();
            let mut commits: Vec<&str> = Vec::new();
            for c in series.iter().flat_map(|s| &s.commits) {
                let at = first.entry(&c.commit).or_insert_with(|| {
                    commits.push(&c.commit);
                    c.first_recorded_at_unix_s
                });
                *at = (*at).min(c.first_recorded_at_unix_s);
            }
            commits.sort_by_key(|c| first[c]);
            let lines = (series.iter())
                .map(|s| {
                    let medians = (commits.iter())
                        .map(|&id| s.commits.iter().find(|c| c.commit == id).map(|c| c.median))
                        .collect();
                    (machine(&s.machine), medians)
                })
                .collect();
            Trend {
                metric: metric.to_owned(),
                unit: series[0].unit.clone(),
                commits: commits.into_iter().map(str::to_owned).collect(),
                lines,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown() -> Shown {
        Shown {
            schema: "framelab.history.show/1",
            machines: vec![MachineInfo {
                id: "m1".into(),
                hostname: "vm".into(),
                cpu_model: "AMD EPYC".into(),
                cores: 2,
                kernel: String::new(),
                gpu: String::new(),
            }],
            series: vec![ShownSeries {
                metric: "a:fps".into(),
                unit: "fps".into(),
                direction: "higher_is_better".into(),
                machine: "m1".into(),
                commits: vec![CommitRow {
                    commit: "aaaa1111bbbb2222".into(),
                    branch: Some("feat|x".into()),
                    first_recorded_at_unix_s: 0,
                    runs: 5,
                    median: 112.4,
                    min: 103.3,
                    max: 179.2,
                }],
            }],
        }
    }

    #[test]
    fn each_series_is_a_heading_and_a_grid_in_text_and_markdown() {
        assert_eq!(
            render(&shown(), Format::Text).unwrap(),
            "a:fps [fps] on machine m1 (vm, AMD EPYC, 2 cores)\n\
             commit        branch  recorded (UTC)        runs  median    min    max\n\
             aaaa1111bbbb  feat|x  1970-01-01T00:00:00Z     5   112.4  103.3  179.2\n\n"
        );
        assert_eq!(
            render(&shown(), Format::Markdown).unwrap(),
            "### a:fps \\[fps\\] on machine m1 (vm, AMD EPYC, 2 cores)\n\n\
             | commit | branch | recorded (UTC) | runs | median | min | max |\n\
             |---|---|---|---|---|---|---|\n\
             | aaaa1111bbbb | feat\\|x | 1970-01-01T00:00:00Z | 5 | 112.4 | 103.3 | 179.2 |\n\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(&render(&shown(), Format::Json).unwrap()).unwrap();
        assert_eq!(json["series"][0]["commits"][0]["median"], 112.4);
        assert!(render(&shown(), Format::Csv).is_err());
    }

    fn row(commit: &str, at: i64, median: f64) -> CommitRow {
        CommitRow {
            commit: commit.into(),
            branch: None,
            first_recorded_at_unix_s: at,
            runs: 1,
            median,
            min: median,
            max: median,
        }
    }

    /// The trend page is the document text shows, under the page's title, with a plot per
    /// metric: its commits in the order first recorded on any machine, a line per machine
    /// with a gap where it has no run of a commit.
    #[test]
    fn the_page_is_the_document_with_a_plot_per_metric() {
        let mut shown = shown();
        let fps = shown.series[0].clone();
        shown.series = vec![
            ShownSeries {
                commits: vec![row("c2", 20, 61.0), row("c3", 30, 62.0)],
                ..fps.clone()
            },
            ShownSeries {
                machine: "m2".into(),
                commits: vec![row("c1", 10, 50.0), row("c3", 5, 52.0)],
                ..fps.clone()
            },
            ShownSeries {
                metric: "wall".into(),
                unit: "seconds".into(),
                commits: vec![row("c1", 10, 1.5)],
                ..fps
            },
        ];
        let page = page(&shown);
        let data = crate::render::html_writer::page(&page, PAGE_SCHEMA, "history");
        let json: serde_json::Value = serde_json::to_value(&data).unwrap();
        assert_eq!(json["title"], "framelab history");
        assert_eq!(json["kind"], "history");
        let trends = json["trends"].as_array().unwrap();
        assert_eq!(trends.len(), 2);
        assert_eq!(trends[0]["metric"], "a:fps");
        assert_eq!(trends[0]["commits"], serde_json::json!(["c3", "c1", "c2"]));
        assert_eq!(
            trends[0]["lines"],
            serde_json::json!([
                ["m1 (vm, AMD EPYC)", [62.0, null, 61.0]],
                ["m2", [52.0, 50.0, null]]
            ])
        );
        assert_eq!(trends[1]["unit"], "seconds");
        // The words are text's: a heading and a table per metric and machine.
        let blocks = json["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 6, "{blocks:?}");
        assert_eq!(
            blocks[0]["heading"],
            "a:fps [fps] on machine m1 (vm, AMD EPYC, 2 cores)"
        );
        assert_eq!(blocks[1]["table"]["rows"][0][0], "c2");
        // Under its title, the page's document is text's (which leaves the plots out).
        assert_eq!(
            write(&page, Format::Text, &HISTORY_SHOW).unwrap(),
            format!(
                "framelab history\n{}",
                render(&shown, Format::Text).unwrap()
            )
        );
    }

    /// Commits first recorded in one second keep their series' order (which is finer
    /// than the second), not their ids'.
    #[test]
    fn a_plot_keeps_the_order_of_commits_of_one_second() {
        let mut shown = shown();
        shown.series[0].commits = vec![row("cb", 10, 1.0), row("ca", 10, 2.0)];
        let trends = trends(&shown);
        assert_eq!(trends[0].commits, ["cb", "ca"]);
    }
}
