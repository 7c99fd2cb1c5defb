//! The header facts both the text and the Markdown report print, one sentence each:
//! command, host, target, window, frames, fps, cpu, counters, late, stutter, pacer. Each is
//! a line of spans: names marked as names, warnings with their tone; the writers escape and
//! colour them for their format.

use crate::analyze::counters::is_byte_counter;
use crate::analyze::metrics::FPS_LOWS;
use crate::analyze::Analysis;
use crate::model::WarmupFrom;
use crate::render::document::{plain, Line, Span, Tone};
use crate::render::human::{
    bit_rate, bytes, cores, cpu_secs, fps_target, load_pct, number, secs, shell_words, us,
};
use crate::units::plural;

/// Pieces of a line, ` · ` between them.
pub(crate) fn joined(parts: Vec<Line>) -> Line {
    let mut line = Line::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            line.push(Span::plain(" · "));
        }
        line.extend(part);
    }
    line
}

/// `text` in `tone`, a line of one piece.
fn toned(text: impl Into<String>, tone: Tone) -> Line {
    vec![Span::plain(text).toned(tone)]
}

/// `framelab · demo (depth 1) · run 2026-11-22T10:00:00Z`
pub fn title(a: &Analysis) -> String {
    let name = if !a.name.is_empty() {
        crate::display::name(&a.name).into_owned()
    } else if let Some(program) = a.command.first() {
        crate::display::name(program.rsplit('/').next().unwrap_or(program)).into_owned()
    } else {
        format!("run {}", a.run_id)
    };
    // A run framelab never finalised says so first thing, not only in JSON.
    let status = if a.end_reason == crate::model::EndReason::Unfinished {
        " · unfinished"
    } else {
        ""
    };
    if a.started_at.is_empty() {
        format!("framelab · {name}{status}")
    } else {
        format!("framelab · {name} · run {}{status}", a.started_at)
    }
}

pub fn command(a: &Analysis) -> Option<String> {
    (!a.command.is_empty()).then(|| crate::display::text(&shell_words(&a.command)).into_owned())
}

/// `arch=x86_64 · build=release`: each key and value escaped like any name from outside.
fn tags(a: &Analysis) -> Option<Line> {
    let shown: Vec<Line> = (a.tags.iter())
        .map(|t| vec![Span::name(&t.key), Span::plain("="), Span::name(&t.value)])
        .collect();
    (!shown.is_empty()).then(|| joined(shown))
}

fn host(a: &Analysis) -> Option<Line> {
    let h = &a.host;
    let mut parts = Vec::new();
    match (h.cpu_model.is_empty(), h.cores) {
        (false, 0) => parts.push(h.cpu_model.clone()),
        (false, n) => parts.push(format!("{}, {n} cores", h.cpu_model)),
        (true, 0) => {}
        (true, n) => parts.push(format!("{n} cores")),
    }
    if !h.kernel.is_empty() {
        parts.push(format!("Linux {}", h.kernel));
    }
    if !h.clocksource.is_empty() {
        parts.push(format!("clocksource {}", h.clocksource));
    }
    (!parts.is_empty()).then(|| vec![Span::name(parts.join(" · "))])
}

fn target(a: &Analysis) -> Option<String> {
    match (a.target_fps, a.budget_ns) {
        (Some(fps), Some(b)) => Some(format!(
            "{} fps (budget {} µs)",
            fps_target(fps),
            us(b as f64)
        )),
        (Some(fps), None) => Some(format!("{} fps", fps_target(fps))),
        (None, Some(b)) => Some(format!(
            "budget {} µs ({} fps)",
            us(b as f64),
            fps_target(1e9 / b as f64)
        )),
        (None, None) => None,
    }
}

