//! The probes of a run while it goes: on every CPU, each probe's entry and return events
//! (and `--frame-probe`'s entry) write into one ring per CPU; the collector drains them
//! with the SDK's rings, and each entry is paired with its thread's next return of the same
//! probe into a span. Events are opened for every task, before the command starts, and
//! kept only for the run's processes (`crate::perf_event::members`).

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use super::cost::{self, Calibration, InstructionClass, Shape};
use super::tracepoint;
use super::uprobe::{self, Pmu};
use super::usdt::{self, Argument};
use super::{locate, FrameSource, Kind, ProbeOptions, ProbePoint, ProbeRequest};
use crate::model::ProbeFacts;
use crate::perf_event::bindings as b;
use crate::perf_event::cursor::{self, Cursor};
use crate::perf_event::members::Membership;
use crate::perf_event::task_records::{self, TaskRecord};
use crate::perf_event::{self, Ring};
use crate::sched::tracefs::Field;

/// 256 KiB a CPU: about 6,000 hits, over 0.5 s of 10,000 hits a second; drained every
/// few milliseconds.
const RING_PAGES: usize = 64;

/// One call of a probed function on one thread (or one stretch from a USDT probe to its
/// end probe): from entry to return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSpan {
    /// Index into [`Recorder::stages`].
    pub probe: usize,
    pub pid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC.
    pub start_mono_ns: i64,
    pub end_mono_ns: i64,
    pub frame: u64,
}

/// One hit of a `--usdt-event` probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeEvent {
    /// Index into [`Recorder::stages`].
    pub probe: usize,
    pub pid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC.
    pub mono_ns: i64,
    pub key: u64,
    /// Whether its process is one of the run's (a tracepoint's may be any task's).
    pub of_run: bool,
}

/// What a drain found.
#[derive(Debug, Default)]
pub struct Drained {
    pub spans: Vec<ProbeSpan>,
    pub events: Vec<ProbeEvent>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A function's entry, or the USDT probe that begins a stage.
    Begin,
    /// A function's return, or the USDT probe that ends a stage.
    End,
    /// A `--usdt-event` probe.
    Event,
    /// `--frame-probe`: starts the next frame.
    Frame,
    /// The kernel lost samples before this time (the count is the hit's `key`).
    Lost,
}

/// What the kernel is asked to watch.
#[derive(Clone, Debug)]
enum Source {
    Uprobe {
        point: ProbePoint,
        retprobe: bool,
    },
    /// A tracepoint, and the raw field its events are keyed by.
    Tracepoint {
        id: u64,
        field: Field,
    },
}

/// One event to open on every CPU.
#[derive(Clone, Debug)]
struct EventSpec {
    role: Role,
    probe: usize,
    source: Source,
    /// Read at the hit: the frame id or the event's key.
    key: Option<Argument>,
    /// For error lines: the option that asked for it.
    what: String,
}

/// What the samples of one event are.
#[derive(Clone, Copy, Debug)]
struct EventRole {
    role: Role,
    probe: usize,
    key: Option<Argument>,
    /// A tracepoint's key field: its samples carry the raw record.
    field: Option<Field>,
}

/// One sample, decoded.
#[derive(Clone, Copy, Debug)]
struct Hit {
    time: u64,
    role: Role,
    probe: usize,
    pid: u32,
    tid: u32,
    /// The frame id or key read at the hit (`key`), else 0.
    key: u64,
}

struct Attached {
    request: ProbeRequest,
    /// A tracepoint's events are kept whichever task they happen on (an interrupt's is
    /// anyone's); a uprobe's only on the run's processes.
    any_task: bool,
    /// Where it begins (a USDT probe may have several sites: the first).
    point: ProbePoint,
    frames: FrameSource,
    /// Entry and return of a function, or begin and end of a USDT stage: 2; an event: 1.
    hits_per_call: i64,
    cost_ns: Option<i64>,
    /// What of the cost lies inside each span, taken off it.
    subtract_ns: Option<i64>,
    /// Of the run's threads.
    hits: u64,
    spans: u64,
    unmatched_returns: u64,
    /// Spans shorter than what is subtracted: made 0 long.
    clamped: u64,
    /// Calls open when samples were lost: not made spans (their return may be among them).
    cut_by_loss: u64,
}

