//! The probes of a run while it goes: on every CPU, each probe's entry and return events
//! (and `--frame-probe`'s entry) write into one ring per CPU; the collector drains them
//! with the SDK's rings, and each entry is paired with its thread's next return of the same
//! probe into a span. Events are opened for every task, before the command starts, and
//! kept only for the run's processes (`crate::perf_event::members`).

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use super::cost::{self, InstructionClass};
use super::uprobe::{self, Pmu};
use super::{locate, FrameSource, ProbeOptions, ProbePoint};
use crate::model::ProbeFacts;
use crate::perf_event::bindings as b;
use crate::perf_event::cursor::{self, Cursor};
use crate::perf_event::members::Membership;
use crate::perf_event::{self, Ring};

/// 256 KiB a CPU: about 6,000 hits, over 0.5 s of 10,000 hits a second; drained every
/// few milliseconds.
const RING_PAGES: usize = 64;

/// One call of a probed function on one thread: from entry to return.
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Entry,
    Return,
    /// `--frame-probe`: starts the next frame.
    Frame,
}

/// One sample, decoded.
#[derive(Clone, Copy, Debug)]
struct Hit {
    time: u64,
    role: Role,
    probe: usize,
    pid: u32,
    tid: u32,
    /// The argument register asked for by `--frame-arg`, else 0.
    argument: u64,
}

struct Attached {
    stage: String,
    target: String,
    point: ProbePoint,
    frames: FrameSource,
    cost_ns: Option<i64>,
    /// Of the run's threads.
    hits: u64,
    spans: u64,
    unmatched_returns: u64,
}

pub struct Recorder {
    probes: Vec<Attached>,
    frame_probe: Option<(String, ProbePoint, u64)>,
    rings: Vec<Ring>,
    /// The events writing into another event's ring.
    others: Vec<OwnedFd>,
    /// Event id → what it is and which probe.
    roles: HashMap<u64, (Role, usize)>,
    /// Whether the entry events of each probe carry an argument register.
    with_argument: Vec<bool>,
    members: Membership,
    /// Entries not returned from yet, by thread and probe: (time, frame), innermost last.
    open: HashMap<(u32, usize), Vec<(u64, u64)>>,
    /// The frame `--frame-probe` started last.
    frame: u64,
    /// Each thread's hits (entries and returns) and what they cost it, in ns.
    thread_cost: HashMap<u32, (u64, i64)>,
    lost: u64,
    batch: Vec<Hit>,
}

/// The register holding integer argument `n` (1-based) of the x86-64 SysV convention.
fn argument_register(n: u8) -> u64 {
    let reg = match n {
        1 => b::PERF_REG_X86_DI,
        2 => b::PERF_REG_X86_SI,
        3 => b::PERF_REG_X86_DX,
        4 => b::PERF_REG_X86_CX,
        5 => b::PERF_REG_X86_R8,
        _ => b::PERF_REG_X86_R9,
    };
    1u64 << reg
}

impl Recorder {
    /// Finds every probe point, measures what a hit costs, and opens and enables the
    /// events on every CPU. `Err` is the one line to print; the run must not start.
    pub fn start(options: &ProbeOptions, watched: Vec<u32>) -> Result<Recorder, String> {
        let mut probes = Vec::new();
        for request in &options.probes {
            let point = locate(&request.target).map_err(|e| {
                format!(
                    "--probe {}={}: {e}",
                    request.stage,
                    request.target.describe()
                )
            })?;
            probes.push(Attached {
                stage: request.stage.clone(),
                target: request.target.describe(),
                point,
                frames: options.frame_source(&request.stage),
                cost_ns: None,
                hits: 0,
                spans: 0,
                unmatched_returns: 0,
            });
        }
        let frame_probe = match &options.frame_probe {
            Some(target) => Some((
                target.describe(),
                locate(target).map_err(|e| format!("--frame-probe {}: {e}", target.describe()))?,
                0,
            )),
            None => None,
        };
        // After the points: a mistake in the options is said before what the machine lacks.
        let pmu = Pmu::find()?;
        // Measured once per kind of first instruction in use.
        let mut costs: HashMap<InstructionClass, Option<i64>> = HashMap::new();
        for probe in &mut probes {
            let class = probe.point.class;
            if !costs.contains_key(&class) {
                let measured = cost::measure(&pmu, class);
                if let Err(why) = &measured {
                    eprintln!("framelab: warning: the cost of a probe hit is not known: {why}");
                }
                costs.insert(class, measured.ok());
            }
            probe.cost_ns = costs[&class];
        }
        let with_argument: Vec<bool> = probes
            .iter()
            .map(|p| matches!(p.frames, FrameSource::Argument(_)))
            .collect();
        let mut recorder = Recorder {
            probes,
            frame_probe,
            rings: Vec::new(),
            others: Vec::new(),
            roles: HashMap::new(),
            with_argument,
            members: Membership::new(std::process::id(), watched),
            open: HashMap::new(),
            frame: 0,
            thread_cost: HashMap::new(),
            lost: 0,
            batch: Vec::new(),
        };
        recorder.open_events(&pmu)?;
        for ring in &recorder.rings {
            perf_event::enable(ring.fd()).map_err(|e| perf_event::refusal(&e))?;
        }
        for fd in &recorder.others {
            perf_event::enable(fd).map_err(|e| perf_event::refusal(&e))?;
        }
        Ok(recorder)
    }