/// A time of the window line in a unit that shows it: seconds from 1 s, else ms, else µs
/// (a 3.2 ms imported trace is `3.2 ms`, not `0.00 s`).
pub fn window_time(ns: i64) -> String {
    let abs = ns.unsigned_abs();
    if abs == 0 || abs >= 1_000_000_000 {
        format!("{} s", secs(ns))
    } else if abs >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

fn window(a: &Analysis) -> String {
    let w = &a.window;
    let t = window_time;
    let mut s = if w.start_ns <= 0 && w.warmup_frames == 0 {
        format!("{} measured, no warmup", t(w.length_ns))
    } else if let (WarmupFrom::Frames, Some(n)) = (w.warmup_from, w.warmup_frames_asked) {
        format!(
            "{} measured after the first {n} frames ({} warmup frames excluded, window from {})",
            t(w.length_ns),
            w.warmup_frames,
            t(w.start_ns)
        )
    } else if let (WarmupFrom::FirstFrame, Some(first)) = (w.warmup_from, w.first_span_ns) {
        format!(
            "{} measured after {} warmup from the first frame at {} ({} warmup frames excluded)",
            t(w.length_ns),
            t(w.warmup_ns),
            t(first),
            w.warmup_frames
        )
    } else if a.spans == 0 {
        format!("{} measured after {} warmup", t(w.length_ns), t(w.start_ns))
    } else {
        format!(
            "{} measured after {} warmup ({} warmup frames excluded)",
            t(w.length_ns),
            t(w.start_ns),
            w.warmup_frames
        )
    };
    if w.after_frames > 0 {
        s.push_str(&format!(
            " · {} after it excluded",
            plural(w.after_frames, "frame that ended", "frames that ended")
        ));
    }
    if w.open_frames > 0 {
        s.push_str(&format!(
            " · {} when the command stopped excluded (lacking {})",
            plural(w.open_frames, "frame still open", "frames still open"),
            w.open_frames_lack.join(", ")
        ));
    }
    s
}

fn frames(a: &Analysis) -> Option<Line> {
    if a.spans == 0 && !a.frames_from_hint {
        return None;
    }
    if a.import.as_ref().is_some_and(|i| i.frames_undefined()) {
        let how = crate::model::ImportInfo::NO_FRAMES;
        let how = how.strip_prefix("frames: ").unwrap_or(how);
        return Some(toned(how, Tone::Warning));
    }
    let mut parts = vec![plain(if a.frames_from_hint {
        format!(
            "{} given by --frames over the whole run, {} s",
            a.frames,
            secs(a.window.length_ns)
        )
    } else {
        a.frames.to_string()
    })];
    if let Some(fps) = a.observed_fps {
        parts.push(plain(if a.frames_from_hint {
            // docs/metrics.md: N ÷ the whole wall time, not the command's own rate.
            format!("{fps:.2} per s ({FPS_FROM_FRAMES})")
        } else {
            format!("observed {fps:.2} fps")
        }));
    }
    if !a.frames_from_hint {
        let dropped = format!("{} events dropped", a.dropped_events);
        parts.push(if a.dropped_events > 0 {
            toned(dropped, Tone::Bad)
        } else {
            plain(dropped)
        });
    }
    Some(joined(parts))
}

/// What a rate from `--frames N` is, said wherever it is shown (report, compare, bench).
pub const FPS_FROM_FRAMES: &str = "fps from --frames: includes start-up and shutdown";

/// `req_s 1234.56 req/s (higher is better) · p99 — (not read: see the notes)`
fn metrics(a: &Analysis) -> Option<Line> {
    if a.metrics.is_empty() {
        return None;
    }
    let parts: Vec<Line> = a
        .metrics
        .iter()
        .map(|m| {
            let name = Span::name(&m.name);
            match m.value {
                Some(v) => {
                    let mut line = vec![name, Span::plain(format!(" {v}"))];
                    if !m.unit.is_empty() {
                        line.extend([Span::plain(" "), Span::name(&m.unit)]);
                    }
                    let direction = match m.direction {
                        Some(crate::stats::Direction::HigherIsBetter) => " (higher is better)",
                        Some(crate::stats::Direction::LowerIsBetter) => " (lower is better)",
                        _ => "",
                    };
                    line.push(Span::plain(direction));
                    line
                }
                None => vec![
                    name.toned(Tone::Bad),
                    Span::plain(" — (not read: see the notes)").toned(Tone::Bad),
                ],
            }
        })
        .collect();
    Some(joined(parts))
}

/// `stdout 12.0 KiB kept · stderr 1.0 MiB kept of 5.2 MiB (the first 4.2 MiB dropped)`
fn outputs(a: &Analysis) -> Option<String> {
    if a.outputs.is_empty() {
        return None;
    }
    let size = |b: u64| {
        let b = b as f64;
        if b < 1024.0 {
            format!("{b:.0} B")
        } else if b < 1024.0 * 1024.0 {
            format!("{:.1} KiB", b / 1024.0)
        } else {
            format!("{:.1} MiB", b / (1024.0 * 1024.0))
        }
    };
    let parts: Vec<String> = a
        .outputs
        .iter()
        .map(|o| {
            if o.dropped == 0 {
                format!("{} {} kept", o.stream, size(o.bytes))
            } else {
                format!(
                    "{} {} kept of {} (the first {} dropped)",
                    o.stream,
                    size(o.bytes - o.dropped),
                    size(o.bytes),
                    size(o.dropped)
                )
            }
        })
        .collect();
    Some(format!("{} in the run file", parts.join(" · ")))
}

/// What the fps line's `mean` is, beside the frames line's `observed` (they differ by where
/// the window's edges fall between frame ends).
pub const FPS_MEAN_IS: &str = "1 ÷ mean interval; observed = frames ÷ window";

/// Where the lows the brief line leaves out are.
pub const MORE_LOWS: &str = "every low: framelab report --verbose, or --format json";

/// `mean 119.96 (…) · p50 120.0 · p1 114.9 · low1_avg 112.3 · low0_1_avg 99.5 (…)`, leaving
/// out what is not reported; `verbose` names all ten (p10, p5, p0.1 and the `_int` lows).
fn fps(a: &Analysis, verbose: bool) -> Option<String> {
    let f = a.fps.as_ref()?;
    let mut parts = vec![format!("mean {:.2} ({FPS_MEAN_IS})", f.mean)];
    let mut left_out = false;
    for low in &FPS_LOWS {
        let Some(v) = (low.read)(f) else { continue };
        if verbose || low.brief {
            parts.push(format!("{} {v:.1}", low.name));
        } else {
            left_out = true;
        }
    }
    let mut line = parts.join(" · ");
    if left_out {
        line.push_str(&format!(" ({MORE_LOWS})"));
    }
    Some(line)
}

fn cpu(a: &Analysis) -> Option<String> {
    let c = a.cpu.as_ref()?;
    let (resolution, wall) = (c.cpu_resolution_ns, a.window.length_ns);
    let split = crate::analyze::cpu::split_resolution_ns(resolution);
    // The total can be finer than its user/sys split (the CPU clock against clock ticks):
    // lead with the total, so a 2 ms process does not read as "0.00 s + 0.00 s".
    let split_note = if split > resolution && resolution > 0 {
        ", split in 10 ms ticks"
    } else {
        ""
    };
    let mut s = format!(
        "{} ({} s user + {} s sys{split_note})",
        cpu_total(c.user_ns.saturating_add(c.sys_ns), resolution),
        cpu_secs(c.user_ns, split),
        cpu_secs(c.sys_ns, split),
    );
    // An empty window has no load (its note says why).
    if let (Some(load), Some(n)) = (c.load_pct, c.cores) {
        s.push_str(&format!(
            " · load {}% ({} cores)",
            load_pct(load, resolution, wall),
            cores(n, resolution, wall)
        ));
    }
    if let Some(per_frame) = c.cpu_per_frame_ns {
        let per_frame = if resolution > 0 && c.work_units > 0 {
            // CPU per frame is only as fine as the CPU ÷ the frames.
            let step_us = resolution as f64 / c.work_units as f64 / 1e3;
            crate::units::fixed_to_resolution(per_frame / 1e3, step_us, decimals_of(&us(per_frame)))
        } else {
            us(per_frame)
        };
        s.push_str(&format!(" · {per_frame} µs per frame"));
    }
    if let Some(observer) = c.collector_load_pct {
        s.push_str(&format!(" · collector (framelab) {observer:.1}%"));
    }
    Some(s)
}

/// `cgroup v2 /sys/fs/cgroup/framelab-4242-1 · 2.431 s CPU of everything the run started
/// (the rows hold 2.402 s)`: what held the run's processes, and what it counted.
fn run_group(a: &Analysis) -> Option<Line> {
    let g = a.run_group.as_ref()?;
    let what = match g.mechanism.as_str() {
        "cgroup2" => vec![Span::plain("cgroup v2 "), Span::name(&g.path)],
        "cgroup1" => vec![
            Span::plain("cgroup v1 cpuacct + freezer "),
            Span::name(&g.path),
        ],
        _ => plain("process tree, no cgroup (see the notes)"),
    };
    let mut parts = vec![what];
    if let (Some(cpu), Some(rows)) = (g.cpu_ns, g.rows_cpu_ns) {
        // cpu.stat counts µs: no finer than that.
        let (cpu_text, rows_text) = (cpu_total(cpu, 1000), cpu_total(rows, 1000));
        // Rows beyond what their ticks round off: a process left the group, the tree kept it.
        parts.push(if crate::analyze::cpu::beyond_tick_rounding(rows - cpu, cpu) {
            // Not "everything the run started": processes that left the cgroup are not in
            // its count, while the process-tree walk kept them in the rows.
            toned(
                format!(
                    "{cpu_text} CPU counted in the cgroup, less than the rows hold ({rows_text}): processes that left it are in the rows, not in its count (see the notes)"
                ),
                Tone::Warning,
            )
        } else {
            plain(format!(
                "{cpu_text} CPU of everything the run started (the rows hold {rows_text})"
            ))
        });
    }
    if !g.escaped.is_empty() {
        parts.push(toned(
            format!(
                "{} still running at the end, killed (see the notes)",
                plural(g.escaped.len() as u64, "process", "processes")
            ),
            Tone::Warning,
        ));
    }
    Some(joined(parts))
}

/// The machine's CPU time over the window that no task had: the hypervisor's and the
/// interrupts'. A thread on a CPU losing it looks on CPU, so it stretches frames unnamed.
fn cpu_taken(a: &Analysis) -> Option<Line> {
    let t = a.cpu_taken.as_ref()?;
    let text = format!(
        "{:.1}% of the time of {} ran no task: {:.1}% stolen by the hypervisor, {:.1}% in interrupts · CPU {} lost most, {:.1}% (/proc/stat, {} ms ticks)",
        100.0 * t.share(),
        plural(u64::from(t.cpus), "CPU", "CPUs"),
        100.0 * t.of_all(t.steal_ns),
        100.0 * t.of_all(t.interrupts_ns()),
        t.most_taken_cpu,
        100.0 * t.most_share(),
        t.tick_ns / 1_000_000
    );
    Some(if t.notable() {
        toned(text, Tone::Warning)
    } else {
        plain(text)
    })
}

/// Total CPU time with no more precision than its source: ms below a second, else s.
fn cpu_total(ns: i64, resolution_ns: i64) -> String {
    let resolution = if resolution_ns > 0 {
        resolution_ns as f64
    } else {
        1.0
    };
    if ns < 1_000_000_000 {
        let text = crate::units::fixed_to_resolution(ns as f64 / 1e6, resolution / 1e6, 1);
        format!("{text} ms")
    } else {
        let text = crate::units::fixed_to_resolution(ns as f64 / 1e9, resolution / 1e9, 3);
        format!("{text} s")
    }
}

/// How many decimals `text` (a formatted number) has.
fn decimals_of(text: &str) -> usize {
    text.split_once('.').map_or(0, |(_, d)| d.len())
}

fn counters(a: &Analysis) -> Option<Line> {
    if a.counters.is_empty() {
        return None;
    }
    let parts: Vec<Line> = a
        .counters
        .iter()
        .map(|c| {
            let name = Span::name(crate::display::name(&c.name));
            let value = match (is_byte_counter(&c.name), c.bits_per_second) {
                (true, Some(bps)) => format!(" {} ({})", bytes(c.total as f64), bit_rate(bps)),
                (true, None) => format!(" {}", bytes(c.total as f64)),
                _ => format!(" {}", number(c.total as f64)),
            };
            vec![name, Span::plain(value)]
        })
        .collect();
    Some(joined(parts))
}

fn late(a: &Analysis) -> Option<Line> {
    let l = a.late.as_ref()?;
    let count = Span::plain(format!(
        "{} ({:.2}%)",
        plural(l.late_frames, "frame", "frames"),
        l.late_pct
    ));
    let count = if l.late_pct >= 1.0 {
        count.toned(Tone::Bad)
    } else if l.late_frames > 0 {
        count.toned(Tone::Warning)
    } else {
        count
    };
    Some(vec![
        count,
        Span::plain(format!(
            " over budget · {} · longest streak {}",
            plural(l.missed_slots, "missed slot", "missed slots"),
            l.longest_streak
        )),
    ])
}

/// The stutter rule in the words of the report, with this run's trailing window
/// (DESIGN.md, `analyze::late::stutter`).
fn stutter_rule(a: &Analysis) -> String {
    let mean = a.interval.as_ref().map_or(0.0, |d| d.mean_ns);
    let n = crate::analyze::late::stutter_window(mean);
    format!(
        "a stutter is an interval over 2.5 × the mean of up to {} before it",
        plural(n as u64, "interval", "intervals")
    )
}

fn stutter(a: &Analysis) -> Option<Line> {
    let s = a.stutter.as_ref()?;
    if s.count == 0 {
        let intervals = a.interval.as_ref().map_or(0, |d| d.count);
        return Some(plain(format!(
            "none in {} ({})",
            plural(intervals, "interval", "intervals"),
            stutter_rule(a)
        )));
    }
    let count = format!(
        "{} ({:.2}%)",
        plural(s.count, "interval", "intervals"),
        s.count_pct
    );
    Some(vec![
        Span::plain(count).toned(Tone::Warning),
        Span::plain(format!(
            " · {:.2}% of the time ({})",
            s.time_pct,
            stutter_rule(a)
        )),
    ])
}

/// `interval SD 4400 µs · adaptive SD 3888 µs (500 ms) · mean |interval − budget| 2714 µs`
fn jitter(a: &Analysis) -> Option<Line> {
    let p = a.pacing.as_ref()?;
    let mut line = plain(format!(
        "interval SD {} µs · adaptive SD {} µs ({} ms)",
        us(p.interval_sd_ns),
        us(p.adaptive_sd_ns),
        p.adaptive_window_ns / 1_000_000
    ));
    if let Some(e) = p.mean_abs_budget_error_ns {
        // Its bars are Markdown's table cells: escaped as a name is.
        line.push(Span::name(format!(
            " · mean |interval − budget| {} µs",
            us(e)
        )));
    }
    Some(line)
}

/// `< 2 ms 3 (50.0%) · 2–4 ms 0 (0.0%) · … · ≥ 12 ms 1 (16.7%)`: the |Δ interval| buckets.
fn delta_buckets(a: &Analysis) -> Option<String> {
    let p = a.pacing.as_ref().filter(|p| p.deltas > 0)?;
    let ms = |ns: i64| ns / 1_000_000;
    let parts: Vec<String> = p
        .delta_buckets
        .iter()
        .map(|b| {
            let range = match (b.from_ns, b.to_ns) {
                (0, Some(to)) => format!("< {} ms", ms(to)),
                (from, Some(to)) => format!("{}–{} ms", ms(from), ms(to)),
                (from, None) => format!("≥ {} ms", ms(from)),
            };
            format!("{range} {} ({:.1}%)", b.count, b.pct)
        })
        .collect();
    Some(parts.join(" · "))
}

/// `woke late p50 0.02 µs · p99 4.9 µs · max 3341 µs in 1440 waits (not frame work: …)`:
/// how late the SDK's pacer woke, which no stage, total or thread includes.
fn pacer(a: &Analysis) -> Option<String> {
    let p = a.pacer.as_ref()?;
    let d = &p.late;
    let mut s = format!(
        "woke late p50 {} µs · p99 {} µs · max {} µs in {} (a wait before the frame: not in \
         its stages, total or frame work)",
        us(d.p50_ns),
        us(d.p99_ns),
        us(d.max_ns),
        plural(d.count, "wait", "waits")
    );
    if p.unmatched > 0 {
        s.push_str(&format!(
            " · {} for a frame with no span not counted",
            plural(p.unmatched, "wait", "waits")
        ));
    }
    Some(s)
}

/// `chrome · trace.json.gz · 2 bad lines skipped (first: trace.json.gz:12: no "ph")`
fn imported(a: &Analysis) -> Option<Line> {
    let i = a.import.as_ref()?;
    let mut parts = vec![
        plain(i.format.clone()),
        vec![Span::name(i.files.join(", "))],
    ];
    if i.skipped > 0 {
        let skipped = plural(i.skipped, "bad record skipped", "bad records skipped");
        let mut line = vec![Span::plain(skipped).toned(Tone::Warning)];
        if let Some(first) = &i.first_skipped {
            line.extend([
                Span::plain(" (first: ").toned(Tone::Warning),
                Span::name(first).toned(Tone::Warning),
                Span::plain(")").toned(Tone::Warning),
            ]);
        }
        parts.push(line);
    }
    Some(joined(parts))
}

/// `encode uprobe prog:encode_frame · 200 calls · 2.4 µs per call (entry + return; push,
/// emulated) · 1.1 µs subtracted from each span`, one clause per probe, then what they cost
/// the thread they cost most.
fn probes(a: &Analysis) -> Option<Line> {
    let p = a.probes.as_ref()?;
    let mut parts: Vec<Line> = p
        .probes
        .iter()
        .map(|f| {
            let mut line = if f.frame_probe {
                vec![Span::plain("frames from uprobe "), Span::name(&f.target)]
            } else {
                vec![
                    Span::plain(format!("{} {} ", f.stage, f.kind)),
                    Span::name(&f.target),
                ]
            };
            let hits = match f.kind.as_str() {
                "usdt event" | "tracepoint" => plural(f.hits, "hit", "hits"),
                _ => plural(f.hits, "call", "calls"),
            };
            let hits = match f.hits {
                0 => Span::plain(hits).toned(Tone::Warning),
                _ => Span::plain(hits),
            };
            line.extend([Span::plain(" · "), hits]);
            let cost = match f.cost_per_hit_ns {
                Some(ns) => {
                    let per = match f.kind.as_str() {
                        _ if f.frame_probe => "hit (entry; ",
                        "usdt" => "call (begin + end; ",
                        "usdt event" => "hit (",
                        _ => "call (entry + return; ",
                    };
                    let class = f.first_instruction.describe();
                    format!("{:.1} µs per {per}{class})", ns as f64 / 1e3)
                }
                None => format!("cost unknown ({})", f.first_instruction.describe()),
            };
            if f.kind == "tracepoint" {
                // Not a trap in the program: no cost of its own to say.
                return line;
            }
            line.push(Span::plain(format!(" · {cost}")));
            match (f.subtracted_ns, f.kind.as_str()) {
                (_, "usdt event") => {}
                (Some(ns), _) if f.clamped > 0 => line.extend([
                    Span::plain(format!(
                        " · {:.1} µs subtracted from each span (",
                        ns as f64 / 1e3
                    )),
                    Span::plain(format!(
                        "{} shorter than that made 0",
                        plural(f.clamped, "span", "spans")
                    ))
                    .toned(Tone::Warning),
                    Span::plain(")"),
                ]),
                (Some(ns), _) => line.push(Span::plain(format!(
                    " · {:.1} µs subtracted from each span",
                    ns as f64 / 1e3
                ))),
                (None, _) if f.frame_probe => {}
                (None, _) => line.push(Span::plain(
                    " · nothing subtracted (its share in a span is not known)",
                )),
            };
            line
        })
        .collect();
    // `run --pair`: events made spans.
    parts.extend(p.pairs.iter().map(|pair| {
        let spans = Span::plain(plural(pair.spans, "span", "spans"));
        vec![
            Span::plain(format!(
                "{} pair {}:{} by {} · ",
                pair.stage, pair.start, pair.end, pair.by
            )),
            match pair.spans {
                0 => spans.toned(Tone::Warning),
                _ => spans,
            },
        ]
    }));
    if let Some(tid) = p.busiest_tid {
        let line = format!(
            "they cost thread {tid} {:.1}% of the run",
            p.busiest_share_pct
        );
        parts.push(if p.busiest_share_pct > 100.0 {
            // Hits × the per-hit cost calibrated at the start: more than the run is
            // impossible, so the calibration was off (it was 1.6× on a loaded machine).
            toned(
                format!(
                    "by the per-hit cost measured at the start they cost thread {tid} \
                         {:.0}% of the run, which is impossible: that measure was too high \
                         (a loaded machine?), and each span lost it too",
                    p.busiest_share_pct
                ),
                Tone::Warning,
            )
        } else if p.busiest_share_pct > crate::probes::DOMINATING_SHARE_PCT {
            toned(
                format!("{line}: the probes dominate it (see docs/probes.md)"),
                Tone::Warning,
            )
        } else {
            plain(line)
        });
    }
    if p.lost > 0 {
        let cut: u64 = p.probes.iter().map(|f| f.cut_by_loss).sum();
        parts.push(toned(
            format!(
                "{} lost: their spans are missing, and {} open then {} not made spans",
                crate::units::plural(p.lost, "sample", "samples"),
                crate::units::plural(cut, "call", "calls"),
                if cut == 1 { "was" } else { "were" }
            ),
            Tone::Bad,
        ));
    }
    Some(joined(parts))
}

/// The header lines as (label, sentence), in report order; lines that do not apply are left
/// out. Every FPS low is named when `verbose`.
pub fn facts_in(a: &Analysis, verbose: bool) -> Vec<(&'static str, Line)> {
    let lines = [
        ("command", command(a).map(plain)),
        ("tags", tags(a)),
        ("imported", imported(a)),
        ("host", host(a)),
        ("target", target(a).map(plain)),
        ("window", Some(plain(window(a)))),
        ("metrics", metrics(a)),
        ("frames", frames(a)),
        ("probes", probes(a)),
        ("bound", super::pipeline::bound_line(a)),
        ("scheduler", super::pipeline::sched_line(a)),
        ("fps", fps(a, verbose).map(plain)),
        ("cpu", cpu(a).map(plain)),
        ("run group", run_group(a)),
        ("cpu taken", cpu_taken(a)),
        ("counters", counters(a)),
        ("late", late(a)),
        ("stutter", stutter(a)),
        ("jitter", jitter(a)),
        ("Δ interval", delta_buckets(a).map(plain)),
        ("pacer", pacer(a).map(plain)),
        ("output", outputs(a).map(plain)),
    ];
    lines
        .into_iter()
        .filter_map(|(label, line)| line.map(|l| (label, l)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{FpsSummary, LateSummary};
    use crate::render::document::shown;
    use crate::render::style::Style;

    /// A fact's line as `st` shows it.
    fn text_of(line: Option<Line>, st: &Style) -> String {
        shown(&line.unwrap(), st)
    }

    /// A process that moved itself out of the run's cgroup: its 0.79 s are in the rows
    /// (the process-tree walk kept it), not in the group's 6.2 ms, which is then not
    /// "everything the run started".
    #[test]
    fn the_run_group_line_does_not_call_a_count_short_of_the_rows_everything() {
        let line = |cpu_ns: i64, rows_ns: i64| {
            let a = Analysis {
                run_group: Some(crate::model::RunGroupFacts {
                    mechanism: "cgroup2".into(),
                    path: "/sys/fs/cgroup/framelab-1-1".into(),
                    cpu_ns: Some(cpu_ns),
                    rows_cpu_ns: Some(rows_ns),
                    ..Default::default()
                }),
                ..Analysis::default()
            };
            text_of(run_group(&a), &Style::default())
        };
        assert_eq!(
            line(6_200_000, 792_500_000),
            "cgroup v2 /sys/fs/cgroup/framelab-1-1 · 6.2 ms CPU counted in the cgroup, less \
             than the rows hold (792.5 ms): processes that left it are in the rows, not in \
             its count (see the notes)"
        );
        // Rows a tick over the group (rounding): the usual line.
        let usual = line(2_431_000_000, 2_440_000_000);
        assert!(usual.contains("CPU of everything the run started (the rows hold 2.440"));
    }

    #[test]
    fn the_probes_line_says_what_was_subtracted_clamped_and_paired() {
        let probe = crate::model::ProbeFacts {
            stage: "encode".into(),
            kind: "uprobe".into(),
            target: "prog:encode_frame".into(),
            first_instruction: crate::probes::cost::InstructionClass::Push,
            cost_per_hit_ns: Some(2400),
            subtracted_ns: Some(1100),
            clamped: 3,
            hits: 300,
            spans: 300,
            ..Default::default()
        };
        let unknown = crate::model::ProbeFacts {
            stage: "decode".into(),
            subtracted_ns: None,
            clamped: 0,
            ..probe.clone()
        };
        let a = Analysis {
            probes: Some(crate::probes::ProbeSummary {
                probes: vec![probe, unknown],
                pairs: vec![crate::model::PairFacts {
                    stage: "sleep".into(),
                    start: "enter".into(),
                    end: "exit".into(),
                    by: "tid".into(),
                    spans: 40,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Analysis::default()
        };
        let line = text_of(probes(&a), &Style::default());
        assert!(
            line.contains(
                "encode uprobe prog:encode_frame · 300 calls · 2.4 µs per call (entry + return; \
                 push, emulated) · 1.1 µs subtracted from each span (3 spans shorter than that \
                 made 0)"
            ),
            "{line}"
        );
        assert!(
            line.contains("decode uprobe prog:encode_frame · 300 calls · 2.4 µs per call (entry + return; push, emulated) · nothing subtracted"),
            "{line}"
        );
        assert!(
            line.contains("sleep pair enter:exit by tid · 40 spans"),
            "{line}"
        );
    }

    #[test]
    fn the_cpu_taken_line_gives_shares_of_the_machine_and_of_the_cpu_that_lost_most() {
        let taken = crate::model::CpuTakenFacts::two_cpus_losing_3_percent();
        let a = Analysis {
            cpu_taken: Some(taken.clone()),
            ..Analysis::default()
        };
        assert_eq!(
            text_of(cpu_taken(&a), &Style::default()),
            "3.0% of the time of 2 CPUs ran no task: 2.5% stolen by the hypervisor, 0.5% in \
             interrupts · CPU 1 lost most, 4.5% (/proc/stat, 10 ms ticks)"
        );
        // 3% of the machine is notable; 1% of it, 4.5% of one CPU, is not; nor are two
        // ticks, whatever share of a short window they are.
        assert!(taken.notable());
        let quieter = crate::model::CpuTakenFacts {
            steal_ns: 100_000_000,
            irq_ns: 0,
            softirq_ns: 100_000_000,
            ..taken.clone()
        };
        assert!(!quieter.notable());
        let two_ticks = crate::model::CpuTakenFacts {
            wall_ns: 100_000_000,
            steal_ns: 20_000_000,
            irq_ns: 0,
            softirq_ns: 0,
            most_taken_ns: 20_000_000,
            ..taken
        };
        assert!(!two_ticks.notable());
        assert_eq!(cpu_taken(&Analysis::default()), None);
    }

    #[test]
    fn fps_line_names_every_variant_in_order() {
        let a = Analysis {
            fps: Some(FpsSummary {
                mean: 119.964,
                p50: Some(120.0),
                p10: Some(119.14),
                p5: Some(118.6),
                p1: Some(114.94),
                p0_1: Some(101.0),
                low1_avg: Some(112.3),
                low1_int: Some(113.04),
                low0_1_avg: Some(99.5),
                low0_1_int: Some(100.2),
            }),
            ..Analysis::default()
        };
        // --verbose (and JSON) keep all ten.
        assert_eq!(
            fps(&a, true).unwrap(),
            "mean 119.96 (1 ÷ mean interval; observed = frames ÷ window) · p50 120.0 · \
             p10 119.1 · p5 118.6 · p1 114.9 · low1_avg 112.3 · low1_int 113.0 · p0.1 101.0 · \
             low0_1_avg 99.5 · low0_1_int 100.2"
        );
        // The brief line: p1, the 1% and the 0.1% low, and where the rest are.
        assert_eq!(
            fps(&a, false).unwrap(),
            "mean 119.96 (1 ÷ mean interval; observed = frames ÷ window) · p50 120.0 · \
             p1 114.9 · low1_avg 112.3 · low0_1_avg 99.5 (every low: framelab report \
             --verbose, or --format json)"
        );
        // Nothing left out (too few intervals for the others): no pointer.
        let few = Analysis {
            fps: Some(FpsSummary {
                mean: 30.0,
                p50: Some(30.0),
                ..FpsSummary::default()
            }),
            ..Analysis::default()
        };
        assert_eq!(
            fps(&few, false).unwrap(),
            "mean 30.00 (1 ÷ mean interval; observed = frames ÷ window) · p50 30.0"
        );
    }

    /// `stutter none` beside an 18 ms interval reads as a bug unless the rule is said.
    #[test]
    fn the_stutter_line_says_the_rule() {
        use crate::analyze::{Dist, StutterSummary};
        let a = Analysis {
            stutter: Some(StutterSummary {
                count: 0,
                count_pct: 0.0,
                time_pct: 0.0,
            }),
            // 8.33 ms mean: round(10 × √8.33) = 29 intervals before it.
            interval: Some(Dist {
                count: 1439,
                mean_ns: 8_333_333.0,
                ..Dist::default()
            }),
            ..Analysis::default()
        };
        let st = Style::default();
        assert_eq!(
            text_of(stutter(&a), &st),
            "none in 1439 intervals (a stutter is an interval over 2.5 × the mean of up to 29 \
             intervals before it)"
        );
    }

    /// A 3.2 ms imported trace is not a `0.00 s` window.
    #[test]
    fn window_times_have_a_unit_that_shows_them() {
        assert_eq!(window_time(3_200_000), "3.2 ms");
        assert_eq!(window_time(640_000), "640.0 µs");
        assert_eq!(window_time(12_000_000_000), "12.00 s");
        assert_eq!(window_time(1_000_000_000), "1.00 s");
        assert_eq!(window_time(0), "0.00 s");
        let a = Analysis {
            window: crate::analyze::WindowSummary {
                length_ns: 3_200_000,
                ..Default::default()
            },
            ..Analysis::default()
        };
        assert_eq!(window(&a), "3.2 ms measured, no warmup");
    }

    #[test]
    fn late_count_is_yellow_under_one_percent_and_red_above() {
        let st = Style {
            color: true,
            markdown: false,
        };
        let with = |late_frames, late_pct| Analysis {
            late: Some(LateSummary {
                budget_ns: 1,
                late_frames,
                late_pct,
                missed_slots: 0,
                longest_streak: 0,
            }),
            ..Analysis::default()
        };
        assert!(text_of(late(&with(0, 0.0)), &st).starts_with("0 frames (0.00%) over"));
        assert!(text_of(late(&with(1, 0.5)), &st).starts_with("\x1b[33m1 frame (0.50%)"));
        assert!(text_of(late(&with(3, 1.5)), &st).starts_with("\x1b[31m3 frames (1.50%)"));
    }

    #[test]
    fn markdown_names_are_escaped() {
        let st = Style {
            color: false,
            markdown: true,
        };
        assert_eq!(st.name("nal_bytes|x*"), r"nal\_bytes\|x\*");
        assert_eq!(Style::default().name("nal_bytes"), "nal_bytes");
    }
}