/// `--frame-probe`: a function whose every entry starts a frame.
struct FrameProbe {
    target: String,
    point: ProbePoint,
    hits: u64,
    /// What one hit costs the program (an entry-only uprobe).
    cost_ns: Option<i64>,
}

pub struct Recorder {
    probes: Vec<Attached>,
    /// `--pair`: paired by the collector, which sees every event of the run.
    pairs: Vec<crate::analyze::pair::StagePair>,
    frame_probe: Option<FrameProbe>,
    rings: Vec<Ring>,
    /// The events writing into another event's ring.
    others: Vec<OwnedFd>,
    /// Event id → what its samples are.
    roles: HashMap<u64, EventRole>,
    members: Membership,
    /// Calls not returned from yet, by thread and probe: (time, frame), innermost last.
    open: HashMap<(u32, usize), Vec<(u64, u64)>>,
    /// The frame `--frame-probe` started last.
    frame: u64,
    /// Each thread's hits and what they cost it, in ns.
    thread_cost: HashMap<u32, (u64, i64)>,
    lost: u64,
    batch: Vec<Hit>,
}

/// The register holding integer argument `n` (1-based) of the x86-64 SysV convention.
fn argument_register(n: u8) -> Argument {
    let reg = match n {
        1 => b::PERF_REG_X86_DI,
        2 => b::PERF_REG_X86_SI,
        3 => b::PERF_REG_X86_DX,
        4 => b::PERF_REG_X86_CX,
        5 => b::PERF_REG_X86_R8,
        _ => b::PERF_REG_X86_R9,
    };
    Argument::Register {
        reg,
        size: 8,
        signed: false,
    }
}

/// The events of one probe option, found in their files. `Err` is the line to print.
fn resolve(
    index: usize,
    request: &ProbeRequest,
    frames: FrameSource,
) -> Result<(Vec<EventSpec>, ProbePoint, i64), String> {
    let what = request.option();
    let fail = |e: String| format!("{what}: {e}");
    let spec = |role, point: &ProbePoint, retprobe, key| EventSpec {
        role,
        probe: index,
        source: Source::Uprobe {
            point: point.clone(),
            retprobe,
        },
        key,
        what: what.clone(),
    };
    let frame_arg = match frames {
        FrameSource::Argument(n) => Some(n),
        _ => None,
    };
    match &request.kind {
        Kind::Function(target) => {
            let point = locate(target).map_err(fail)?;
            let key = frame_arg.map(argument_register);
            let events = vec![
                spec(Role::Begin, &point, false, key),
                spec(Role::End, &point, true, None),
            ];
            Ok((events, point, 2))
        }
        Kind::UsdtSpan {
            binary,
            provider,
            begin,
            end,
        } => {
            let begins = usdt::locate(binary, provider, begin).map_err(fail)?;
            let ends = usdt::locate(binary, provider, end).map_err(fail)?;
            let mut events = Vec::new();
            for site in &begins {
                let key = match frame_arg {
                    Some(n) => Some(site.argument(n as usize).map_err(fail)?),
                    None => None,
                };
                events.push(spec(Role::Begin, &site.point(), false, key));
            }
            for site in &ends {
                events.push(spec(Role::End, &site.point(), false, None));
            }
            Ok((events, begins[0].point(), 2))
        }
        Kind::UsdtEvent {
            binary,
            provider,
            probe,
        } => {
            let sites = usdt::locate(binary, provider, probe).map_err(fail)?;
            let mut events = Vec::new();
            for site in &sites {
                // The first argument is the key; a probe without arguments has key 0.
                let key = match site.arguments.trim().is_empty() {
                    true => None,
                    false => Some(site.argument(1).map_err(fail)?),
                };
                events.push(spec(Role::Event, &site.point(), false, key));
            }
            Ok((events, sites[0].point(), 1))
        }
        Kind::Tracepoint {
            group,
            event,
            field,
        } => {
            let found = tracepoint::find(group, event, field.as_deref()).map_err(fail)?;
            let events = vec![EventSpec {
                role: Role::Event,
                probe: index,
                source: Source::Tracepoint {
                    id: found.id,
                    field: found.key,
                },
                key: None,
                what: what.clone(),
            }];
            let point = ProbePoint {
                path: found.dir,
                file_offset: 0,
                semaphore_offset: 0,
                function: format!("{group}:{event}"),
                class: InstructionClass::default(),
            };
            Ok((events, point, 1))
        }
    }
}

