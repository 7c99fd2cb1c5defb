//! Stages from programs that were not built with the SDK (docs/probes.md): a function's
//! entry and return, seen by the kernel through the uprobe PMU of `perf_event_open`, become
//! ordinary spans of the run, so report, hist, `--live`, compare and export need nothing new.
//!
//! - `mod` (here): what the options ask for (`--probe`, `--frame-arg`, `--frame-probe`),
//!   checked once, and resolved to files and offsets before the command starts;
//! - `elf`: a binary's functions and where they lie in the file;
//! - `uprobe`: opening uprobes through the shared perf-event layer (`crate::perf_event`);
//! - `recorder`: their per-CPU rings drained into spans of the run's threads;
//! - `cost`: what one hit costs on this machine, measured, by first instruction.

pub mod cost;
pub mod elf;
pub mod recorder;
pub mod tracepoint;
pub mod uprobe;
pub mod usdt;

use std::path::{Path, PathBuf};

/// Where in a binary to probe: a function by name, or a file offset (`0x1a2b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    Function(String),
    Offset(u64),
}

/// `BINARY:FUNCTION` or `BINARY:0xOFFSET` as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub binary: String,
    pub place: Place,
}

impl Target {
    /// Splits at the last `:` (a path may hold one; a function name never does).
    pub fn parse(text: &str) -> Result<Target, String> {
        let (binary, place) = text
            .rsplit_once(':')
            .filter(|(b, p)| !b.is_empty() && !p.is_empty())
            .ok_or_else(|| {
                format!(
                    "{text:?} is not BINARY:FUNCTION: give a binary (a path, a program on PATH \
                     or a library's soname) and a function, e.g. /usr/bin/prog:encode_frame"
                )
            })?;
        let place = match place.strip_prefix("0x") {
            Some(hex) => Place::Offset(
                u64::from_str_radix(hex, 16)
                    .map_err(|_| format!("{place:?} in {text:?} is not a hexadecimal offset"))?,
            ),
            None => Place::Function(place.to_owned()),
        };
        Ok(Target {
            binary: binary.to_owned(),
            place,
        })
    }

    pub fn describe(&self) -> String {
        match &self.place {
            Place::Function(name) => format!("{}:{name}", self.binary),
            Place::Offset(offset) => format!("{}:{offset:#x}", self.binary),
        }
    }
}

/// What one probe option asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--probe STAGE=BINARY:FUNCTION`: a function, from entry to return.
    Function(Target),
    /// `--usdt STAGE=BINARY:PROVIDER:BEGIN,END`: from one USDT probe to the next.
    UsdtSpan {
        binary: String,
        provider: String,
        begin: String,
        end: String,
    },
    /// `--usdt-event NAME=BINARY:PROVIDER:PROBE`: an instant, keyed by its first argument.
    UsdtEvent {
        binary: String,
        provider: String,
        probe: String,
    },
    /// `--tracepoint NAME=SUBSYSTEM:EVENT[:FIELD]`: an instant, keyed by a field.
    Tracepoint {
        group: String,
        event: String,
        field: Option<String>,
    },
}

/// One probe option: a stage (or event) name and what to probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRequest {
    pub stage: String,
    pub kind: Kind,
}

impl ProbeRequest {
    /// `--probe STAGE=BINARY:FUNCTION`.
    pub fn parse(text: &str) -> Result<ProbeRequest, String> {
        let (stage, target) = split_name(
            text,
            "--probe",
            "STAGE=BINARY:FUNCTION",
            "encode=/usr/lib/x86_64-linux-gnu/libx264.so.164:x264_encoder_encode",
        )?;
        Ok(ProbeRequest {
            stage,
            kind: Kind::Function(
                Target::parse(target).map_err(|e| format!("--probe {text:?}: {e}"))?,
            ),
        })
    }

