//! Plain sentences about what a reader must know before trusting the numbers:
//! a crash, lost records, a window that is not what was asked for.

use super::frames::ResolvedWindow;
use crate::model::{EndReason, RunMeta};
use crate::units::plural;

/// What the notes are written from, besides the run's metadata.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoteFacts {
    pub spans: u64,
    pub measured_frames: u64,
    /// Spans skipped as out of range (`frames::out_of_range`), and the first of them.
    pub negative_spans: u64,
    pub first_bad_span: Option<super::frames::BadSpan>,
    pub orphan_counter_values: u64,
    /// `--frames N` stood in for frames (no spans).
    pub frames_from_hint: bool,
    /// `--frames N` was given but spans were recorded, so it was not used.
    pub hint_ignored: bool,
    /// `--frames N` as given.
    pub hint: Option<u64>,
    /// Why `--frames N` gave no throughput though nothing else counted frames.
    pub hint_unusable: Option<&'static str>,
    /// Frames that ended before the window (warmup).
    pub warmup_frames: u64,
    /// The run was imported from another tool's trace: no command was recorded.
    pub imported: bool,
}

/// Linux signal names, for "killed by SIGSEGV (signal 11)".
pub fn signal_name(signal: i32) -> Option<&'static str> {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(signal)
        .ok()
        .and_then(|s| s.checked_sub(1))
        .and_then(|i| NAMES.get(i).copied())
}

/// `SIGSEGV (signal 11)`, or `signal 77` for a number without a name.
pub fn describe_signal(signal: i32) -> String {
    match signal_name(signal) {
        Some(name) => format!("{name} (signal {signal})"),
        None => format!("signal {signal}"),
    }
}

/// ` (first: …)` for a note on things counted with their first reasons kept; empty when none.
fn first_detail(details: &[String]) -> String {
    details
        .first()
        .map(|d| format!(" (first: {d})"))
        .unwrap_or_default()
}

/// Time the CPUs spent on no task: where it went, and what it does to the figures.
fn cpu_taken_note(t: &crate::model::CpuTakenFacts) -> String {
    let whose = if t.steal_ns >= t.interrupts_ns() {
        "Stolen time is other work on the VM's host: a run on a quieter host shows how much it cost."
    } else {
        "Interrupt time is the machine's devices and network stack at work, this run's own traffic included: /proc/interrupts and /proc/softirqs say which."
    };
    format!(
        "{:.1}% of the CPUs' time over the window ran no task ({:.1}% stolen by the hypervisor, {:.1}% in interrupts; CPU {} lost {:.1}% of its own; /proc/stat): a thread on a CPU losing that time looked on CPU meanwhile, so its spans and frames were stretched by time the scheduler line cannot name. {whose}",
        100.0 * t.share(),
        100.0 * t.of_all(t.steal_ns),
        100.0 * t.of_all(t.interrupts_ns()),
        t.most_taken_cpu,
        100.0 * t.most_share()
    )
}

/// What the run's processes used after the window closed, until they had ended (a signal
/// handler's work, a flush, the services' stopping): outside every figure of the report.
fn after_window_note(group: &crate::model::RunGroupFacts) -> Option<String> {
    let after_ns = group.after_window_cpu_ns?;
    let window_ns = group.cpu_ns.unwrap_or(0);
    // Less is a program's usual exit work, beside a busy window.
    if !crate::analyze::cpu::beyond_tick_rounding(after_ns, window_ns) {
        return None;
    }
    let cpu = if after_ns < 1_000_000_000 {
        format!("{:.0} ms", after_ns as f64 / 1e6)
    } else {
        format!("{:.2} s", after_ns as f64 / 1e9)
    };
    Some(format!(
        "After the window: the run's processes used {cpu} of CPU more until they ended (being stopped; the run's cgroup counted it), which is not in the figures above."
    ))
}