impl Recorder {
    /// What `start` would refuse, said before anything runs (a bench checks its probes
    /// once, before its first run): every point located, and the uprobe PMU present.
    pub fn check(options: &ProbeOptions) -> Result<(), String> {
        let placed = place(options)?;
        uprobe_pmu(&placed.specs).map(|_| ())
    }

    /// Finds every probe point, measures what a hit costs, and opens and enables the
    /// events on every CPU. `Err` is the one line to print; the run must not start.
    pub fn start(options: &ProbeOptions, watched: Vec<u32>) -> Result<Recorder, String> {
        let Placed {
            mut probes,
            specs,
            mut frame_probe,
        } = place(options)?;
        let pmu = uprobe_pmu(&specs)?;
        let semaphores = specs.iter().any(
            |s| matches!(&s.source, Source::Uprobe { point, .. } if point.semaphore_offset != 0),
        );
        if semaphores && !pmu.is_some_and(|p| p.has_semaphores()) {
            log::warn!(
                "this kernel cannot raise USDT semaphores (no \
                 ref_ctr_offset in the uprobe PMU's format): probes guarded by one will not fire"
            );
        }
        // Measured once per kind of first instruction and shape of probes. Why a cost is not
        // known is said once the probes opened: a refusal of both is the error's to say.
        let mut costs: HashMap<(InstructionClass, Shape), Option<Calibration>> = HashMap::new();
        let mut unmeasured: Vec<String> = Vec::new();
        let mut cost_of = |pmu: &Pmu, class: InstructionClass, shape: Shape| {
            *costs.entry((class, shape)).or_insert_with(|| {
                let measured = cost::measure(pmu, class, shape);
                if let Err(why) = &measured {
                    unmeasured.push(why.clone());
                }
                measured.ok()
            })
        };
        if let Some(pmu) = &pmu {
            for probe in &mut probes {
                let shape = match probe.request.kind {
                    // A tracepoint is not a trap: no cost measured.
                    Kind::Tracepoint { .. } => continue,
                    Kind::Function(_) => Shape::Call,
                    Kind::UsdtSpan { .. } => Shape::Pair,
                    Kind::UsdtEvent { .. } => Shape::Entry,
                };
                let measured = cost_of(pmu, probe.point.class, shape);
                probe.cost_ns = measured.map(|c| c.per_call_ns);
                probe.subtract_ns = measured.and_then(|c| c.in_span_ns);
            }
            if let Some(frame) = &mut frame_probe {
                let measured = cost_of(pmu, frame.point.class, Shape::Entry);
                frame.cost_ns = measured.map(|c| c.per_call_ns);
            }
        }
        let mut recorder = Recorder {
            probes,
            pairs: options.pairs.clone(),
            frame_probe,
            rings: Vec::new(),
            others: Vec::new(),
            roles: HashMap::new(),
            members: Membership::new(std::process::id(), watched),
            open: HashMap::new(),
            frame: 0,
            thread_cost: HashMap::new(),
            lost: 0,
            batch: Vec::new(),
        };
        recorder.open_events(pmu.as_ref(), &specs)?;
        for ring in &recorder.rings {
            perf_event::enable(ring.fd()).map_err(|e| perf_event::refusal(&e))?;
        }
        for fd in &recorder.others {
            perf_event::enable(fd).map_err(|e| perf_event::refusal(&e))?;
        }
        for why in unmeasured {
            log::warn!("the cost of a probe hit is not known: {why}");
        }
        Ok(recorder)
    }

