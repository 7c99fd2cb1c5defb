//! From a run file or an experiment to the records the store keeps: every metric `compare`
//! knows, per measured run, with the commit, branch and machine it was measured on.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::store::{Machine, MetricValue, RunRecord};
use crate::compare::metrics::catalogue;
use crate::compare::{RunData, Source};
use crate::experiment::{Fingerprint, RunStatus};
use crate::model::RunMeta;

/// Where the runs were measured, as `history add` was told or git says.
#[derive(Clone, Debug, Default)]
pub struct Revision {
    pub commit: String,
    pub branch: Option<String>,
    pub dirty: bool,
}

/// The records of a file's measured runs, and how many runs were left out (failed,
/// warmup) with why.
pub struct FileRecords {
    pub records: Vec<RunRecord>,
    pub not_measured: usize,
}

/// `--commit`/`--branch` as given; what is not given comes from git in the current
/// directory. Outside a repository without `--commit`: an error saying so.
pub fn revision(commit: Option<&str>, branch: Option<&str>) -> Result<Revision> {
    let from_git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = match commit {
        Some(c) if !c.trim().is_empty() => c.trim().to_owned(),
        Some(_) => bail!("--commit is empty: give the commit the runs were measured at"),
        None => from_git(&["rev-parse", "HEAD"])
            .filter(|c| !c.is_empty())
            .context(
                "not inside a git repository with a commit: say which commit the runs measured \
             with --commit SHA (and --branch NAME)",
            )?,
    };
    let branch = match branch {
        Some(b) => Some(b.to_owned()),
        // A detached HEAD has no branch.
        None => from_git(&["rev-parse", "--abbrev-ref", "HEAD"]).filter(|b| b != "HEAD"),
    };
    let dirty =
        from_git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Ok(Revision {
        commit,
        branch,
        dirty,
    })
}

/// Every measured run of the file (a run file or an experiment), reduced as `compare`
/// reduces it.
pub fn records(path: &Path, revision: &Revision, tags: &[(String, String)]) -> Result<FileRecords> {
    let experiment = crate::store::load_experiment(path)?.is_some();
    // A plain file is one "variant" to compare's loader, whatever commands it holds.
    let source = Source {
        path: path.to_owned(),
        variant: (!experiment).then(String::new),
        run_ids: None,
    };
    let loaded = crate::compare::load(&[source])?;
    let metas: HashMap<i64, RunMeta> = crate::store::list_runs(path)?
        .into_iter()
        .map(|m| (m.id, m))
        .collect();
    let mut records = Vec::new();
    let mut not_measured = 0;
    for run in &loaded.runs {
        let (Some(data), RunStatus::Ok, Some(meta)) =
            (&run.data, run.status, metas.get(&run.run_id))
        else {
            not_measured += 1;
            continue;
        };
        // An empty window (a run that ended inside its warmup, an import of histograms only)
        // has no rates: its only value would be a wall time of 0.
        if meta.window_end_ns <= meta.window_start_ns {
            not_measured += 1;
            continue;
        }
        let variant = if experiment {
            variant_label(&run.variant, &run.params)
        } else {
            String::new()
        };
        records.push(RunRecord {
            run_id: run_id(meta),
            commit: revision.commit.clone(),
            branch: revision.branch.clone(),
            dirty: revision.dirty,
            machine: Machine {
                id: machine_id(&run.fingerprint),
                fingerprint: run.fingerprint.clone(),
            },
            recorded_at_unix_s: unix_seconds(&meta.started_at),
            launch_mono_ns: meta.origin_mono_ns,
            command: meta.command.join(" "),
            source: path.display().to_string(),
            tags: run_tags(meta, tags),
            values: values(data, &variant),
            variant,
        });
    }
    Ok(FileRecords {
        records,
        not_measured,
    })
}

/// The run's own tags (`run --tag`, a bench's parameter values) with `history add --tag`'s
/// in place of any of the same key, sorted as the store keeps them.
fn run_tags(meta: &RunMeta, given: &[(String, String)]) -> Vec<(String, String)> {
    let mut tags: Vec<(String, String)> = (meta.tags.iter())
        .filter(|t| !given.iter().any(|(key, _)| *key == t.key))
        .map(|t| (t.key.clone(), t.value.clone()))
        .collect();
    tags.extend(given.iter().cloned());
    tags.sort();
    tags
}