    /// `--usdt STAGE=BINARY:PROVIDER:BEGIN,END`.
    pub fn parse_usdt(text: &str) -> Result<ProbeRequest, String> {
        let form = "STAGE=BINARY:PROVIDER:BEGIN,END";
        let (stage, rest) = split_name(
            text,
            "--usdt",
            form,
            "encode=./prog:demo:encode_begin,encode_end",
        )?;
        let parts: Vec<&str> = rest.rsplitn(3, ':').collect();
        let [pair, provider, binary] = parts[..] else {
            return Err(format!("--usdt {text:?} is not {form}"));
        };
        let Some((begin, end)) = pair
            .split_once(',')
            .filter(|(b, e)| !b.is_empty() && !e.is_empty())
        else {
            return Err(format!(
                "--usdt {text:?}: give the probes that begin and end the stage, BEGIN,END"
            ));
        };
        Ok(ProbeRequest {
            stage,
            kind: Kind::UsdtSpan {
                binary: binary.to_owned(),
                provider: provider.to_owned(),
                begin: begin.to_owned(),
                end: end.to_owned(),
            },
        })
    }

    /// `--usdt-event NAME=BINARY:PROVIDER:PROBE`.
    pub fn parse_usdt_event(text: &str) -> Result<ProbeRequest, String> {
        let form = "NAME=BINARY:PROVIDER:PROBE";
        let (stage, rest) = split_name(text, "--usdt-event", form, "done=./prog:demo:frame_done")?;
        let parts: Vec<&str> = rest.rsplitn(3, ':').collect();
        let [probe, provider, binary] = parts[..] else {
            return Err(format!("--usdt-event {text:?} is not {form}"));
        };
        if [probe, provider, binary].iter().any(|p| p.is_empty()) {
            return Err(format!("--usdt-event {text:?} is not {form}"));
        }
        Ok(ProbeRequest {
            stage,
            kind: Kind::UsdtEvent {
                binary: binary.to_owned(),
                provider: provider.to_owned(),
                probe: probe.to_owned(),
            },
        })
    }

    /// `--tracepoint NAME=SUBSYSTEM:EVENT[:FIELD]`.
    pub fn parse_tracepoint(text: &str) -> Result<ProbeRequest, String> {
        let form = "NAME=SUBSYSTEM:EVENT[:FIELD]";
        let (stage, rest) = split_name(
            text,
            "--tracepoint",
            form,
            "vblank=drm:drm_vblank_event:crtc",
        )?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (group, event, field) = match parts[..] {
            [g, e] => (g, e, None),
            [g, e, f] => (g, e, Some(f.to_owned())),
            _ => return Err(format!("--tracepoint {text:?} is not {form}")),
        };
        if group.is_empty() || event.is_empty() || field.as_deref() == Some("") {
            return Err(format!("--tracepoint {text:?} is not {form}"));
        }
        Ok(ProbeRequest {
            stage,
            kind: Kind::Tracepoint {
                group: group.to_owned(),
                event: event.to_owned(),
                field,
            },
        })
    }

    /// A span stage (not an event).
    pub fn is_span(&self) -> bool {
        matches!(self.kind, Kind::Function(_) | Kind::UsdtSpan { .. })
    }

    /// What is probed, as given (`prog:encode_frame`, `prog:demo:begin,end`).
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Function(target) => target.describe(),
            Kind::UsdtSpan {
                binary,
                provider,
                begin,
                end,
            } => format!("{binary}:{provider}:{begin},{end}"),
            Kind::UsdtEvent {
                binary,
                provider,
                probe,
            } => format!("{binary}:{provider}:{probe}"),
            Kind::Tracepoint {
                group,
                event,
                field,
            } => match field {
                Some(f) => format!("{group}:{event}:{f}"),
                None => format!("{group}:{event}"),
            },
        }
    }

    /// The option that gave it, as typed.
    pub fn option(&self) -> String {
        let flag = match self.kind {
            Kind::Function(_) => "--probe",
            Kind::UsdtSpan { .. } => "--usdt",
            Kind::UsdtEvent { .. } => "--usdt-event",
            Kind::Tracepoint { .. } => "--tracepoint",
        };
        format!("{flag} {}={}", self.stage, self.describe())
    }
}