    fn open_events(&mut self, pmu: Option<&Pmu>, specs: &[EventSpec]) -> Result<(), String> {
        for cpu in perf_event::cpus() {
            let mut ring: Option<Ring> = None;
            for spec in specs {
                let (fd, field) = match (&spec.source, pmu) {
                    (Source::Uprobe { point, retprobe }, Some(pmu)) => {
                        let what = format!("{} ({})", spec.what, point.path.display());
                        let fd = pmu
                            .open(
                                &point.path,
                                point.file_offset,
                                point.semaphore_offset,
                                *retprobe,
                                spec.key.map_or(0, Argument::mask),
                                -1,
                                cpu,
                            )
                            .map_err(|e| uprobe::refusal(&e, &what))?;
                        (fd, None)
                    }
                    (Source::Tracepoint { id, field }, _) => {
                        let fd = tracepoint::open(*id, cpu)
                            .map_err(|e| tracepoint::refusal(&e, &spec.what))?;
                        (fd, Some(*field))
                    }
                    (Source::Uprobe { .. }, None) => continue,
                };
                let id = uprobe::id(&fd).map_err(|e| uprobe::refusal(&e, &spec.what))?;
                self.roles.insert(
                    id,
                    EventRole {
                        role: spec.role,
                        probe: spec.probe,
                        key: spec.key,
                        field,
                    },
                );
                match &ring {
                    None => {
                        let mapped =
                            Ring::map(fd, RING_PAGES).map_err(|e| format!("cannot map: {e}"))?;
                        // A process that lived between two drains is known as the run's,
                        // by name, after /proc forgot it.
                        self.others
                            .extend(task_records::open_or_none(cpu, mapped.fd()));
                        ring = Some(mapped);
                    }
                    Some(target) => {
                        perf_event::redirect(&fd, target.fd())
                            .map_err(|e| perf_event::refusal(&e))?;
                        self.others.push(fd);
                    }
                }
            }
            self.rings.extend(ring);
        }
        Ok(())
    }

    /// The name the kernel gave a task of the run made while it went (for one gone from
    /// /proc by the time its first hit is drained).
    pub fn task_name(&self, tid: u32) -> Option<&str> {
        self.members.name(tid)
    }

    /// The `--pair`s to make of the run's events.
    pub fn pairs(&self) -> &[crate::analyze::pair::StagePair] {
        &self.pairs
    }

    /// Whether a probe on a binary (not a tracepoint) has seen no call yet.
    pub fn unhit(&self) -> bool {
        self.probes.iter().any(|p| !p.any_task && p.hits == 0)
    }

    /// The stage (or event) name of each probe, by [`ProbeSpan::probe`].
    pub fn stages(&self) -> Vec<String> {
        self.probes
            .iter()
            .map(|p| p.request.stage.clone())
            .collect()
    }

    /// Every span completed and every event since the last call.
    pub fn drain(&mut self) -> Drained {
        let mut batch = std::mem::take(&mut self.batch);
        let mut tasks = Vec::new();
        let mut lost = 0;
        for ring in &mut self.rings {
            ring.for_each(|record| match decode(record, &self.roles) {
                Some(Decoded::Hit(hit)) => batch.push(hit),
                Some(Decoded::Task(task)) => tasks.push(task),
                Some(Decoded::Lost { count, time }) => {
                    lost += count;
                    batch.push(Hit {
                        time,
                        role: Role::Lost,
                        probe: 0,
                        pid: 0,
                        tid: 0,
                        key: count,
                    });
                }
                None => {}
            });
        }
        self.lost += lost;
        // Who made and named the tasks first, in time order (a child's fork may be on
        // another CPU than its parent's): a task's hits come after its fork, and a pid
        // taken again within one drain is too rare to order hits and forks together.
        tasks.sort_by_key(TaskRecord::time);
        tasks.iter().for_each(|task| self.members.learn(task));
        // Across CPUs in time order: a thread may return on another CPU than it entered.
        batch.sort_by_key(|h| h.time);
        let mut drained = Drained::default();
        for hit in batch.drain(..) {
            if hit.role == Role::Lost {
                self.cut_open_calls();
                continue;
            }
            let any_task = hit.role != Role::Frame && self.probes[hit.probe].any_task;
            let of_run = self.members.contains_process(hit.pid);
            if !any_task && !of_run {
                continue;
            }
            self.apply(hit, of_run, &mut drained);
        }
        self.batch = batch;
        self.members.drained();
        drained
    }

