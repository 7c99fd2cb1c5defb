//! What an experiment runs: variants (a name and a command), parameters (a key and its
//! values), how many runs of each, in what order, with which run options. Stored as JSON
//! in the experiment file so `--resume` continues exactly the same experiment.

use std::collections::BTreeMap;

use anyhow::Result;

pub use crate::model::template::{expand, placeholders};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub name: String,
    /// argv, with `{KEY}` where a parameter's value goes.
    pub command: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    pub key: String,
    pub values: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// A B A B …: every variant and parameter value once, then again.
    Interleaved,
    /// Each round in a random order (seeded), so no variant always follows another.
    Shuffled,
}

/// The `framelab run` options every run of the experiment gets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub fps: Option<f64>,
    pub budget_ns: Option<i64>,
    pub warmup_ns: i64,
    #[serde(default)]
    pub warmup_from: crate::model::WarmupFrom,
    #[serde(default)]
    pub warmup_frames: Option<u64>,
    pub duration_ns: Option<i64>,
    pub frames: Option<u64>,
    pub watch_pids: Vec<u32>,
    pub watch_names: Vec<String>,
    /// Roles given with `--watch-pid ROLE=PID` and `--watch ROLE=NAME`.
    #[serde(
        default,
        skip_serializing_if = "crate::session::watch::WatchRoles::is_empty"
    )]
    pub watch_roles: crate::session::watch::WatchRoles,
    pub grace_ns: i64,
    pub ring_records: Option<u64>,
    /// `--metric`: numbers each run's command prints or writes, judged like fps.
    #[serde(default)]
    pub metrics: Vec<crate::output::MetricSpec>,
    /// `--keep-output`: keep both streams even when no metric reads them.
    #[serde(default)]
    pub keep_output: bool,
    /// `--service`, `--ready`, `--pin ROLE=` as given: started fresh for every run.
    #[serde(default)]
    pub services: ServiceSettings,
    /// `--profile=HZ`, `--call-graph`: every run sampled.
    #[serde(default)]
    pub profile: Option<crate::profile::ProfileOptions>,
    /// `--tag KEY=VALUE`: every run's; each also gets its parameter values as tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<crate::model::Tag>,
    /// `--probe`, `--usdt`, `--usdt-event`, `--tracepoint`, `--frame-arg`, `--frame-probe`:
    /// attached to every run of every variant.
    #[serde(default, skip_serializing_if = "crate::probes::ProbeText::is_empty")]
    pub probes: crate::probes::ProbeText,
}

/// The service options of a bench as given, `{KEY}` unexpanded, kept for `--resume`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServiceSettings {
    pub services: Vec<String>,
    pub ready: Vec<String>,
    pub ready_timeout_ns: i64,
    pub pins: Vec<String>,
    pub shell: bool,
}