    fn open_events(&mut self, pmu: &Pmu) -> Result<(), String> {
        // (role, probe, path, offset, registers) of every event, opened on each CPU.
        let mut wanted = Vec::new();
        for (i, p) in self.probes.iter().enumerate() {
            let registers = match p.frames {
                FrameSource::Argument(n) => argument_register(n),
                _ => 0,
            };
            let what = format!("{} ({})", p.target, p.point.path.display());
            wanted.push((Role::Entry, i, p.point.clone(), registers, what.clone()));
            wanted.push((Role::Return, i, p.point.clone(), 0, what));
        }
        if let Some((target, point, _)) = &self.frame_probe {
            wanted.push((Role::Frame, 0, point.clone(), 0, target.clone()));
        }
        for cpu in perf_event::cpus() {
            let mut ring: Option<Ring> = None;
            for (role, probe, point, registers, what) in &wanted {
                let fd = pmu
                    .open(
                        &point.path,
                        point.file_offset,
                        *role == Role::Return,
                        *registers,
                        -1,
                        cpu,
                    )
                    .map_err(|e| uprobe::refusal(&e, what))?;
                let id = uprobe::id(&fd).map_err(|e| uprobe::refusal(&e, what))?;
                self.roles.insert(id, (*role, *probe));
                match &ring {
                    None => {
                        ring = Some(
                            Ring::map(fd, RING_PAGES).map_err(|e| format!("cannot map: {e}"))?,
                        )
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

    /// The stage of each probe, by [`ProbeSpan::probe`].
    pub fn stages(&self) -> Vec<String> {
        self.probes.iter().map(|p| p.stage.clone()).collect()
    }

    /// Every span completed since the last call.
    pub fn drain(&mut self) -> Vec<ProbeSpan> {
        let mut batch = std::mem::take(&mut self.batch);
        let mut lost = 0;
        for ring in &mut self.rings {
            ring.for_each(
                |record| match decode(record, &self.roles, &self.with_argument) {
                    Some(Decoded::Hit(hit)) => batch.push(hit),
                    Some(Decoded::Lost(n)) => lost += n,
                    None => {}
                },
            );
        }
        self.lost += lost;
        // Across CPUs in time order: a thread may return on another CPU than it entered.
        batch.sort_by_key(|h| h.time);
        let mut spans = Vec::new();
        for hit in batch.drain(..) {
            if !self.members.contains_process(hit.pid) {
                continue;
            }
            self.apply(hit, &mut spans);
        }
        self.batch = batch;
        spans
    }

    fn apply(&mut self, hit: Hit, spans: &mut Vec<ProbeSpan>) {
        if hit.role == Role::Frame {
            self.frame += 1;
            if let Some((_, _, hits)) = &mut self.frame_probe {
                *hits += 1;
            }
            return;
        }
        let probe = &mut self.probes[hit.probe];
        let thread = self.thread_cost.entry(hit.tid).or_default();
        thread.0 += 1;
        // Half of an entry+return's cost at each.
        thread.1 += probe.cost_ns.unwrap_or(0) / 2;
        let stack = self.open.entry((hit.tid, hit.probe)).or_default();
        match hit.role {
            Role::Entry => {
                probe.hits += 1;
                let frame = match probe.frames {
                    FrameSource::Argument(_) => hit.argument,
                    FrameSource::FrameProbe => self.frame,
                    FrameSource::CallCount => probe.hits,
                };
                stack.push((hit.time, frame));
            }
            Role::Return => match stack.pop() {
                Some((start, frame)) => {
                    probe.spans += 1;
                    spans.push(ProbeSpan {
                        probe: hit.probe,
                        pid: hit.pid,
                        tid: hit.tid,
                        start_mono_ns: start as i64,
                        end_mono_ns: hit.time as i64,
                        frame,
                    });
                }
                // Entered before the probes were attached.
                None => probe.unmatched_returns += 1,
            },
            Role::Frame => {}
        }
    }

    /// Stops the events: the last spans, and what the probes saw.
    pub fn finish(&mut self) -> Finished {
        for ring in &self.rings {
            perf_event::disable(ring.fd());
        }
        for fd in &self.others {
            perf_event::disable(fd);
        }
        let spans = self.drain();
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
                stage: p.stage.clone(),
                target: p.target.clone(),
                path: p.point.path.display().to_string(),
                function: p.point.function.clone(),
                file_offset: p.point.file_offset,
                first_instruction: p.point.class,
                cost_per_hit_ns: p.cost_ns,
                hits: p.hits,
                spans: p.spans,
                unmatched_returns: p.unmatched_returns,
                unfinished,
                frame_probe: false,
            })
            .collect();
        if let Some((target, point, hits)) = &self.frame_probe {
            facts.push(ProbeFacts {
                stage: String::new(),
                target: target.clone(),
                path: point.path.display().to_string(),
                function: point.function.clone(),
                file_offset: point.file_offset,
                first_instruction: point.class,
                hits: *hits,
                frame_probe: true,
                ..ProbeFacts::default()
            });
        }
        Finished {
            spans,
            facts,
            lost: self.lost,
            busiest_thread: busiest,
        }
    }
}

/// What [`Recorder::finish`] hands back.
pub struct Finished {
    pub spans: Vec<ProbeSpan>,
    pub facts: Vec<ProbeFacts>,
    /// Samples the kernel could not write.
    pub lost: u64,
    /// The thread the probes cost most, and that cost in ns.
    pub busiest_thread: Option<(u32, i64)>,
}

enum Decoded {
    Hit(Hit),
    Lost(u64),
}

fn decode(
    record: &[u8],
    roles: &HashMap<u64, (Role, usize)>,
    with_argument: &[bool],
) -> Option<Decoded> {
    let (kind, _) = cursor::header(record)?;
    let mut c = Cursor::after_header(record);
    match kind {
        b::PERF_RECORD_SAMPLE => {
            let id = c.u64();
            let &(role, probe) = roles.get(&id)?;
            let pid = c.u32();
            let tid = c.u32();
            let time = c.u64();
            let mut argument = 0;
            if role == Role::Entry && with_argument.get(probe).copied().unwrap_or(false) {
                let abi = c.u64();
                if abi != 0 {
                    argument = c.u64();
                }
            }
            Some(Decoded::Hit(Hit {
                time,
                role,
                probe,
                pid,
                tid,
                argument,
            }))
        }
        b::PERF_RECORD_LOST => {
            let _id = c.u64();
            Some(Decoded::Lost(c.u64()))
        }
        _ => None,
    }
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
    fn samples_decode_to_hits_with_their_argument() {
        let roles = HashMap::from([(7, (Role::Entry, 0)), (8, (Role::Return, 0))]);
        let Some(Decoded::Hit(hit)) = decode(&sample(7, 10, 11, 500, Some(42)), &roles, &[true])
        else {
            panic!("not a hit");
        };
        assert_eq!(
            (hit.role, hit.pid, hit.tid, hit.time, hit.argument),
            (Role::Entry, 10, 11, 500, 42)
        );
        let Some(Decoded::Hit(ret)) = decode(&sample(8, 10, 11, 900, None), &roles, &[true]) else {
            panic!("not a hit");
        };
        assert_eq!(ret.role, Role::Return);
        // An event that is not ours is skipped.
        assert!(decode(&sample(9, 10, 11, 900, None), &roles, &[true]).is_none());
    }
}