    /// Samples were lost (on any CPU: a thread may return on another than it entered): a
    /// call still open may have lost its return, and pairing it with a later one would make
    /// a span of two calls (an empty function's "call" of 71 ms, 25% of the spans overlapping
    /// when a fifth of 100,000 calls were lost). Every open call is dropped and counted; a
    /// return whose entry was lost finds no call and is counted as unmatched.
    fn cut_open_calls(&mut self) {
        for ((_, probe), stack) in self.open.drain() {
            self.probes[probe].cut_by_loss += stack.len() as u64;
        }
    }

    fn apply(&mut self, hit: Hit, of_run: bool, drained: &mut Drained) {
        if hit.role == Role::Frame {
            self.frame += 1;
            if let Some(frame) = &mut self.frame_probe {
                frame.hits += 1;
                let thread = self.thread_cost.entry(hit.tid).or_default();
                thread.0 += 1;
                thread.1 += frame.cost_ns.unwrap_or(0);
            }
            return;
        }
        let probe = &mut self.probes[hit.probe];
        let thread = self.thread_cost.entry(hit.tid).or_default();
        thread.0 += 1;
        thread.1 += probe.cost_ns.unwrap_or(0) / probe.hits_per_call;
        match hit.role {
            Role::Event => {
                probe.hits += 1;
                drained.events.push(ProbeEvent {
                    probe: hit.probe,
                    pid: hit.pid,
                    tid: hit.tid,
                    mono_ns: hit.time as i64,
                    key: hit.key,
                    of_run,
                });
            }
            Role::Begin => {
                probe.hits += 1;
                let frame = match probe.frames {
                    FrameSource::Argument(_) => hit.key,
                    FrameSource::FrameProbe => self.frame,
                    FrameSource::CallCount => probe.hits,
                };
                let stack = self.open.entry((hit.tid, hit.probe)).or_default();
                stack.push((hit.time, frame));
            }
            Role::End => {
                let stack = self.open.entry((hit.tid, hit.probe)).or_default();
                match stack.pop() {
                    Some((start, frame)) => {
                        probe.spans += 1;
                        let (start_mono_ns, end_mono_ns, clamped) =
                            without_probe_cost(start as i64, hit.time as i64, probe.subtract_ns);
                        probe.clamped += u64::from(clamped);
                        drained.spans.push(ProbeSpan {
                            probe: hit.probe,
                            pid: hit.pid,
                            tid: hit.tid,
                            start_mono_ns,
                            end_mono_ns,
                            frame,
                        });
                    }
                    // Entered before the probes were attached.
                    None => probe.unmatched_returns += 1,
                }
            }
            Role::Frame | Role::Lost => {}
        }
    }

    /// Stops the events: the last spans and events, and what the probes saw.
    pub fn finish(&mut self) -> Finished {
        for ring in &self.rings {
            perf_event::disable(ring.fd());
        }
        for fd in &self.others {
            perf_event::disable(fd);
        }
        let drained = self.drain();
        let mut unfinished = vec![0u64; self.probes.len()];
        for ((_, probe), stack) in &self.open {
            unfinished[*probe] += stack.len() as u64;
        }
        let busiest = self
            .thread_cost
            .iter()
            .max_by_key(|(_, (_, cost))| *cost)
            .map(|(&tid, &(_, cost))| (tid, cost));
        let mut facts: Vec<ProbeFacts> = self
            .probes
            .iter()
            .zip(unfinished)
            .map(|(p, unfinished)| ProbeFacts {
                stage: p.request.stage.clone(),
                kind: match p.request.kind {
                    Kind::Function(_) => "uprobe",
                    Kind::UsdtSpan { .. } => "usdt",
                    Kind::UsdtEvent { .. } => "usdt event",
                    Kind::Tracepoint { .. } => "tracepoint",
                }
                .to_owned(),
                target: p.request.describe(),
                path: p.point.path.display().to_string(),
                function: p.point.function.clone(),
                file_offset: p.point.file_offset,
                first_instruction: p.point.class,
                cost_per_hit_ns: p.cost_ns,
                subtracted_ns: p.subtract_ns,
                clamped: p.clamped,
                hits: p.hits,
                spans: p.spans,
                unmatched_returns: p.unmatched_returns,
                unfinished,
                cut_by_loss: p.cut_by_loss,
                frame_probe: false,
            })
            .collect();
        if let Some(frame) = &self.frame_probe {
            facts.push(ProbeFacts {
                stage: String::new(),
                kind: "uprobe".to_owned(),
                target: frame.target.clone(),
                path: frame.point.path.display().to_string(),
                function: frame.point.function.clone(),
                file_offset: frame.point.file_offset,
                first_instruction: frame.point.class,
                cost_per_hit_ns: frame.cost_ns,
                hits: frame.hits,
                frame_probe: true,
                ..ProbeFacts::default()
            });
        }
        Finished {
            drained,
            facts,
            lost: self.lost,
            busiest_thread: busiest,
        }
    }
}