/// What went wrong with the recording itself: a session directory removed under the run,
/// rings the program corrupted or framelab could not read, threads that could not record,
/// users who could not join.
fn session_notes(meta: &RunMeta) -> Vec<String> {
    let facts = &meta.session;
    let mut notes = Vec::new();
    if let Some(group) = &facts.run_group {
        if !group.unavailable.is_empty() {
            notes.push(format!(
                "No cgroup held this run ({}): its processes were followed as framelab's descendants: CPU of processes that lived between two readings may be missing, and a kill -9 of framelab would have stopped only the process groups it had seen.",
                group.unavailable
            ));
        }
        let escaped = crate::model::leftovers::summarize(&group.escaped);
        notes.extend(escaped.iter().map(|e| format!("Run group: {e}.")));
        notes.extend(after_window_note(group));
    }
    // `run --pair`: events that did not pair.
    notes.extend(
        facts
            .probe_pairs
            .iter()
            .flat_map(|p| p.notes.iter().cloned()),
    );
    if let Some(taken) = facts.cpu_taken.as_ref().filter(|t| t.notable()) {
        notes.push(cpu_taken_note(taken));
    }
    if let Some(at) = facts.session_lost_ns {
        notes.push(format!(
            "The session directory was removed {} after launch, while the run was recording (by another framelab that took it for stale, or by hand): threads that started after that were not recorded, so this run is incomplete.",
            seconds(at)
        ));
    }
    if facts.corrupt_rings > 0 {
        let first = first_detail(&facts.corrupt_ring_details);
        notes.push(format!(
            "{} damaged by the program while recording{first}: what was read before the damage is kept, the rest of those threads' records are lost.",
            plural(facts.corrupt_rings, "ring was", "rings were"),
        ));
    }
    if facts.foreign_rings > 0 {
        let first = first_detail(&facts.foreign_ring_details);
        notes.push(format!(
            "{} not read{first}: those threads' records are lost. Build the program against the framelab-probe of this framelab.",
            plural(facts.foreign_rings, "ring was", "rings were"),
        ));
    }
    for u in &facts.unrecorded_threads {
        let threads = plural(u.threads, "thread", "threads");
        notes.push(match u.errno {
            crate::model::ENOSPC | crate::model::ENOMEM => format!(
                "{threads} ran unrecorded: the shared memory holding the rings ({}) was full, so {} could not be given memory. Give it more room (docker run --shm-size=1g, or mount -o remount,size=1g {}), use smaller rings (--ring-records; the default {} records take {} MiB per thread), or record fewer threads.",
                facts.shm_dir,
                if u.threads == 1 { "its ring" } else { "their rings" },
                facts.shm_dir,
                framelab_probe::wire::DEFAULT_RING_RECORDS,
                framelab_probe::wire::ring_file_bytes(framelab_probe::wire::DEFAULT_RING_RECORDS) >> 20
            ),
            errno => format!(
                "{threads} ran unrecorded: {} ring could not be made ({}).",
                if u.threads == 1 { "its" } else { "their" },
                std::io::Error::from_raw_os_error(errno)
            ),
        });
    }
    for user in &facts.foreign_users {
        let name = user.split(' ').next().unwrap_or("USER");
        notes.push(format!(
            "Processes of the run ran as {user} and recorded nothing: the session directory is private to framelab's user. If they are instrumented, rerun with --session-user {name} (or --share-session with a group they are in)."
        ));
    }
    notes
}

/// `Ctrl-C (SIGINT)`, `SIGTERM to framelab`; runs recorded before the signal was kept
/// say only that it was one of the three.
fn interrupted_by(signal: Option<i32>) -> String {
    match signal {
        Some(2) => "Ctrl-C (SIGINT)".into(),
        Some(s) => format!("{} to framelab", signal_name(s).unwrap_or("a signal")),
        None => "a signal to framelab (Ctrl-C, SIGTERM or SIGHUP)".into(),
    }
}

/// What a death by one of framelab's later stop signals says of the command: framelab
/// stops it with SIGINT, then SIGTERM, then SIGKILL, each after `--grace` (a second Ctrl-C
/// goes straight to SIGKILL); one that ended on a later signal outlived the ones before.
fn outlived_stop(signal: i32) -> Option<&'static str> {
    match signal {
        libc::SIGTERM => Some(
            "The command outlived framelab's SIGINT (given the grace period to end): SIGTERM ended it.",
        ),
        libc::SIGKILL => Some(
            "The command outlived framelab's SIGINT and SIGTERM (each given the grace period to end): it was killed (SIGKILL), and what it does on exit (flushing, logging) was cut short.",
        ),
        _ => None,
    }
}

