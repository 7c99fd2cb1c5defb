//! The header facts both the text and the Markdown report print, one sentence each:
//! command, host, target, window, frames, fps, cpu, counters, late, stutter, pacer.

use super::format::{
    bit_rate, bytes, cores, cpu_secs, fps_target, load_pct, number, secs, shell_words, us,
};
use super::style::Style;
use crate::analyze::counters::is_byte_counter;
use crate::analyze::Analysis;
use crate::model::WarmupFrom;
use crate::units::plural;

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
fn tags(a: &Analysis, st: &Style) -> Option<String> {
    let shown: Vec<String> = (a.tags.iter())
        .map(|t| format!("{}={}", st.name(&t.key), st.name(&t.value)))
        .collect();
    (!shown.is_empty()).then(|| shown.join(" · "))
}

fn host(a: &Analysis, st: &Style) -> Option<String> {
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
    (!parts.is_empty()).then(|| st.name(&parts.join(" · ")))
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

fn frames(a: &Analysis, st: &Style) -> Option<String> {
    if a.spans == 0 && !a.frames_from_hint {
        return None;
    }
    if a.import.as_ref().is_some_and(|i| i.frames_undefined()) {
        let how = crate::model::ImportInfo::NO_FRAMES;
        return Some(st.yellow(how.strip_prefix("frames: ").unwrap_or(how)));
    }
    let mut parts = vec![if a.frames_from_hint {
        format!(
            "{} given by --frames over the whole run, {} s",
            a.frames,
            secs(a.window.length_ns)
        )
    } else {
        a.frames.to_string()
    }];
    if let Some(fps) = a.observed_fps {
        parts.push(if a.frames_from_hint {
            // docs/metrics.md: N ÷ the whole wall time, not the command's own rate.
            format!("{fps:.2} per s ({FPS_FROM_FRAMES})")
        } else {
            format!("observed {fps:.2} fps")
        });
    }
    if !a.frames_from_hint {
        let dropped = format!("{} events dropped", a.dropped_events);
        parts.push(if a.dropped_events > 0 {
            st.red(&dropped)
        } else {
            dropped
        });
    }
    Some(parts.join(" · "))
}

/// What a rate from `--frames N` is, said wherever it is shown (report, compare, bench).
pub const FPS_FROM_FRAMES: &str = "fps from --frames: includes start-up and shutdown";

/// `req_s 1234.56 req/s (higher is better) · p99 — (not read: see the notes)`
fn metrics(a: &Analysis, st: &Style) -> Option<String> {
    if a.metrics.is_empty() {
        return None;
    }
    let parts: Vec<String> = a
        .metrics
        .iter()
        .map(|m| {
            let name = st.name(&m.name);
            match m.value {
                Some(v) => {
                    let unit = if m.unit.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", st.name(&m.unit))
                    };
                    let direction = match m.direction {
                        Some(crate::stats::Direction::HigherIsBetter) => " (higher is better)",
                        Some(crate::stats::Direction::LowerIsBetter) => " (lower is better)",
                        _ => "",
                    };
                    format!("{name} {v}{unit}{direction}")
                }
                None => st.red(&format!("{name} — (not read: see the notes)")),
            }
        })
        .collect();
    Some(parts.join(" · "))
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

/// The lows the brief fps line keeps: the percentile, and the 1% and 0.1% lows.
const BRIEF_LOWS: [&str; 3] = ["p1", "low1_avg", "low0_1_avg"];

/// Where the lows the brief line leaves out are.
pub const MORE_LOWS: &str = "every low: framelab report --verbose, or --format json";

/// `mean 119.96 (…) · p50 120.0 · p1 114.9 · low1_avg 112.3 · low0_1_avg 99.5 (…)`, leaving
/// out what is not reported; `verbose` names all ten (p10, p5, p0.1 and the `_int` lows).
fn fps(a: &Analysis, verbose: bool) -> Option<String> {
    let f = a.fps.as_ref()?;
    let mut parts = vec![format!("mean {:.2} ({FPS_MEAN_IS})", f.mean)];
    let named = [
        ("p50", f.p50),
        ("p10", f.p10),
        ("p5", f.p5),
        ("p1", f.p1),
        ("low1_avg", f.low1_avg),
        ("low1_int", f.low1_int),
        ("p0.1", f.p0_1),
        ("low0_1_avg", f.low0_1_avg),
        ("low0_1_int", f.low0_1_int),
    ];
    let mut left_out = false;
    for (name, value) in named {
        let Some(v) = value else { continue };
        if verbose || name == "p50" || BRIEF_LOWS.contains(&name) {
            parts.push(format!("{name} {v:.1}"));
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
fn run_group(a: &Analysis, st: &Style) -> Option<String> {
    let g = a.run_group.as_ref()?;
    let what = match g.mechanism.as_str() {
        "cgroup2" => format!("cgroup v2 {}", st.name(&g.path)),
        "cgroup1" => format!("cgroup v1 cpuacct + freezer {}", st.name(&g.path)),
        _ => "process tree, no cgroup (see the notes)".to_owned(),
    };
    let mut parts = vec![what];
    if let (Some(cpu), Some(rows)) = (g.cpu_ns, g.rows_cpu_ns) {
        // cpu.stat counts µs: no finer than that.
        parts.push(format!(
            "{} CPU of everything the run started (the rows hold {})",
            cpu_total(cpu, 1000),
            cpu_total(rows, 1000)
        ));
    }
    if !g.escaped.is_empty() {
        parts.push(st.yellow(&format!(
            "{} left it or outlived the kill (see the notes)",
            plural(g.escaped.len() as u64, "process", "processes")
        )));
    }
    Some(parts.join(" · "))
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

fn counters(a: &Analysis, st: &Style) -> Option<String> {
    if a.counters.is_empty() {
        return None;
    }
    let parts: Vec<String> = a
        .counters
        .iter()
        .map(|c| {
            let name = st.name(&crate::display::name(&c.name));
            match (is_byte_counter(&c.name), c.bits_per_second) {
                (true, Some(bps)) => {
                    format!("{name} {} ({})", bytes(c.total as f64), bit_rate(bps))
                }
                (true, None) => format!("{name} {}", bytes(c.total as f64)),
                _ => format!("{name} {}", number(c.total as f64)),
            }
        })
        .collect();
    Some(parts.join(" · "))
}

fn late(a: &Analysis, st: &Style) -> Option<String> {
    let l = a.late.as_ref()?;
    let count = format!(
        "{} ({:.2}%)",
        plural(l.late_frames, "frame", "frames"),
        l.late_pct
    );
    let count = if l.late_pct >= 1.0 {
        st.red(&count)
    } else if l.late_frames > 0 {
        st.yellow(&count)
    } else {
        count
    };
    Some(format!(
        "{count} over budget · {} · longest streak {}",
        plural(l.missed_slots, "missed slot", "missed slots"),
        l.longest_streak
    ))
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

fn stutter(a: &Analysis, st: &Style) -> Option<String> {
    let s = a.stutter.as_ref()?;
    if s.count == 0 {
        let intervals = a.interval.as_ref().map_or(0, |d| d.count);
        return Some(format!(
            "none in {} ({})",
            plural(intervals, "interval", "intervals"),
            stutter_rule(a)
        ));
    }
    let count = format!(
        "{} ({:.2}%)",
        plural(s.count, "interval", "intervals"),
        s.count_pct
    );
    let count = if s.count > 0 {
        st.yellow(&count)
    } else {
        count
    };
    Some(format!(
        "{count} · {:.2}% of the time ({})",
        s.time_pct,
        stutter_rule(a)
    ))
}

/// `interval SD 4400 µs · adaptive SD 3888 µs (500 ms) · mean |interval − budget| 2714 µs`
fn jitter(a: &Analysis, st: &Style) -> Option<String> {
    let p = a.pacing.as_ref()?;
    let mut s = format!(
        "interval SD {} µs · adaptive SD {} µs ({} ms)",
        us(p.interval_sd_ns),
        us(p.adaptive_sd_ns),
        p.adaptive_window_ns / 1_000_000
    );
    if let Some(e) = p.mean_abs_budget_error_ns {
        s.push_str(&st.name(&format!(" · mean |interval − budget| {} µs", us(e))));
    }
    Some(s)
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
fn imported(a: &Analysis, st: &Style) -> Option<String> {
    let i = a.import.as_ref()?;
    let mut parts = vec![i.format.clone(), st.name(&i.files.join(", "))];
    if i.skipped > 0 {
        let mut skipped = plural(i.skipped, "bad record skipped", "bad records skipped");
        if let Some(first) = &i.first_skipped {
            skipped.push_str(&format!(" (first: {})", st.name(first)));
        }
        parts.push(st.yellow(&skipped));
    }
    Some(parts.join(" · "))
}

/// `encode uprobe prog:encode_frame · 200 calls · 2.4 µs per call (entry + return; push,
/// emulated) · 1.1 µs subtracted from each span`, one clause per probe, then what they cost
/// the thread they cost most.
fn probes(a: &Analysis, st: &Style) -> Option<String> {
    let p = a.probes.as_ref()?;
    let mut parts: Vec<String> = p
        .probes
        .iter()
        .map(|f| {
            let what = if f.frame_probe {
                format!("frames from uprobe {}", st.name(&f.target))
            } else {
                format!("{} {} {}", f.stage, f.kind, st.name(&f.target))
            };
            let hits = match f.kind.as_str() {
                "usdt event" | "tracepoint" => plural(f.hits, "hit", "hits"),
                _ => plural(f.hits, "call", "calls"),
            };
            let hits = if f.hits == 0 { st.yellow(&hits) } else { hits };
            let cost = match f.cost_per_hit_ns {
                Some(ns) => {
                    let per = match f.kind.as_str() {
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
                return format!("{what} · {hits}");
            }
            let subtracted = match (f.subtracted_ns, f.kind.as_str()) {
                (_, "usdt event") => String::new(),
                (Some(ns), _) if f.clamped > 0 => format!(
                    " · {:.1} µs subtracted from each span ({})",
                    ns as f64 / 1e3,
                    st.yellow(&format!(
                        "{} shorter than that made 0",
                        plural(f.clamped, "span", "spans")
                    ))
                ),
                (Some(ns), _) => format!(" · {:.1} µs subtracted from each span", ns as f64 / 1e3),
                (None, _) if f.frame_probe => String::new(),
                (None, _) => " · nothing subtracted (its share in a span is not known)".to_owned(),
            };
            format!("{what} · {hits} · {cost}{subtracted}")
        })
        .collect();
    // `run --pair`: events made spans.
    parts.extend(p.pairs.iter().map(|pair| {
        let spans = plural(pair.spans, "span", "spans");
        format!(
            "{} pair {}:{} by {} · {}",
            pair.stage,
            pair.start,
            pair.end,
            pair.by,
            if pair.spans == 0 {
                st.yellow(&spans)
            } else {
                spans
            }
        )
    }));
    if let Some(tid) = p.busiest_tid {
        let line = format!(
            "they cost thread {tid} {:.1}% of the run",
            p.busiest_share_pct
        );
        parts.push(
            if p.busiest_share_pct > crate::probes::DOMINATING_SHARE_PCT {
                st.yellow(&format!(
                    "{line}: the probes dominate it (see docs/probes.md)"
                ))
            } else {
                line
            },
        );
    }
    if p.lost > 0 {
        parts.push(st.yellow(&format!("{} samples lost", p.lost)));
    }
    Some(parts.join(" · "))
}

/// The header lines as (label, sentence), in report order; lines that do not apply are left out.
pub fn facts(a: &Analysis, st: &Style) -> Vec<(&'static str, String)> {
    facts_in(a, st, false)
}

/// [`facts`], with every FPS low named when `verbose`.
pub fn facts_in(a: &Analysis, st: &Style, verbose: bool) -> Vec<(&'static str, String)> {
    let lines = [
        ("command", command(a)),
        ("tags", tags(a, st)),
        ("imported", imported(a, st)),
        ("host", host(a, st)),
        ("target", target(a)),
        ("window", Some(window(a))),
        ("metrics", metrics(a, st)),
        ("frames", frames(a, st)),
        ("probes", probes(a, st)),
        ("bound", super::pipeline::bound_line(a, st)),
        ("scheduler", super::pipeline::sched_line(a, st)),
        ("fps", fps(a, verbose)),
        ("cpu", cpu(a)),
        ("run group", run_group(a, st)),
        ("counters", counters(a, st)),
        ("late", late(a, st)),
        ("stutter", stutter(a, st)),
        ("jitter", jitter(a, st)),
        ("Δ interval", delta_buckets(a)),
        ("pacer", pacer(a)),
        ("output", outputs(a)),
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
        let line = probes(&a, &Style::default()).unwrap();
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
            stutter(&a, &st).unwrap(),
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
        assert!(late(&with(0, 0.0), &st)
            .unwrap()
            .starts_with("0 frames (0.00%) over"));
        assert!(late(&with(1, 0.5), &st)
            .unwrap()
            .starts_with("\x1b[33m1 frame (0.50%)"));
        assert!(late(&with(3, 1.5), &st)
            .unwrap()
            .starts_with("\x1b[31m3 frames (1.50%)"));
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