/// What [`Recorder::finish`] hands back.
pub struct Finished {
    pub drained: Drained,
    pub facts: Vec<ProbeFacts>,
    /// Samples the kernel could not write.
    pub lost: u64,
    /// The thread the probes cost most, and that cost in ns.
    pub busiest_thread: Option<(u32, i64)>,
}

/// A span from `start` to `end` less `subtract` ns of the probes' own cost, half taken off
/// each end (where in the two traps the timestamps fall is not known), and whether it was
/// shorter than that and is made 0 long, at its middle.
fn without_probe_cost(start: i64, end: i64, subtract: Option<i64>) -> (i64, i64, bool) {
    let subtract = subtract.unwrap_or(0);
    let length = end - start;
    if length < subtract {
        let middle = start + length / 2;
        return (middle, middle, true);
    }
    let from_start = subtract / 2;
    (start + from_start, end - (subtract - from_start), false)
}

enum Decoded {
    Hit(Hit),
    Task(TaskRecord),
    /// `count` samples lost before `time` (the record's `sample_id_all` trailer).
    Lost {
        count: u64,
        time: u64,
    },
}

fn decode(record: &[u8], roles: &HashMap<u64, EventRole>) -> Option<Decoded> {
    let (kind, _) = cursor::header(record)?;
    let mut c = Cursor::after_header(record);
    match kind {
        b::PERF_RECORD_SAMPLE => {
            let id = c.u64();
            let role = roles.get(&id)?;
            let pid = c.u32();
            let tid = c.u32();
            let time = c.u64();
            let key = match (role.key, role.field) {
                // PERF_SAMPLE_RAW: its size, then the tracepoint's record.
                (_, Some(field)) => {
                    let size = c.u32() as usize;
                    field.int(c.take(size)) as u64
                }
                (None, None) => 0,
                (Some(constant @ Argument::Constant(_)), None) => constant.value(0),
                (Some(register), None) => {
                    // PERF_SAMPLE_REGS_USER: the ABI (0: no user registers), then the one
                    // register asked for.
                    let abi = c.u64();
                    if abi == 0 {
                        0
                    } else {
                        register.value(c.u64())
                    }
                }
            };
            Some(Decoded::Hit(Hit {
                time,
                role: role.role,
                probe: role.probe,
                pid,
                tid,
                key,
            }))
        }
        b::PERF_RECORD_FORK | b::PERF_RECORD_COMM | b::PERF_RECORD_EXIT => {
            TaskRecord::read(record).map(Decoded::Task)
        }
        b::PERF_RECORD_LOST => {
            let _id = c.u64();
            let count = c.u64();
            // The trailer: pid and tid (`PERF_SAMPLE_TID`), then the time.
            let _ = (c.u32(), c.u32());
            Some(Decoded::Lost {
                count,
                time: c.u64(),
            })
        }
        _ => None,
    }
}

/// Every probe of a run placed: its point, and the events to open for it.
struct Placed {
    probes: Vec<Attached>,
    specs: Vec<EventSpec>,
    frame_probe: Option<FrameProbe>,
}