impl ServiceSettings {
    /// The services of one run of `variant`: those for all with the variant's own
    /// (`VARIANT:NAME=…`) in their place, `{KEY}` in their commands replaced by this run's
    /// values.
    pub fn specs(
        &self,
        variant: &str,
        combo: &std::collections::BTreeMap<String, String>,
    ) -> Result<Vec<crate::services::ServiceSpec>> {
        use crate::services::for_variant;
        let expand = |text: &String| {
            combo
                .iter()
                .fold(text.clone(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
        };
        let services: Vec<String> = for_variant(&self.services, variant, false)
            .iter()
            .map(expand)
            .collect();
        let ready = for_variant(&self.ready, variant, false);
        let mut pins = Vec::new();
        for text in &for_variant(&self.pins, variant, true) {
            let (role, cpus) = crate::services::split_pin(text);
            pins.push((role, super::cpus::parse_cpu_list(cpus)?));
        }
        crate::services::parse_services(&services, &ready, &pins, self.shell)
    }

    /// Each `VARIANT:` prefix names a variant (a mistyped one would silently apply to none).
    fn check_variants(&self, variants: &[VariantSpec]) -> Result<()> {
        let texts = [
            ("--service", &self.services),
            ("--ready", &self.ready),
            ("--pin", &self.pins),
        ];
        for (option, texts) in texts {
            for (variant, rest) in texts
                .iter()
                .filter_map(|t| crate::services::split_variant(t))
            {
                if !variants.iter().any(|v| v.name == variant) {
                    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
                    crate::bail_usage!(
                        "{option} {variant}:{rest}: no variant is named {variant}; the variants \
                         are {}",
                        names.join(", ")
                    );
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub variants: Vec<VariantSpec>,
    pub params: Vec<ParamSpec>,
    /// Runs of each variant at each combination of parameter values.
    pub runs: u32,
    pub order: Order,
    pub seed: Option<u64>,
    /// `--pin` as given.
    pub pin: Option<String>,
    /// `--prepare`, run with `sh -c` before each run (`{KEY}` expanded).
    pub prepare: Option<String>,
    pub run: RunSettings,
    /// `--warmup-runs N`: rounds of whole runs done and discarded before the measured ones
    /// (again after a `--resume`).
    #[serde(default)]
    pub warmup_runs: u32,
    /// `--setup`: with `sh -c`, once per variant (and per value of each `{KEY}` it names)
    /// before the first run.
    #[serde(default)]
    pub setup: Option<String>,
    /// `--cleanup`: like `--setup`, after the last run, also when the bench stops early.
    #[serde(default)]
    pub cleanup: Option<String>,
}

/// Fewer than this many runs per variant is refused: no spread across runs.
pub const MIN_RUNS: u32 = 2;

/// The most runs one experiment holds (variants × parameter combinations × runs): its
/// schedule is built before the first run, and a mistyped -n must not fill the memory.
pub const MAX_TOTAL_RUNS: u64 = 100_000;

/// `NAME=CMD`: the command is split into words as a POSIX shell would (quotes, escapes),
/// without running a shell.
pub fn parse_variant(text: &str) -> Result<VariantSpec> {
    let Some((name, command)) = text.split_once('=') else {
        crate::bail_usage!(
            "--variant {text}: give it as NAME=COMMAND, e.g. --variant fast='./app --fast'"
        );
    };
    let name = name.trim();
    if name.is_empty() {
        crate::bail_usage!(
            "--variant {text}: the name before '=' is empty; e.g. --variant fast='./app --fast'"
        );
    }
    let Some(words) = shlex::split(command) else {
        crate::bail_usage!("--variant {name}: the command has an unclosed quote or a trailing backslash: {command}");
    };
    if words.is_empty() {
        crate::bail_usage!("--variant {name}: the command after '=' is empty");
    }
    Ok(VariantSpec {
        name: name.to_owned(),
        command: words,
    })
}

/// `NAME=CMD` with `--shell`: the command is one string `sh -c` runs (pipes, `&&`,
/// redirections, `$VARS`), `{KEY}` placeholders expanded in it.
pub fn parse_shell_variant(text: &str) -> Result<VariantSpec> {
    let Some((name, command)) = text.split_once('=') else {
        crate::bail_usage!("--variant {text}: give it as NAME=COMMAND, e.g. --variant fast='./app --fast | tee log'");
    };
    let name = name.trim();
    if name.is_empty() {
        crate::bail_usage!("--variant {text}: the name before '=' is empty");
    }
    if command.trim().is_empty() {
        crate::bail_usage!("--variant {name}: the command after '=' is empty");
    }
    Ok(VariantSpec {
        name: name.to_owned(),
        command: shell_argv(command),
    })
}

/// `sh -c COMMAND`.
pub fn shell_argv(command: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), command.to_owned()]
}

/// `KEY=V1,V2,...`.
pub fn parse_param(text: &str) -> Result<ParamSpec> {
    let Some((key, values)) = text.split_once('=') else {
        crate::bail_usage!("--param {text}: give it as KEY=V1,V2,..., e.g. --param res=720p,1080p");
    };
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        crate::bail_usage!(
            "--param {text}: the key must be letters, digits or _ (it is used as {{KEY}})"
        );
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
    if values.iter().all(String::is_empty) {
        crate::bail_usage!(
            "--param {key} has no values: give them as {key}=V1,V2,... (e.g. {key}=720p,1080p)"
        );
    }
    if values.iter().any(String::is_empty) {
        crate::bail_usage!(
            "--param {text}: a value is empty (two commas in a row, or one at an end)"
        );
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(v) = values.iter().find(|v| !seen.insert(v.as_str())) {
        crate::bail_usage!("--param {key}: the value {v} is given twice");
    }
    Ok(ParamSpec {
        key: key.to_owned(),
        values,
    })
}

impl ExperimentSpec {
    /// Checks what can be checked before anything runs, with messages that say the fix.
    pub fn validate(&self) -> Result<()> {
        if self.runs < MIN_RUNS {
            crate::bail_usage!(
                "-n {}: at least {MIN_RUNS} runs per variant are needed to see the spread across \
                 runs, and 4 a side for a verdict; 6 or more is better",
                self.runs
            );
        }
        if self.variants.is_empty() {
            crate::bail_usage!("nothing to run: give --variant NAME=COMMAND (twice or more to compare) or one command after --");
        }
        let combos = self
            .params
            .iter()
            .fold(1u64, |n, p| n.saturating_mul(p.values.len() as u64));
        let total = combos
            .saturating_mul(self.variants.len() as u64)
            .saturating_mul(u64::from(self.runs));
        if total > MAX_TOTAL_RUNS {
            crate::bail_usage!(
                "this experiment would be {total} runs ({} variants × {combos} parameter \
                 combinations × -n {}); the most is {MAX_TOTAL_RUNS}: give fewer runs, variants \
                 or parameter values",
                self.variants.len(),
                self.runs
            );
        }
        let warmup = std::time::Duration::from_nanos(self.run.warmup_ns.max(0) as u64);
        if let Some(message) =
            crate::model::window::warmup_conflict(self.run.frames, warmup, self.run.warmup_frames)
        {
            return Err(crate::usage::UsageError(message).into());
        }
        if let Some(duration) = self.run.duration_ns {
            let duration = std::time::Duration::from_nanos(duration.max(0) as u64);
            if let Some(message) = crate::model::window::window_conflict(warmup, duration) {
                return Err(crate::usage::UsageError(message).into());
            }
        }
        let mut names = std::collections::HashSet::new();
        for v in &self.variants {
            if !names.insert(v.name.as_str()) {
                crate::bail_usage!(
                    "the variant name '{}' is used twice: give each --variant its own name",
                    v.name
                );
            }
        }
        let mut keys = std::collections::HashSet::new();
        for p in &self.params {
            if !keys.insert(p.key.as_str()) {
                crate::bail_usage!(
                    "--param {} is given twice: list all its values in one, {}=V1,V2,...",
                    p.key,
                    p.key
                );
            }
        }
        self.run.services.check_variants(&self.variants)?;
        if let Some(tag) =
            (self.run.tags.iter()).find(|t| self.params.iter().any(|p| p.key == t.key))
        {
            crate::bail_usage!(
                "--tag {}: {} is a --param of this bench, and each run is tagged with its value \
                 already; give the tag another key",
                crate::display::name(&format!("{}={}", tag.key, tag.value)),
                tag.key
            );
        }
        let known = |key: &str| self.params.iter().any(|p| p.key == key);
        for v in &self.variants {
            for word in &v.command {
                if let Some(key) = placeholders(word).into_iter().find(|k| !known(k)) {
                    crate::bail_usage!(
                        "variant '{}' uses {{{key}}} but no --param {key}=... was given; add one, \
                         or write {{{{{key}}}}} for literal braces",
                        v.name
                    );
                }
            }
        }
        for (option, command) in [
            ("--prepare", &self.prepare),
            ("--setup", &self.setup),
            ("--cleanup", &self.cleanup),
        ] {
            if let Some(command) = command {
                if let Some(key) = placeholders(command).into_iter().find(|k| !known(k)) {
                    crate::bail_usage!(
                        "{option} uses {{{key}}} but no --param {key}=... was given"
                    );
                }
            }
        }
        for metric in &self.run.metrics {
            if metric.direction.is_none() {
                let (head, body) = metric.text.split_once('=').unwrap_or((&metric.text, ""));
                crate::bail_usage!(
                    "--metric {}: say which way is better, since bench judges it: \
                     --metric '{head}:higher={body}' (or :lower)",
                    metric.text
                );
            }
            if let Some(key) = metric.placeholders().into_iter().find(|k| !known(k)) {
                crate::bail_usage!(
                    "--metric {} uses {{{key}}} but no --param {key}=... was given",
                    metric.text
                );
            }
        }
        Ok(())
    }

    /// Each variant's `--setup` (or `--cleanup`) commands, `{KEY}` expanded: one per
    /// variant, or one per distinct expansion when it names parameters. In order of
    /// variants, then values.
    pub fn per_variant(&self, command: Option<&str>) -> Result<Vec<(usize, String)>> {
        let Some(command) = command else {
            return Ok(Vec::new());
        };
        let mut out: Vec<(usize, String)> = Vec::new();
        for variant in 0..self.variants.len() {
            for combo in self.combinations() {
                let expanded = expand(command, &combo)?;
                if !out.contains(&(variant, expanded.clone())) {
                    out.push((variant, expanded));
                }
            }
        }
        Ok(out)
    }

    /// Every combination of parameter values, the first parameter varying slowest;
    /// one empty combination without parameters.
    pub fn combinations(&self) -> Vec<BTreeMap<String, String>> {
        let mut combos = vec![BTreeMap::new()];
        for p in &self.params {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    p.values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(p.key.clone(), v.clone());
                        c
                    })
                })
                .collect();
        }
        combos
    }

    /// The CPUs a variant's command is pinned to, as given: its own `--pin VARIANT:CPUS`
    /// (or `VARIANT:command=CPUS`), else the `--pin` for all.
    pub fn pin_of(&self, variant: usize) -> Option<String> {
        let name = &self.variants[variant].name;
        crate::services::for_variant(&self.run.services.pins, name, true)
            .iter()
            .map(|t| crate::services::split_pin(t))
            .find(|(role, _)| role == crate::services::spec::COMMAND_ROLE)
            .map(|(_, cpus)| cpus.to_owned())
            .or_else(|| self.pin.clone())
    }

    /// The tags of a run at `combo`: its parameter values (in the order of the
    /// parameters), then the `--tag`s.
    pub fn tags_of(&self, combo: &BTreeMap<String, String>) -> Vec<crate::model::Tag> {
        let params = (self.params.iter()).filter_map(|p| {
            combo.get(&p.key).map(|value| crate::model::Tag {
                key: p.key.clone(),
                value: value.clone(),
            })
        });
        params.chain(self.run.tags.iter().cloned()).collect()
    }

    /// A variant's argv for one combination of parameter values.
    pub fn command(&self, variant: usize, combo: &BTreeMap<String, String>) -> Result<Vec<String>> {
        self.variants[variant]
            .command
            .iter()
            .map(|w| expand(w, combo))
            .collect()
    }
}

/// "res=720p threads=4", or "" without parameters.
pub fn describe_combo(combo: &BTreeMap<String, String>) -> String {
    combo
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_split_like_a_shell() {
        let v = parse_variant("fast=./app --mode 'very fast' -x").unwrap();
        assert_eq!(v.name, "fast");
        assert_eq!(v.command, ["./app", "--mode", "very fast", "-x"]);
        assert!(parse_variant("noequals").is_err());
        assert!(parse_variant("=./app")
            .unwrap_err()
            .to_string()
            .contains("name"));
        assert!(parse_variant("a=")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(parse_variant("a='open")
            .unwrap_err()
            .to_string()
            .contains("quote"));
    }

    #[test]
    fn params_and_their_errors() {
        let p = parse_param("res=720p, 1080p").unwrap();
        assert_eq!(p.values, ["720p", "1080p"]);
        assert!(parse_param("res=")
            .unwrap_err()
            .to_string()
            .contains("no values"));
        assert!(parse_param("res=a,,b")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(parse_param("re s=a")
            .unwrap_err()
            .to_string()
            .contains("key"));
        assert!(parse_param("res=a,a")
            .unwrap_err()
            .to_string()
            .contains("twice"));
    }

    fn spec(variants: &[(&str, &str)], params: &[&str], runs: u32) -> ExperimentSpec {
        ExperimentSpec {
            variants: variants
                .iter()
                .map(|(n, c)| parse_variant(&format!("{n}={c}")).unwrap())
                .collect(),
            params: params.iter().map(|p| parse_param(p).unwrap()).collect(),
            runs,
            order: Order::Interleaved,
            seed: None,
            pin: None,
            prepare: None,
            run: RunSettings::default(),
            warmup_runs: 0,
            setup: None,
            cleanup: None,
        }
    }

    #[test]
    fn shell_variants_are_one_string_for_sh() {
        let v = parse_shell_variant("p=echo hi | cat").unwrap();
        assert_eq!(v.command, ["sh", "-c", "echo hi | cat"]);
        // Without --shell the same text is words: the pipe is an argument of echo.
        assert_eq!(
            parse_variant("p=echo hi | cat").unwrap().command,
            ["echo", "hi", "|", "cat"]
        );
        assert!(parse_shell_variant("p= ").is_err());
    }

    #[test]
    fn bench_metrics_must_say_which_way_is_better() {
        let mut s = spec(&[("a", "x")], &[], 3);
        s.run.metrics = vec![crate::output::MetricSpec::parse(r"req_s=rps: ([\d.]+)").unwrap()];
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains(r"--metric 'req_s:higher=rps: ([\d.]+)' (or :lower)"),
            "{e}"
        );
        s.run.metrics =
            vec![crate::output::MetricSpec::parse("t:lower=json:{res}.json:$.t").unwrap()];
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("no --param res"));
    }

    #[test]
    fn setup_once_per_variant_and_per_value_it_names() {
        let mut s = spec(&[("a", "x {r}"), ("b", "y {r}")], &["r=1,2"], 3);
        assert_eq!(
            s.per_variant(Some("make")).unwrap(),
            [(0, "make".to_owned()), (1, "make".to_owned())]
        );
        assert_eq!(
            s.per_variant(Some("make R={r}")).unwrap(),
            [
                (0, "make R=1".to_owned()),
                (0, "make R=2".to_owned()),
                (1, "make R=1".to_owned()),
                (1, "make R=2".to_owned())
            ]
        );
        s.setup = Some("make {q}".into());
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--setup uses {q}"));
    }

    #[test]
    fn validation_says_what_is_wrong() {
        let err = |s: ExperimentSpec| s.validate().unwrap_err().to_string();
        assert!(err(spec(&[("a", "x")], &[], 1)).contains("at least 2 runs"));
        assert!(err(spec(&[("a", "x"), ("a", "y")], &[], 3)).contains("used twice"));
        assert!(err(spec(&[("a", "x {res}")], &[], 3)).contains("no --param res"));
        assert!(err(spec(&[("a", "x")], &["k=1", "k=2"], 3)).contains("twice"));
        assert!(err(spec(
            &[("a", "x {k}")],
            &["k=1,2,3,4,5,6,7,8,9,10,11"],
            10_000
        ))
        .contains("110000 runs"));
        assert!(spec(&[("a", "x {res}")], &["res=1,2"], 3)
            .validate()
            .is_ok());
    }

    #[test]
    fn a_variant_gets_its_own_pin_and_each_run_its_parameter_tags() {
        let mut s = spec(&[("v1", "x {r}"), ("v2", "y {r}")], &["r=1,2"], 3);
        s.pin = Some("0".into());
        s.run.services.pins = vec!["0".into(), "v2:command=1".into()];
        assert_eq!(s.pin_of(0).as_deref(), Some("0"));
        assert_eq!(s.pin_of(1).as_deref(), Some("1"));
        s.run.tags = vec![crate::model::Tag {
            key: "build".into(),
            value: "release".into(),
        }];
        let tags: Vec<String> = (s.tags_of(&s.combinations()[1]).iter())
            .map(|t| format!("{}={}", t.key, t.value))
            .collect();
        assert_eq!(tags, ["r=2", "build=release"]);
        assert!(s.validate().is_ok());
        s.run.services.pins.push("v3:server=1".into());
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "--pin v3:server=1: no variant is named v3; the variants are v1, v2"
        );
        s.run.services.pins.pop();
        s.run.tags[0].key = "r".into();
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--tag r=release: r is a --param of this bench"));
    }

    #[test]
    fn combinations_first_parameter_slowest() {
        let s = spec(&[("a", "x {r} {c}")], &["r=1,2", "c=h264,av1"], 2);
        let all: Vec<String> = s.combinations().iter().map(describe_combo).collect();
        assert_eq!(all, ["c=h264 r=1", "c=av1 r=1", "c=h264 r=2", "c=av1 r=2"]);
        assert_eq!(
            s.command(0, &s.combinations()[1]).unwrap(),
            ["x", "1", "av1"]
        );
    }
}