/// `NAME=REST` of option `flag`, or the line saying what it should be.
fn split_name<'a>(
    text: &'a str,
    flag: &str,
    form: &str,
    example: &str,
) -> Result<(String, &'a str), String> {
    text.split_once('=')
        .filter(|(s, rest)| !s.trim().is_empty() && !rest.is_empty())
        .map(|(s, rest)| (s.trim().to_owned(), rest))
        .ok_or_else(|| format!("{flag} {text:?} is not {form}, e.g. {flag} {example}"))
}

/// Where a probe stage's frame ids come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameSource {
    /// The Nth call of the stage is frame N (from 1).
    CallCount,
    /// An integer argument of the probed call (1: rdi, 2: rsi, …, x86-64 SysV), or of the
    /// USDT probe that begins the stage.
    Argument(u8),
    /// The frame `--frame-probe` started last (its Nth call starts frame N).
    FrameProbe,
}

/// What `--probe`, `--usdt`, `--usdt-event`, `--frame-arg` and `--frame-probe` ask for,
/// checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    pub probes: Vec<ProbeRequest>,
    /// `--frame-arg STAGE=argN`.
    pub frame_args: Vec<(String, u8)>,
    pub frame_probe: Option<Target>,
}

impl ProbeOptions {
    /// From the options' text; every refusal is one line saying what to change.
    pub fn parse(
        functions: &[String],
        usdt: &[String],
        usdt_events: &[String],
        tracepoints: &[String],
        frame_args: &[String],
        frame_probe: Option<&str>,
    ) -> Result<ProbeOptions, String> {
        let mut probes = Vec::new();
        for text in functions {
            probes.push(ProbeRequest::parse(text)?);
        }
        for text in usdt {
            probes.push(ProbeRequest::parse_usdt(text)?);
        }
        for text in usdt_events {
            probes.push(ProbeRequest::parse_usdt_event(text)?);
        }
        for text in tracepoints {
            probes.push(ProbeRequest::parse_tracepoint(text)?);
        }
        for (i, p) in probes.iter().enumerate() {
            let same_name = probes[..i]
                .iter()
                .find(|q| q.stage == p.stage && q.is_span() == p.is_span());
            if let Some(q) = same_name {
                return Err(format!(
                    "{}= is given twice ({} and {}): give each its own name",
                    p.option().split('=').next().unwrap_or_default(),
                    q.describe(),
                    p.describe()
                ));
            }
            if let Some(q) = probes[..i].iter().find(|q| q.kind == p.kind) {
                return Err(format!(
                    "{} is probed twice ({} and {}): probe it once",
                    p.describe(),
                    q.stage,
                    p.stage
                ));
            }
        }
        let mut parsed_args = Vec::new();
        for text in frame_args {
            let (stage, arg) = text.split_once('=').ok_or_else(|| {
                format!("--frame-arg {text:?} is not STAGE=argN, e.g. --frame-arg encode=arg1")
            })?;
            let n = arg
                .strip_prefix("arg")
                .and_then(|n| n.parse::<u8>().ok())
                .filter(|n| (1..=6).contains(n))
                .ok_or_else(|| {
                    format!(
                        "--frame-arg {text:?}: {arg:?} is not arg1 … arg6 (the integer argument \
                         registers of x86-64: rdi, rsi, rdx, rcx, r8, r9)"
                    )
                })?;
            if !probes.iter().any(|p| p.is_span() && p.stage == stage) {
                return Err(format!(
                    "--frame-arg {text:?}: no --probe or --usdt stage {stage}: name one ({})",
                    stage_list(&probes)
                ));
            }
            if parsed_args.iter().any(|(s, _)| s == stage) {
                return Err(format!("--frame-arg {stage}= is given twice: give it once"));
            }
            parsed_args.push((stage.to_owned(), n));
        }
        let frame_probe = frame_probe
            .map(|t| Target::parse(t).map_err(|e| format!("--frame-probe: {e}")))
            .transpose()?;
        if frame_probe.is_some() && !probes.iter().any(ProbeRequest::is_span) {
            return Err(
                "--frame-probe numbers the frames of probe stages: give at least one \
                        --probe STAGE=BINARY:FUNCTION or --usdt"
                    .to_owned(),
            );
        }
        Ok(ProbeOptions {
            probes,
            frame_args: parsed_args,
            frame_probe,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Where stage `stage`'s frame ids come from.
    pub fn frame_source(&self, stage: &str) -> FrameSource {
        match self.frame_args.iter().find(|(s, _)| s == stage) {
            Some((_, n)) => FrameSource::Argument(*n),
            None if self.frame_probe.is_some() => FrameSource::FrameProbe,
            None => FrameSource::CallCount,
        }
    }
}

fn stage_list(probes: &[ProbeRequest]) -> String {
    if probes.is_empty() {
        return "none given".to_owned();
    }
    probes
        .iter()
        .map(|p| p.stage.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A probe point found in its file: what the kernel is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePoint {
    /// The file, as found (absolute).
    pub path: PathBuf,
    pub file_offset: u64,
    /// A USDT probe's semaphore (file offset), raised while the probe is attached; 0: none.
    pub semaphore_offset: u64,
    /// The function it lies in, when known.
    pub function: String,
    /// What its first instruction makes a hit cost.
    pub class: cost::InstructionClass,
}

/// Finds `target`'s file and offset. `Err` is the line to print (no such file, not ELF, no
/// such function with the near matches, an offset outside every function).
pub fn locate(target: &Target) -> Result<ProbePoint, String> {
    let path = find_binary(&target.binary)?;
    let binary = elf::Binary::read(&path)?;
    let (file_offset, function) = match &target.place {
        Place::Function(name) => {
            let Some(f) = binary.function(name) else {
                let near = binary.near(name, 5);
                let hint = if near.is_empty() {
                    format!(
                        "none of its {} functions is close; list them with framelab probes {}",
                        binary.functions.len(),
                        path.display()
                    )
                } else {
                    format!("near matches: {}", near.join(", "))
                };
                return Err(format!(
                    "{} has no function {name} ({} functions in .symtab and .dynsym); {hint}",
                    path.display(),
                    binary.functions.len()
                ));
            };
            (f.file_offset, f.name.clone())
        }
        Place::Offset(offset) => {
            let Some(f) = binary.function_at(*offset) else {
                return Err(format!(
                    "{}:{offset:#x} is not inside any function of the file: give a function's \
                     name, or an offset from framelab probes {}",
                    path.display(),
                    path.display()
                ));
            };
            (*offset, format!("{}+{:#x}", f.name, offset - f.file_offset))
        }
    };
    Ok(ProbePoint {
        class: cost::InstructionClass::of(binary.bytes_at(file_offset)),
        path,
        file_offset,
        semaphore_offset: 0,
        function,
    })
}

/// A binary named by path, as a program on PATH, or as a library's soname (`libx264.so.164`,
/// or `libx264.so` for whichever version the loader's cache holds).
pub fn find_binary(name: &str) -> Result<PathBuf, String> {
    if name.contains('/') {
        let path = Path::new(name);
        return match path.metadata() {
            Ok(m) if m.is_file() => Ok(std::path::absolute(path).unwrap_or(path.to_owned())),
            Ok(_) => Err(format!(
                "{name} is not a file: give an executable or a library"
            )),
            Err(e) => Err(format!("cannot read {name}: {e}")),
        };
    }
    if let Some(found) = on_path(name) {
        return Ok(found);
    }
    if let Some(found) = in_loader_cache(name) {
        return Ok(found);
    }
    Err(format!(
        "no binary {name}: not on PATH and not a library the loader's cache knows (ldconfig -p); \
         give its path"
    ))
}

fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `ldconfig -p` lines: `\tlibx264.so.164 (libc6,x86-64) => /lib/x86_64-linux-gnu/libx264.so.164`.
fn in_loader_cache(name: &str) -> Option<PathBuf> {
    let output = std::process::Command::new("ldconfig")
        .arg("-p")
        .output()
        .or_else(|_| {
            std::process::Command::new("/sbin/ldconfig")
                .arg("-p")
                .output()
        })
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let entries: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| l.contains("x86-64") || !l.contains("libc6,"))
        .filter_map(|l| {
            let (left, path) = l.split_once("=>")?;
            Some((left.split_whitespace().next()?, path.trim()))
        })
        .collect();
    let exact = entries.iter().find(|(soname, _)| *soname == name);
    let versioned = || {
        entries.iter().find(|(soname, _)| {
            soname
                .strip_prefix(name)
                .is_some_and(|r| r.starts_with('.'))
        })
    };
    exact.or_else(versioned).map(|(_, p)| PathBuf::from(p))
}

/// Above this share of a thread's time, the probes themselves are what is measured.
pub const DOMINATING_SHARE_PCT: f64 = 5.0;

/// What a report says of a run's probes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeSummary {
    pub probes: Vec<crate::model::ProbeFacts>,
    pub lost: u64,
    /// The thread the probes cost most: its id, the cost in ns, and that as a share of the
    /// run's length.
    pub busiest_tid: Option<u32>,
    pub busiest_cost_ns: i64,
    pub busiest_share_pct: f64,
}

/// The probes of a recorded run, if it had any.
pub fn summary(meta: &crate::model::RunMeta) -> Option<ProbeSummary> {
    let facts = &meta.session;
    if facts.probes.is_empty() {
        return None;
    }
    let length_ns = meta.window_end_ns.max(1);
    // Tracepoints alone cost the run's threads nothing framelab measured.
    let (tid, cost) = facts
        .probe_busiest_thread
        .filter(|(_, cost)| *cost > 0)
        .unzip();
    let cost = cost.unwrap_or(0);
    Some(ProbeSummary {
        probes: facts.probes.clone(),
        lost: facts.probe_records_lost,
        busiest_tid: tid,
        busiest_cost_ns: cost,
        busiest_share_pct: cost as f64 * 100.0 / length_ns as f64,
    })
}

/// One stderr line per probe that saw nothing or lost something: the end of a run is where
/// someone reading the terminal looks (the report's header says the same).
pub fn say_what_was_missed(facts: &[crate::model::ProbeFacts], lost: u64) {
    for p in facts {
        let option = if p.frame_probe {
            format!("--frame-probe {}", p.target)
        } else {
            format!("--probe {}={}", p.stage, p.target)
        };
        if p.hits == 0 {
            eprintln!(
                "framelab: warning: {option}: 0 hits: no process of the run called {} in {} \
                 (check that the command loads that very file: ldd, or /proc/PID/maps while \
                 it runs)",
                p.function, p.path
            );
        }
        if p.unmatched_returns + p.unfinished > 0 {
            eprintln!(
                "framelab: warning: {option}: {} returns from calls entered before the probe \
                 was placed and {} calls still running at the end were not made spans",
                p.unmatched_returns, p.unfinished
            );
        }
    }
    if lost > 0 {
        eprintln!(
            "framelab: warning: {lost} probe samples were lost (the kernel's ring was full): \
             their spans are missing"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_probe_is_stage_binary_and_function_or_offset() {
        let p = ProbeRequest::parse("encode=/usr/lib/libx.so.1:x_encode").unwrap();
        assert_eq!(p.stage, "encode");
        let Kind::Function(target) = p.kind else {
            panic!("a function")
        };
        assert_eq!(target.binary, "/usr/lib/libx.so.1");
        assert_eq!(target.place, Place::Function("x_encode".into()));
        let p = ProbeRequest::parse("e=prog:0x1a2b").unwrap();
        assert_eq!(
            p.kind,
            Kind::Function(Target::parse("prog:0x1a2b").unwrap())
        );
        for bad in [
            "encode",
            "=prog:f",
            "encode=prog",
            "encode=prog:",
            "e=prog:0xzz",
        ] {
            assert!(ProbeRequest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_probe_given_twice_is_refused() {
        let twice = ProbeOptions::parse(&strings(&["a=p:f", "b=p:f"]), &[], &[], &[], &[], None);
        assert!(twice.unwrap_err().contains("probed twice"));
        let same_stage =
            ProbeOptions::parse(&strings(&["a=p:f", "a=p:g"]), &[], &[], &[], &[], None);
        assert!(same_stage.unwrap_err().contains("given twice"));
        let usdt = ProbeOptions::parse(
            &[],
            &strings(&["a=p:x:b,e", "b=p:x:b,e"]),
            &[],
            &[],
            &[],
            None,
        );
        assert!(usdt.unwrap_err().contains("probed twice"));
    }

    #[test]
    fn frame_args_name_a_probe_stage_and_an_argument_register() {
        let parse = |args: &[&str], frame_probe| {
            ProbeOptions::parse(
                &strings(&["encode=p:f"]),
                &[],
                &[],
                &[],
                &strings(args),
                frame_probe,
            )
        };
        let ok = parse(&["encode=arg1"], None).unwrap();
        assert_eq!(ok.frame_source("encode"), FrameSource::Argument(1));
        let unknown = parse(&["x=arg1"], None);
        assert!(unknown
            .unwrap_err()
            .contains("no --probe or --usdt stage x"));
        let bad = parse(&["encode=arg7"], None);
        assert!(bad.unwrap_err().contains("arg1 … arg6"));
        let probe = parse(&[], Some("p:frame")).unwrap();
        assert_eq!(probe.frame_source("encode"), FrameSource::FrameProbe);
    }

    #[test]
    fn usdt_options_name_a_provider_and_their_probes() {
        let p = ProbeRequest::parse_usdt("encode=/a:b/prog:demo:begin,end").unwrap();
        assert_eq!(
            p.kind,
            Kind::UsdtSpan {
                binary: "/a:b/prog".into(),
                provider: "demo".into(),
                begin: "begin".into(),
                end: "end".into()
            }
        );
        assert!(ProbeRequest::parse_usdt("encode=prog:demo:begin").is_err());
        assert!(ProbeRequest::parse_usdt("encode=demo:begin,end").is_err());
        let e = ProbeRequest::parse_usdt_event("done=prog:demo:frame_done").unwrap();
        assert!(!e.is_span());
        assert_eq!(e.option(), "--usdt-event done=prog:demo:frame_done");
        assert!(ProbeRequest::parse_usdt_event("done=prog:frame_done").is_err());
        let t = ProbeRequest::parse_tracepoint("w=syscalls:sys_enter_write:count").unwrap();
        assert_eq!(t.describe(), "syscalls:sys_enter_write:count");
        assert!(!t.is_span());
        assert!(ProbeRequest::parse_tracepoint("w=syscalls").is_err());
        assert!(ProbeRequest::parse_tracepoint("w=a:b:c:d").is_err());
    }

    #[test]
    fn a_missing_binary_says_where_it_was_looked_for() {
        let e = find_binary("no-such-binary-framelab").unwrap_err();
        assert!(e.contains("not on PATH"), "{e}");
        assert!(find_binary("/no/such/file")
            .unwrap_err()
            .contains("cannot read"));
    }
}