/// Each probe's point located (a file, a symbol, a USDT site, a tracepoint), and the
/// `--frame-probe`'s; `Err` is the one line to print.
fn place(options: &ProbeOptions) -> Result<Placed, String> {
    let mut probes = Vec::new();
    let mut specs = Vec::new();
    for (index, request) in options.probes.iter().enumerate() {
        let frames = options.frame_source(&request.stage);
        let (events, point, hits_per_call) = resolve(index, request, frames)?;
        specs.extend(events);
        probes.push(Attached {
            any_task: matches!(request.kind, Kind::Tracepoint { .. }),
            request: request.clone(),
            point,
            frames,
            hits_per_call,
            cost_ns: None,
            subtract_ns: None,
            hits: 0,
            spans: 0,
            unmatched_returns: 0,
            clamped: 0,
            cut_by_loss: 0,
        });
    }
    let frame_probe = match &options.frame_probe {
        Some(target) => {
            let point =
                locate(target).map_err(|e| format!("--frame-probe {}: {e}", target.describe()))?;
            specs.push(EventSpec {
                role: Role::Frame,
                probe: 0,
                source: Source::Uprobe {
                    point: point.clone(),
                    retprobe: false,
                },
                key: None,
                what: format!("--frame-probe {}", target.describe()),
            });
            Some(FrameProbe {
                target: target.describe(),
                point,
                hits: 0,
                cost_ns: None,
            })
        }
        None => None,
    };
    Ok(Placed {
        probes,
        specs,
        frame_probe,
    })
}