/// A command killed at once by an interrupt of framelab while it was being stopped (a
/// second Ctrl-C): no grace period was given, whatever `--grace` says. `None` otherwise,
/// and for runs recorded before framelab said which stop signals it sent.
fn killed_at_interrupt(signal: i32, stops: &[crate::model::StopSignal]) -> Option<String> {
    if signal != libc::SIGKILL {
        return None;
    }
    let kill = stops.iter().find(|s| s.signal == libc::SIGKILL)?;
    let interrupt = kill.interrupt?;
    let before: Vec<&str> = (stops.iter())
        .take_while(|s| s.signal != libc::SIGKILL)
        .filter_map(|s| signal_name(s.signal))
        .collect();
    let first_ns = stops.first().map_or(kill.at_ns, |s| s.at_ns);
    Some(format!(
        "A {} while framelab was stopping the command killed it at once (SIGKILL, {} after framelab's {}, without waiting out the grace period): what it does on exit (flushing, logging) was cut short.",
        interrupted_by(Some(interrupt)),
        seconds(kill.at_ns - first_ns),
        before.join(" and ")
    ))
}

fn seconds(ns: i64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

pub fn notes(meta: &RunMeta, window: &ResolvedWindow, facts: &NoteFacts) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(exit) = &meta.exit {
        if exit.crashed {
            let how = exit
                .signal
                .map(|s| format!(": killed by {}", describe_signal(s)))
                .unwrap_or_default();
            notes.push(format!(
                "The command crashed{how}. The report covers what was recorded before the crash."
            ));
        } else if let Some(code) = exit.code.filter(|&c| c != 0) {
            notes.push(format!("The command exited with code {code}."));
        } else if let Some(signal) = exit.signal {
            if let Some(how) = killed_at_interrupt(signal, &meta.session.stop_signals) {
                notes.push(how);
            } else if let Some(how) = outlived_stop(signal) {
                notes.push(how.into());
            }
        }
    }
    match meta.end_reason {
        EndReason::Interrupted => notes.push(format!(
            "Interrupted by {} {} after launch; the window ends there.",
            interrupted_by(meta.session.interrupt_signal),
            seconds(window.end_ns)
        )),
        EndReason::Exited if window.end_ns <= window.start_ns && meta.warmup_ns > 0 => notes.push(format!(
            "The command exited {} after launch, during the {} warmup: nothing was measured. Use a shorter --warmup.",
            seconds(window.end_ns),
            seconds(meta.warmup_ns)
        )),
        EndReason::Exited if meta.duration_ns.is_some_and(|d| window.end_ns < d) => notes.push(format!(
            "The command exited {} after launch, before the --duration of {}: the window ends there.",
            seconds(window.end_ns),
            seconds(meta.duration_ns.unwrap_or_default())
        )),
        _ => {}
    }
    if window.end_from_last_span {
        notes.push(format!(
            "The run was not finalised (framelab was stopped before the end?): the window is taken to end at the last span, {} after launch.",
            seconds(window.end_ns)
        ));
    } else if meta.end_reason == EndReason::Unfinished {
        notes.push(format!(
            "The run is unfinished: framelab was killed before it finalised the run (or is still recording it); this is what it had committed, up to {} after launch.",
            seconds(window.end_ns)
        ));
    }
    notes.extend(session_notes(meta));
    if meta.dropped_events > 0 && meta.session.shm_full() {
        // A larger ring needs memory there is none of: advising one would make it worse.
        notes.push(format!(
            "{} dropped because a ring was full: the collector fell behind. Larger rings would not fit: the shared memory holding them ({}) is full; give it more room first.",
            plural(meta.dropped_events, "event was", "events were"),
            meta.session.shm_dir
        ));
    } else if meta.dropped_events > 0 {
        notes.push(format!(
            "{} dropped because a ring was full: the collector fell behind. Rerun with a larger ring (framelab run --ring-records, e.g. 4 times the default {}).",
            plural(meta.dropped_events, "event was", "events were"),
            framelab_probe::wire::DEFAULT_RING_RECORDS
        ));
    }
    if meta.invalid_records > 0 {
        notes.push(format!(
            "{} skipped: a name id the process never interned (a bad id passed through the C API?), or a span given in another clock than CLOCK_MONOTONIC.",
            plural(meta.invalid_records, "invalid record was", "invalid records were")
        ));
    }
    if meta.names_refused > 0 {
        let missing = match meta.session.refused_name_records {
            0 => "records under them are missing".to_string(),
            n => format!(
                "{} under them {} missing",
                plural(n, "record", "records"),
                if n == 1 { "is" } else { "are" }
            ),
        };
        notes.push(format!(
            "{} refused because a process interned more names than the SDK supports; {missing}.",
            plural(meta.names_refused, "name was", "names were")
        ));
    }
    if facts.negative_spans > 0 {
        let first = facts.first_bad_span.map_or(String::new(), |s| {
            format!(
                "; the first: frame {}, start {} ns, duration {} ns",
                s.frame, s.start_ns, s.dur_ns
            )
        });
        notes.push(format!(
            "{} with a duration out of range skipped as invalid (negative: a clock \
             that went backwards; over 2^53 ns or ending past the clock's range: a corrupt \
             record){first}.",
            plural(facts.negative_spans, "span", "spans")
        ));
    }
    if facts.orphan_counter_values > 0 {
        notes.push(format!(
            "{} not counted: their frame has no span.",
            plural(
                facts.orphan_counter_values,
                "counter value",
                "counter values"
            )
        ));
    }
    // (A command that exited during a --warmup has its own note above.)
    let exited_in_warmup = meta.end_reason == EndReason::Exited
        && window.end_ns <= window.start_ns
        && meta.warmup_ns > 0;
    let ended_in_warmup = facts.spans > 0
        && facts.measured_frames == 0
        && facts.warmup_frames > 0
        && window.length_ns() == 0
        && !exited_in_warmup;
    if ended_in_warmup {
        // The run ended inside its warmup (`--warmup-frames` more than the run made, or a
        // `--warmup` from a first frame that came late): the window is empty at the end.
        notes.push(format!(
            "No frame ended inside the measured window: the run ended before its warmup did \
             ({}), so no rates, load or fps can be computed. Let it run longer, or give a \
             shorter --warmup or --warmup-frames.",
            plural(facts.warmup_frames, "frame", "frames") + " excluded as warmup"
        ));
    } else if window.length_ns() == 0 {
        notes.push("The measured window is empty: no rates, load or fps can be computed.".into());
    } else if let (Some(n), Some(why)) = (facts.hint, facts.hint_unusable) {
        notes.push(format!(
            "--frames {n} gave no throughput: {why}. Let the command run to its end (no \
             --duration, no --warmup) for a rate over the whole run."
        ));
    } else if facts.spans == 0 && facts.imported {
        notes.push("The import holds no spans: nothing in it became a frame.".into());
    } else if facts.spans == 0 && !facts.frames_from_hint && meta.session.foreign_users.is_empty() {
        // Said by `report` and `import` too, which have no --frames: the command is named.
        notes.push(
            "No spans were recorded: the command is not instrumented (or never reached a stage). For a throughput without spans, record it with framelab run --frames N.".into(),
        );
    } else if facts.spans > 0 && facts.measured_frames == 0 {
        notes.push("No frame ended inside the measured window.".into());
    }
    if facts.hint_ignored {
        notes.push(
            "--frames was ignored: the command recorded spans, and frames are counted from them."
                .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ExitInfo;

    fn window(start_ns: i64, end_ns: i64) -> ResolvedWindow {
        ResolvedWindow {
            start_ns,
            end_ns,
            end_from_last_span: false,
        }
    }

    fn facts() -> NoteFacts {
        NoteFacts {
            spans: 10,
            measured_frames: 5,
            ..NoteFacts::default()
        }
    }

    #[test]
    fn signal_names() {
        assert_eq!(describe_signal(11), "SIGSEGV (signal 11)");
        assert_eq!(describe_signal(6), "SIGABRT (signal 6)");
        assert_eq!(describe_signal(1), "SIGHUP (signal 1)");
        assert_eq!(describe_signal(31), "SIGSYS (signal 31)");
        assert_eq!(describe_signal(0), "signal 0");
        assert_eq!(describe_signal(-3), "signal -3");
        assert_eq!(describe_signal(64), "signal 64");
    }

    #[test]
    fn a_clean_run_has_no_notes() {
        let meta = RunMeta {
            end_reason: EndReason::Duration,
            exit: Some(ExitInfo {
                code: None,
                signal: Some(2),
                crashed: false,
            }),
            ..RunMeta::default()
        };
        assert!(notes(&meta, &window(0, 10), &facts()).is_empty());
    }

    /// Stopped at the end of its --duration by a later signal than SIGINT: it ignored the
    /// earlier ones, and the report says so (the JSON alone showed signal 9).
    #[test]
    fn a_command_that_outlived_sigint_says_which_signal_ended_it() {
        let stopped_by = |signal| RunMeta {
            end_reason: EndReason::Duration,
            exit: Some(ExitInfo {
                code: None,
                signal: Some(signal),
                crashed: false,
            }),
            ..RunMeta::default()
        };
        let n = notes(&stopped_by(libc::SIGKILL), &window(0, 10), &facts());
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].contains("SIGINT and SIGTERM") && n[0].contains("killed (SIGKILL)"));
        let n = notes(&stopped_by(libc::SIGTERM), &window(0, 10), &facts());
        assert!(n[0].contains("SIGTERM ended it"), "{n:?}");
    }

    /// A second Ctrl-C while stopping sends SIGKILL at once: the note says so, not that each
    /// signal was given the grace period.
    #[test]
    fn a_command_killed_at_a_second_ctrl_c_is_said_to_have_had_no_grace_period() {
        let stop = |signal, at_ms: i64, interrupt| crate::model::StopSignal {
            signal,
            at_ns: at_ms * 1_000_000,
            interrupt,
        };
        let meta = RunMeta {
            end_reason: EndReason::Interrupted,
            exit: Some(ExitInfo {
                code: None,
                signal: Some(libc::SIGKILL),
                crashed: false,
            }),
            session: crate::model::SessionFacts {
                interrupt_signal: Some(libc::SIGINT),
                stop_signals: vec![
                    stop(libc::SIGINT, 2_000, None),
                    stop(libc::SIGKILL, 2_450, Some(libc::SIGINT)),
                ],
                ..Default::default()
            },
            ..RunMeta::default()
        };
        let n = notes(&meta, &window(0, 2_000_000_000), &facts());
        assert_eq!(
            n[0],
            "A Ctrl-C (SIGINT) while framelab was stopping the command killed it at once \
             (SIGKILL, 0.45 s after framelab's SIGINT, without waiting out the grace period): \
             what it does on exit (flushing, logging) was cut short."
        );
        assert!(
            !n.iter().any(|n| n.contains("grace period to end")),
            "{n:?}"
        );
    }

    /// A trap handler that burned 0.8 s while `--duration` stopped the command: the cgroup
    /// counted it after the window. Said from a clock tick and 1% of the window's CPU.
    #[test]
    fn cpu_after_the_window_is_a_note_when_it_is_material() {
        let meta = |window_ms: i64, after_ms: i64| RunMeta {
            end_reason: EndReason::Duration,
            session: crate::model::SessionFacts {
                run_group: Some(crate::model::RunGroupFacts {
                    mechanism: "cgroup2".into(),
                    cpu_ns: Some(window_ms * 1_000_000),
                    after_window_cpu_ns: Some(after_ms * 1_000_000),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..RunMeta::default()
        };
        let n = notes(&meta(606, 804), &window(0, 10), &facts());
        assert_eq!(
            n,
            [
                "After the window: the run's processes used 804 ms of CPU more until they ended \
              (being stopped; the run's cgroup counted it), which is not in the figures above."
            ]
        );
        assert!(notes(&meta(2_000, 1_500), &window(0, 10), &facts())[0].contains("used 1.50 s"));
        // Below a tick, or below 1% of a busy window: a program's usual exit work.
        assert!(notes(&meta(606, 9), &window(0, 10), &facts()).is_empty());
        assert!(notes(&meta(10_000, 90), &window(0, 10), &facts()).is_empty());
        assert_eq!(notes(&meta(10_000, 100), &window(0, 10), &facts()).len(), 1);
    }

    #[test]
    fn cpu_time_no_task_had_is_a_note_only_when_it_can_stretch_frames() {
        let taken = crate::model::CpuTakenFacts::two_cpus_losing_3_percent();
        let meta = |taken: crate::model::CpuTakenFacts| RunMeta {
            end_reason: EndReason::Duration,
            session: crate::model::SessionFacts {
                cpu_taken: Some(taken),
                ..Default::default()
            },
            ..RunMeta::default()
        };
        let n = notes(&meta(taken.clone()), &window(0, 10), &facts());
        assert_eq!(
            n,
            [
                "3.0% of the CPUs' time over the window ran no task (2.5% stolen by the \
              hypervisor, 0.5% in interrupts; CPU 1 lost 4.5% of its own; /proc/stat): a \
              thread on a CPU losing that time looked on CPU meanwhile, so its spans and frames \
              were stretched by time the scheduler line cannot name. Stolen time is other work \
              on the VM's host: a run on a quieter host shows how much it cost."
            ]
        );
        // Interrupts rather than the host: where to look instead.
        let interrupted = crate::model::CpuTakenFacts {
            steal_ns: 0,
            softirq_ns: 560_000_000,
            ..taken.clone()
        };
        let n = notes(&meta(interrupted), &window(0, 10), &facts());
        assert!(
            n[0].contains("(0.0% stolen by the hypervisor, 3.0% in interrupts;")
                && n[0].ends_with("/proc/interrupts and /proc/softirqs say which."),
            "{n:?}"
        );
        let quiet = crate::model::CpuTakenFacts {
            steal_ns: 0,
            ..taken
        };
        assert!(notes(&meta(quiet), &window(0, 10), &facts()).is_empty());
    }

    #[test]
    fn crash_names_the_signal() {
        let meta = RunMeta {
            end_reason: EndReason::Exited,
            exit: Some(ExitInfo {
                code: None,
                signal: Some(11),
                crashed: true,
            }),
            ..RunMeta::default()
        };
        let n = notes(&meta, &window(0, 10), &facts());
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].contains("crashed: killed by SIGSEGV (signal 11)"),
            "{}",
            n[0]
        );
    }

    #[test]
    fn exit_code_drops_and_window_notes() {
        let meta = RunMeta {
            end_reason: EndReason::Exited,
            exit: Some(ExitInfo {
                code: Some(3),
                signal: None,
                crashed: false,
            }),
            dropped_events: 1234,
            invalid_records: 1,
            names_refused: 2,
            duration_ns: Some(20_000_000_000),
            ..RunMeta::default()
        };
        let f = NoteFacts {
            negative_spans: 4,
            ..facts()
        };
        let n = notes(&meta, &window(0, 12_340_000_000), &f);
        assert_eq!(n[0], "The command exited with code 3.");
        assert!(n[1].contains("exited 12.34 s after launch, before the --duration of 20.00 s"));
        assert!(n[2].starts_with("1234 events were dropped") && n[2].contains("--ring-records"));
        assert!(n[3].starts_with("1 invalid record was skipped"));
        assert!(n[4].starts_with("2 names were refused"));
        assert!(n[5].starts_with("4 spans with a duration out of range"));
        assert_eq!(n.len(), 6);
    }

    #[test]
    fn interrupted_unfinished_and_empty() {
        let meta = RunMeta {
            end_reason: EndReason::Interrupted,
            ..RunMeta::default()
        };
        let n = notes(&meta, &window(0, 3_000_000_000), &facts());
        assert_eq!(
            n,
            vec!["Interrupted by a signal to framelab (Ctrl-C, SIGTERM or SIGHUP) 3.00 s after launch; the window ends there."]
        );
        for (signal, by) in [
            (2, "Ctrl-C (SIGINT)"),
            (15, "SIGTERM to framelab"),
            (1, "SIGHUP to framelab"),
        ] {
            let mut meta = meta.clone();
            meta.session.interrupt_signal = Some(signal);
            let n = notes(&meta, &window(0, 3_000_000_000), &facts());
            assert_eq!(
                n,
                vec![format!(
                    "Interrupted by {by} 3.00 s after launch; the window ends there."
                )]
            );
        }

        let unfinished = ResolvedWindow {
            start_ns: 5,
            end_ns: 5,
            end_from_last_span: true,
        };
        let n = notes(&RunMeta::default(), &unfinished, &facts());
        assert!(n[0].contains("not finalised"));
        assert!(n[1].contains("window is empty"));

        let f = NoteFacts {
            measured_frames: 0,
            ..facts()
        };
        let exited = RunMeta {
            end_reason: EndReason::Exited,
            ..RunMeta::default()
        };
        let n = notes(&exited, &window(0, 10), &f);
        assert_eq!(n, vec!["No frame ended inside the measured window."]);

        let n = notes(&exited, &window(0, 10), &NoteFacts::default());
        assert!(n[0].starts_with("No spans were recorded"));

        // Killed after a commit: the window is as committed, and the run says it is unfinished.
        let n = notes(&RunMeta::default(), &window(0, 2_500_000_000), &facts());
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].starts_with("The run is unfinished") && n[0].contains("2.50 s"));
    }
}
