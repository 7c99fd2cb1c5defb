//! `--service NAME=CMD`, `--ready NAME=HOW` and `--pin ROLE=CPUS`: what a run starts beside
//! its command, when each is ready, and where each runs.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use regex::Regex;

/// The role name of the measured command, which no service may take.
pub const COMMAND_ROLE: &str = crate::analyze::cpu::COMMAND_ROLE;

/// How long a service may take to get ready when `--ready-timeout` is not given.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
pub struct ServiceSpec {
    pub name: String,
    pub argv: Vec<String>,
    pub ready: Ready,
    /// CPUs it is pinned to; empty: not pinned.
    pub cpus: Vec<usize>,
}

/// When a service counts as ready for the command to start.
#[derive(Clone, Debug)]
pub enum Ready {
    /// As soon as it started (no `--ready` given for it).
    Started,
    /// Something accepts TCP connections on this address.
    Tcp { host: String, port: u16 },
    /// A line of its stdout or stderr matches.
    Line(Regex),
    /// This long after it started.
    Delay(Duration),
}

impl Ready {
    pub fn describe(&self) -> String {
        match self {
            Ready::Started => "as soon as it started".into(),
            Ready::Tcp { host, port } => format!("when {host}:{port} accepts a connection"),
            Ready::Line(re) => format!("when a line of its output matches /{}/", re.as_str()),
            Ready::Delay(d) => format!("{} after it started", humantime::format_duration(*d)),
        }
    }
}

/// `NAME=VALUE` of `--service`, `--ready` and `--pin`, with an error naming the option.
fn split_named<'a>(option: &str, text: &'a str, example: &str) -> Result<(&'a str, &'a str)> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name.trim(), value.trim()))
        }
        _ => bail!("{option} {text}: expected NAME=…, e.g. {option} {example}"),
    }
}

fn check_name(name: &str) -> Result<()> {
    if name == COMMAND_ROLE {
        bail!(
            "--service {name}=…: '{COMMAND_ROLE}' is the measured command's role; name the \
             service after what it is, e.g. server"
        );
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        bail!("--service {name}=…: a service name takes letters, digits, '_' and '-' only");
    }
    Ok(())
}

/// Parses `how` of `--ready NAME=how`: `tcp:PORT`, `tcp:HOST:PORT`, `regex:RE`, `delay:D`.
pub fn parse_ready(name: &str, how: &str) -> Result<Ready> {
    let usage = "tcp:PORT, tcp:HOST:PORT, regex:PATTERN or delay:DURATION";
    let (kind, rest) = how
        .split_once(':')
        .with_context(|| format!("--ready {name}={how}: say how to tell it is ready: {usage}"))?;
    match kind {
        "tcp" => {
            let (host, port) = match rest.rsplit_once(':') {
                Some((host, port)) => (host.trim_matches(['[', ']']), port),
                None => ("127.0.0.1", rest),
            };
            let port: u16 = port.parse().ok().filter(|&p| p > 0).with_context(|| {
                format!("--ready {name}={how}: '{port}' is not a TCP port (1–65535)")
            })?;
            Ok(Ready::Tcp {
                host: host.to_owned(),
                port,
            })
        }
        "regex" => {
            let re = Regex::new(rest).map_err(|e| {
                let first = e.to_string().lines().last().unwrap_or("").trim().to_owned();
                anyhow::anyhow!("--ready {name}=regex:{rest}: not a regular expression ({first})")
            })?;
            Ok(Ready::Line(re))
        }
        "delay" => {
            let d = humantime::parse_duration(rest).map_err(|e| {
                anyhow::anyhow!("--ready {name}=delay:{rest}: {e}; write it as 500ms or 2s")
            })?;
            if d > Duration::from_secs(3600) {
                bail!("--ready {name}=delay:{rest}: at most 1h");
            }
            Ok(Ready::Delay(d))
        }
        other => bail!("--ready {name}={how}: unknown kind '{other}'; use {usage}"),
    }
}