/// The uprobe PMU when some event needs it. After the points: a mistake in the options
/// is said before what the machine lacks.
fn uprobe_pmu(specs: &[EventSpec]) -> Result<Option<Pmu>, String> {
    let uprobes = (specs.iter()).any(|s| matches!(s.source, Source::Uprobe { .. }));
    uprobes.then(Pmu::find).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(id: u64, pid: u32, tid: u32, time: u64, argument: Option<u64>) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(id.to_ne_bytes());
        body.extend(pid.to_ne_bytes());
        body.extend(tid.to_ne_bytes());
        body.extend(time.to_ne_bytes());
        if let Some(a) = argument {
            body.extend(2u64.to_ne_bytes());
            body.extend(a.to_ne_bytes());
        }
        let mut record = Vec::new();
        record.extend(b::PERF_RECORD_SAMPLE.to_ne_bytes());
        record.extend(0u16.to_ne_bytes());
        record.extend(((8 + body.len()) as u16).to_ne_bytes());
        record.extend(body);
        record
    }

    #[test]
    fn the_probes_cost_is_taken_off_both_ends_and_a_shorter_span_is_clamped() {
        assert_eq!(
            without_probe_cost(1000, 5000, Some(1001)),
            (1500, 4499, false)
        );
        assert_eq!(without_probe_cost(1000, 5000, None), (1000, 5000, false));
        assert_eq!(
            without_probe_cost(1000, 1600, Some(1000)),
            (1300, 1300, true)
        );
        assert_eq!(
            without_probe_cost(1000, 2000, Some(1000)),
            (1500, 1500, false)
        );
    }

    /// A recorder of one `--probe` whose calibration measured `subtract_ns` inside each span,
    /// with no events opened: hits are handed to it as the drain would.
    fn recorder_subtracting(subtract_ns: Option<i64>) -> Recorder {
        let request = ProbeRequest::parse("encode=prog:encode_frame").unwrap();
        Recorder {
            probes: vec![Attached {
                request,
                any_task: false,
                point: super::super::ProbePoint {
                    path: "/tmp/prog".into(),
                    file_offset: 0x1100,
                    semaphore_offset: 0,
                    function: "encode_frame".into(),
                    class: InstructionClass::Push,
                },
                frames: FrameSource::CallCount,
                hits_per_call: 2,
                cost_ns: Some(2_400),
                subtract_ns,
                hits: 0,
                spans: 0,
                unmatched_returns: 0,
                clamped: 0,
                cut_by_loss: 0,
            }],
            pairs: Vec::new(),
            frame_probe: None,
            rings: Vec::new(),
            others: Vec::new(),
            roles: HashMap::new(),
            members: Membership::new(1, Vec::new()),
            open: HashMap::new(),
            frame: 0,
            thread_cost: HashMap::new(),
            lost: 0,
            batch: Vec::new(),
        }
    }

    fn hit(time: u64, role: Role) -> Hit {
        Hit {
            time,
            role,
            probe: 0,
            pid: 7,
            tid: 7,
            key: 0,
        }
    }

    /// A lost-samples record, as the kernel writes it with `sample_id_all`.
    fn lost_record(count: u64, time: u64) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(99u64.to_ne_bytes());
        body.extend(count.to_ne_bytes());
        body.extend(7u32.to_ne_bytes());
        body.extend(7u32.to_ne_bytes());
        body.extend(time.to_ne_bytes());
        body.extend(99u64.to_ne_bytes());
        let mut record = Vec::new();
        record.extend(b::PERF_RECORD_LOST.to_ne_bytes());
        record.extend(0u16.to_ne_bytes());
        record.extend(((8 + body.len()) as u16).to_ne_bytes());
        record.extend(body);
        record
    }

    /// Calls open when samples were lost are dropped, not paired with a later return: an
    /// empty function's spans were 71 ms long when a fifth of its samples were lost.
    #[test]
    fn a_call_open_when_samples_were_lost_is_not_paired_with_a_later_return() {
        let Some(Decoded::Lost { count, time }) = decode(&lost_record(3, 12_000), &HashMap::new())
        else {
            panic!("a lost record");
        };
        assert_eq!((count, time), (3, 12_000));
        let mut recorder = recorder_subtracting(None);
        let mut drained = Drained::default();
        // The first call's return and the third call's entry are among the lost.
        recorder.apply(hit(10_000, Role::Begin), true, &mut drained);
        recorder.cut_open_calls();
        for (time, role) in [
            (20_000, Role::Begin),
            (25_000, Role::End),
            (30_000, Role::End),
        ] {
            recorder.apply(hit(time, role), true, &mut drained);
        }
        let spans: Vec<(i64, i64)> = (drained.spans.iter())
            .map(|s| (s.start_mono_ns, s.end_mono_ns))
            .collect();
        assert_eq!(spans, [(20_000, 25_000)], "no span from 10 to 30 µs");
        let probe = &recorder.probes[0];
        assert_eq!((probe.cut_by_loss, probe.unmatched_returns), (1, 1));
    }

    #[test]
    fn each_span_of_a_probe_loses_what_its_calibration_measured_inside_spans() {
        let mut recorder = recorder_subtracting(Some(1_000));
        let mut drained = Drained::default();
        for (time, role) in [
            (10_000, Role::Begin),
            (15_000, Role::End),
            // Quicker than what is taken off: made 0 long at its middle, and counted.
            (20_000, Role::Begin),
            (20_600, Role::End),
        ] {
            recorder.apply(hit(time, role), true, &mut drained);
        }
        let spans: Vec<(i64, i64, u64)> = (drained.spans.iter())
            .map(|s| (s.start_mono_ns, s.end_mono_ns, s.frame))
            .collect();
        assert_eq!(spans, [(10_500, 14_500, 1), (20_300, 20_300, 2)]);
        let probe = &recorder.probes[0];
        assert_eq!((probe.spans, probe.clamped), (2, 1));
        // Where the cost could not be measured, nothing is taken off.
        let mut recorder = recorder_subtracting(None);
        let mut drained = Drained::default();
        recorder.apply(hit(10_000, Role::Begin), true, &mut drained);
        recorder.apply(hit(15_000, Role::End), true, &mut drained);
        let span = &drained.spans[0];
        assert_eq!((span.start_mono_ns, span.end_mono_ns), (10_000, 15_000));
    }

    #[test]
    fn samples_decode_to_hits_with_their_key() {
        let role = |role, key| EventRole {
            role,
            probe: 0,
            key,
            field: None,
        };
        let roles = HashMap::from([
            (7, role(Role::Begin, Some(argument_register(1)))),
            (8, role(Role::End, None)),
            (9, role(Role::Event, Some(Argument::Constant(5)))),
        ]);
        let Some(Decoded::Hit(hit)) = decode(&sample(7, 10, 11, 500, Some(42)), &roles) else {
            panic!("not a hit");
        };
        assert_eq!(
            (hit.role, hit.pid, hit.tid, hit.time, hit.key),
            (Role::Begin, 10, 11, 500, 42)
        );
        let Some(Decoded::Hit(end)) = decode(&sample(8, 10, 11, 900, None), &roles) else {
            panic!("not a hit");
        };
        assert_eq!(end.role, Role::End);
        let Some(Decoded::Hit(event)) = decode(&sample(9, 10, 11, 900, None), &roles) else {
            panic!("not a hit");
        };
        assert_eq!(event.key, 5);
        // An event that is not ours is skipped.
        assert!(decode(&sample(3, 10, 11, 900, None), &roles).is_none());
    }
}
