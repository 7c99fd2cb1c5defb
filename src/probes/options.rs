//! What the probe options of `framelab run` ask for (`--probe`, `--usdt`, `--usdt-event`,
//! `--tracepoint`, `--frame-arg`, `--frame-probe`): parsed and checked once, every refusal
//! one line saying what to change. Nothing here looks at a file or the kernel.

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

/// The probe options as given, unchecked: what a bench keeps in its experiment file so
/// that every run (and `--resume`) attaches the same probes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeText {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usdt: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usdt_events: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tracepoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_probe: Option<String>,
    /// `--pair STAGE=START:END[:KEY]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<String>,
}

impl ProbeText {
    pub fn is_empty(&self) -> bool {
        *self == ProbeText::default()
    }

    /// Checked: every refusal is one line saying what to change.
    pub fn parse(&self) -> Result<ProbeOptions, String> {
        ProbeOptions::parse(
            &self.functions,
            &self.usdt,
            &self.usdt_events,
            &self.tracepoints,
            &self.frame_args,
            self.frame_probe.as_deref(),
        )?
        .with_pairs(&self.pairs)
    }
}

/// What `--probe`, `--usdt`, `--usdt-event`, `--frame-arg` and `--frame-probe` ask for,
/// checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    pub probes: Vec<ProbeRequest>,
    /// `--frame-arg STAGE=argN`.
    pub frame_args: Vec<(String, u8)>,
    pub frame_probe: Option<Target>,
    /// `--pair STAGE=START:END[:KEY]`: events paired into spans while recording.
    pub pairs: Vec<crate::analyze::pair::StagePair>,
}

impl ProbeOptions {
    /// With `--pair`s, each a stage of its own.
    pub fn with_pairs(mut self, pairs: &[String]) -> Result<ProbeOptions, String> {
        for text in pairs {
            let pair = crate::analyze::pair::StagePair::parse(text)?;
            if let Some(p) = self
                .probes
                .iter()
                .find(|p| p.is_span() && p.stage == pair.stage)
            {
                return Err(format!(
                    "--pair {text}: stage {} is already {}: give the pair a stage of its own",
                    pair.stage,
                    p.option()
                ));
            }
            // A probe stage's spans are no events: nothing would ever pair.
            for name in [&pair.spec.start, &pair.spec.end] {
                let is_event = self.probes.iter().any(|p| !p.is_span() && &p.stage == name);
                if let (false, Some(p)) = (
                    is_event,
                    self.probes.iter().find(|p| p.is_span() && &p.stage == name),
                ) {
                    return Err(format!(
                        "--pair {text}: {name} is the stage of {}, not an event: pair events \
                         (--tracepoint, --usdt-event, or the SDK's)",
                        p.option()
                    ));
                }
            }
            if self.pairs.iter().any(|p| p.stage == pair.stage) {
                return Err(format!(
                    "--pair {}= is given twice: give it once",
                    pair.stage
                ));
            }
            self.pairs.push(pair);
        }
        Ok(self)
    }

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
                    "{} is probed twice (stages {} and {}): probe it once",
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
            pairs: Vec::new(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.probes.is_empty() && self.pairs.is_empty()
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
    fn a_pair_is_a_stage_of_its_own_made_of_events() {
        let text = |pairs: &[&str]| ProbeText {
            functions: strings(&["encode=p:f"]),
            tracepoints: strings(&["enter=a:b", "exit=a:c"]),
            pairs: strings(pairs),
            ..ProbeText::default()
        };
        let ok = text(&["sleep=enter:exit:tid"]).parse().unwrap();
        assert_eq!(ok.pairs[0].stage, "sleep");
        assert!(!ProbeText {
            pairs: strings(&["s=a:b"]),
            ..ProbeText::default()
        }
        .parse()
        .unwrap()
        .is_empty());
        let e = text(&["encode=enter:exit"]).parse().unwrap_err();
        assert!(
            e.contains("stage encode is already --probe encode=p:f"),
            "{e}"
        );
        let e = text(&["s=enter:exit", "s=exit:enter"]).parse().unwrap_err();
        assert!(e.contains("--pair s= is given twice"), "{e}");
        let e = text(&["s=encode:exit"]).parse().unwrap_err();
        assert!(
            e.contains("encode is the stage of --probe encode=p:f, not an event"),
            "{e}"
        );
        assert!(text(&["s=enter"]).parse().is_err());
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
}