/// Everything the service options say, checked against each other: each `--ready` and
/// `--pin` names a service given (or the command, for `--pin`), no name twice.
pub fn parse_services(
    services: &[String],
    ready: &[String],
    pins: &[(String, Vec<usize>)],
    shell: bool,
) -> Result<Vec<ServiceSpec>> {
    let mut specs: Vec<ServiceSpec> = Vec::new();
    for text in services {
        let (name, command) = split_named("--service", text, "server='./server --port 8080'")?;
        check_name(name)?;
        if specs.iter().any(|s| s.name == name) {
            bail!("--service {name}=…: two services are named {name}; give each its own name");
        }
        let argv = if shell {
            vec!["sh".into(), "-c".into(), command.to_owned()]
        } else {
            shlex::split(command)
                .filter(|a| !a.is_empty())
                .with_context(|| {
                    format!("--service {text}: the command has an unclosed quote, or is empty")
                })?
        };
        crate::session::check_runnable(&argv[0]).with_context(|| format!("--service {name}"))?;
        specs.push(ServiceSpec {
            name: name.to_owned(),
            argv,
            ready: Ready::Started,
            cpus: Vec::new(),
        });
    }
    let names = |specs: &[ServiceSpec]| {
        specs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for text in ready {
        let (name, how) = split_named("--ready", text, "server=tcp:8080")?;
        let known = names(&specs);
        let Some(spec) = specs.iter_mut().find(|s| s.name == name) else {
            bail!(
                "--ready {text}: no service named {name}; {}",
                if known.is_empty() {
                    "start one with --service NAME=CMD".to_owned()
                } else {
                    format!("the services are {known}")
                }
            );
        };
        if !matches!(spec.ready, Ready::Started) {
            bail!("--ready {name}=…: given twice; one way to tell it is ready per service");
        }
        spec.ready = parse_ready(name, how)?;
    }
    for (role, cpus) in pins {
        if role == COMMAND_ROLE {
            continue;
        }
        let known = names(&specs);
        let Some(spec) = specs.iter_mut().find(|s| &s.name == role) else {
            let services = match known.is_empty() {
                true => "start one with --service NAME=CMD".to_owned(),
                false => format!("the services are {known}"),
            };
            bail!("--pin {role}=…: no service named {role} ({services}); pin the command with --pin CPUS or --pin command=CPUS");
        };
        spec.cpus = cpus.clone();
    }
    Ok(specs)
}

/// `--pin CPUS` or `--pin ROLE=CPUS`: (role, the CPU list as given).
pub fn split_pin(text: &str) -> (String, &str) {
    match text.split_once('=') {
        Some((role, cpus)) => (role.trim().to_owned(), cpus.trim()),
        None => (COMMAND_ROLE.to_owned(), text.trim()),
    }
}

/// `VARIANT:NAME=…` of bench's `--service`, `--ready` and `--pin`: (the variant, `NAME=…`),
/// an option for that variant's runs only; `None` for one given for all. Only a colon
/// before the first `=` counts (a service name has none; a command or a `tcp:PORT` may).
pub fn split_variant(text: &str) -> Option<(&str, &str)> {
    let head = text.split_once('=').map_or(text, |(head, _)| head);
    let (variant, _) = head.split_once(':')?;
    Some((variant.trim(), &text[variant.len() + 1..]))
}

/// The name an option sets (`NAME` of `NAME=…`; the role of a `--pin`, `command` for
/// `--pin CPUS`), which a variant's own option of that name replaces.
fn option_name(text: &str, pin: bool) -> String {
    match pin {
        true => split_pin(text).0,
        false => text
            .split_once('=')
            .map_or(text, |(n, _)| n)
            .trim()
            .to_owned(),
    }
}

/// The options one variant's runs get: those given for all, each replaced by this
/// variant's own of the same name (`--service v2:server=…` in place of `--service
/// server=…`), then the variant's others. `pin`: the texts are `--pin`s.
pub fn for_variant(texts: &[String], variant: &str, pin: bool) -> Vec<String> {
    let own: Vec<&str> = texts
        .iter()
        .filter_map(|t| split_variant(t))
        .filter(|(v, _)| *v == variant)
        .map(|(_, rest)| rest)
        .collect();
    let mut chosen: Vec<String> = Vec::new();
    for text in texts.iter().filter(|t| split_variant(t).is_none()) {
        let name = option_name(text, pin);
        let replaced = own.iter().find(|o| option_name(o, pin) == name);
        chosen.push(replaced.map_or(text.as_str(), |o| o).to_owned());
    }
    for text in own {
        if !chosen.iter().any(|c| c == text) {
            chosen.push(text.to_owned());
        }
    }
    chosen
}

/// `framelab run` has one command: a `VARIANT:` prefix, bench's, is refused by name.
pub fn refuse_variant_prefix(option: &str, texts: &[String]) -> Result<()> {
    if let Some((variant, rest)) = texts.iter().find_map(|t| split_variant(t)) {
        bail!(
            "{option} {variant}:{rest}: '{variant}:' gives it to one variant of a framelab \
             bench; this command has no variants: give it as {option} {rest}"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(services: &[&str], ready: &[&str]) -> String {
        let s: Vec<String> = services.iter().map(|s| s.to_string()).collect();
        let r: Vec<String> = ready.iter().map(|s| s.to_string()).collect();
        parse_services(&s, &r, &[], false)
            .map(|_| String::new())
            .unwrap_or_else(|e| format!("{e:#}"))
    }

    #[test]
    fn services_and_their_readiness_parse() {
        let s = parse_services(
            &["server=sleep 10".into(), "db=sleep 20".into()],
            &["server=tcp:8080".into(), "db=regex:ready to accept".into()],
            &[("db".into(), vec![1])],
            false,
        )
        .unwrap();
        assert_eq!(s[0].argv, ["sleep", "10"]);
        assert!(matches!(&s[0].ready, Ready::Tcp { host, port: 8080 } if host == "127.0.0.1"));
        assert!(matches!(&s[1].ready, Ready::Line(re) if re.is_match("db: ready to accept conns")));
        assert_eq!(s[1].cpus, [1]);
        assert!(matches!(
            parse_ready("x", "tcp:[::1]:9000").unwrap(),
            Ready::Tcp { host, port: 9000 } if host == "::1"
        ));
        assert!(matches!(
            parse_ready("x", "delay:250ms").unwrap(),
            Ready::Delay(d) if d == Duration::from_millis(250)
        ));
    }

    #[test]
    fn bad_service_options_say_what_to_write() {
        assert!(err(&["server=sleep 1", "server=sleep 2"], &[])
            .contains("two services are named server"));
        assert!(err(&["command=sleep 1"], &[]).contains("the measured command's role"));
        assert!(err(&["server"], &[]).contains("expected NAME=…"));
        assert!(err(&["server=sleep 1"], &["db=tcp:1"])
            .contains("no service named db; the services are server"));
        assert!(err(&["server=sleep 1"], &["server=tcp:http"]).contains("is not a TCP port"));
        assert!(err(&["server=sleep 1"], &["server=regex:(unclosed"])
            .contains("not a regular expression"));
        assert!(err(&["server=sleep 1"], &["server=port:80"]).contains("unknown kind 'port'"));
        assert!(err(&["server=no-such-program-here"], &[]).contains("command not found"));
    }

    #[test]
    fn a_variant_gets_the_options_for_all_with_its_own_in_their_place() {
        let texts = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let services = texts(&[
            "server=./server --port 8080",
            "v2:server=./server-v2 --port 8080",
            "db=./db",
            "v3:cache=./cache --url=tcp:x",
        ]);
        assert_eq!(
            for_variant(&services, "v2", false),
            ["server=./server-v2 --port 8080", "db=./db"]
        );
        assert_eq!(
            for_variant(&services, "v3", false),
            [
                "server=./server --port 8080",
                "db=./db",
                "cache=./cache --url=tcp:x"
            ]
        );
        // A --ready's tcp:PORT and a command's colons are no variant prefix.
        assert_eq!(split_variant("server=tcp:8080"), None);
        assert_eq!(
            split_variant("v2:server=tcp:8080"),
            Some(("v2", "server=tcp:8080"))
        );
        let pins = texts(&["0-1", "server=2", "v2:command=3", "v2:server=1"]);
        assert_eq!(for_variant(&pins, "v2", true), ["command=3", "server=1"]);
        assert_eq!(for_variant(&pins, "v1", true), ["0-1", "server=2"]);
        assert!(refuse_variant_prefix("--pin", &pins)
            .unwrap_err()
            .to_string()
            .contains("give it as --pin command=3"));
    }
}