/// `fast` or `fast[threads=4]`: what keeps an experiment's variants apart in history.
fn variant_label(variant: &str, params: &std::collections::BTreeMap<String, String>) -> String {
    if params.is_empty() {
        return variant.to_owned();
    }
    let values: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{variant}[{}]", values.join(","))
}

/// Every metric of the run in a report's unit; an experiment's variant prefixes the name
/// (`fast:fps`) so that two variants never share a series.
fn values(data: &RunData, variant: &str) -> Vec<MetricValue> {
    catalogue(&[data])
        .into_iter()
        .filter_map(|metric| {
            let value = metric.display_value(metric.value(data)?.value());
            value.is_finite().then(|| MetricValue {
                metric: if variant.is_empty() {
                    metric.key.clone()
                } else {
                    format!("{variant}:{}", metric.key)
                },
                value,
                unit: metric.unit.key().to_owned(),
                direction: serde_json::to_value(metric.direction)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// 64-bit FNV-1a: a hash that stays the same across Rust versions and machines (the
/// standard library's does not promise that).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// A run's id in history: the same for every copy of the run file (host, start, the
/// monotonic clock at launch and the command identify one recording). An import has no
/// host, launch or command, and its start is the second it was imported: its name (the
/// input's) and its window, to the nanosecond, tell two imports of one second apart.
pub fn run_id(meta: &RunMeta) -> String {
    let mut parts = vec![
        meta.host.hostname.clone(),
        meta.started_at.clone(),
        meta.origin_mono_ns.to_string(),
        meta.command.join("\0"),
    ];
    if is_import(meta) {
        parts.extend([
            meta.name.clone(),
            meta.window_start_ns.to_string(),
            meta.window_end_ns.to_string(),
            format!("{:?}", meta.first_span_ns),
            format!("{:?}", meta.duration_ns),
        ]);
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    format!("{:016x}", fnv1a(&parts))
}

/// A run with nothing of a launch: no host, no monotonic clock at launch, no command.
fn is_import(meta: &RunMeta) -> bool {
    meta.host.hostname.is_empty() && meta.origin_mono_ns == 0 && meta.command.is_empty()
}

/// A machine's id: a hash of what makes machines differ (`Fingerprint::identity`), so
/// the same machine set up the same way always has the same id.
pub fn machine_id(fingerprint: &Fingerprint) -> String {
    let identity = fingerprint.identity();
    let parts: Vec<&str> = identity.iter().map(|(_, v)| v.as_str()).collect();
    format!("{:012x}", fnv1a(&parts) >> 16)
}

/// RFC 3339 (`2026-11-25T14:49:34Z`) to seconds since 1970; 0 when it does not parse.
fn unix_seconds(rfc3339: &str) -> i64 {
    humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z'))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable() {
        // Fixed values: a change here splits every store's history in two.
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(&["a"]), fnv1a(&["a"]));
        assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
    }

    /// Two imports of one second differ by their input and window; a recorded run's id
    /// is what it always was (stores hold those ids).
    #[test]
    fn imports_of_one_second_have_ids_of_their_own() {
        let mut first = RunMeta {
            name: "c00.csv".into(),
            started_at: "2026-12-01T00:39:31Z".into(),
            window_end_ns: 1_595_840_000,
            ..RunMeta::default()
        };
        let same = first.clone();
        let mut second = first.clone();
        second.name = "c25.csv".into();
        second.window_end_ns = 1_595_686_000;
        assert_eq!(run_id(&first), run_id(&same));
        assert_ne!(run_id(&first), run_id(&second));
        second.name = first.name.clone();
        assert_ne!(run_id(&first), run_id(&second));

        first.host.hostname = "bench1".into();
        first.origin_mono_ns = 5_000_000_000;
        first.command = vec!["./enc".into(), "-q".into()];
        let recorded = format!(
            "{:016x}",
            fnv1a(&["bench1", "2026-12-01T00:39:31Z", "5000000000", "./enc\0-q"])
        );
        assert_eq!(run_id(&first), recorded);
    }

    #[test]
    fn rfc3339_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:01:40Z"), 100);
        assert_eq!(unix_seconds("garbage"), 0);
    }

    #[test]
    fn variant_labels_carry_parameters() {
        let mut params = std::collections::BTreeMap::new();
        assert_eq!(variant_label("fast", &params), "fast");
        params.insert("threads".to_owned(), "4".to_owned());
        assert_eq!(variant_label("fast", &params), "fast[threads=4]");
    }
}
