//! The bounds of every number on framelab's command line, and the clap value parsers that
//! hold them: a value outside is a usage error (exit 2) whose line names the limit. No
//! number reaches the rest of framelab unchecked, so none wraps (`--warmup 3000000h` was a
//! negative window), allocates without end (`compare --resamples 1000000000000`) or spins
//! (`--live 1ns`). The table of every flag's bound is in README.md ("Limits").

use std::time::Duration;

use framelab::session::watch::WatchArg;
use framelab::units::parse_duration;

const SECOND: Duration = Duration::from_secs(1);
/// "2%", "0.5%" or a fraction "0.02".
pub fn noise_band(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let value = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{text}' is not a percentage; write e.g. 2% or 0.5%"))?;
    if !(0.0..1.0).contains(&value) {
        return Err(format!(
            "'{text}' is out of range; the noise band is between 0% and 100%"
        ));
    }
    Ok(value)
}

#[cfg(test)]
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);
const WEEK: Duration = Duration::from_secs(7 * 86_400);

/// A duration between `min` and `max` (both included).
fn duration_in(text: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let d = parse_duration(text)?;
    if d < min {
        return Err(if min == Duration::from_nanos(1) {
            format!("'{text}' is zero: give a positive duration, e.g. 5ms")
        } else {
            format!("is shorter than the least allowed, {}", shown(min))
        });
    }
    if d > max {
        return Err(format!("is longer than the most allowed, {}", shown(max)));
    }
    Ok(d)
}

/// `d` in the largest unit that holds it whole, as the flag would be written: `168h`.
fn shown(d: Duration) -> String {
    let ns = d.as_nanos();
    let units = [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ];
    units
        .iter()
        .find(|(unit, _)| ns.is_multiple_of(*unit))
        .map_or_else(
            || format!("{ns}ns"),
            |(unit, name)| format!("{}{name}", ns / unit),
        )
}

/// `--duration` of `run`, `bench`, `demo`: above zero, at most a week.
pub fn run_length(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_nanos(1), WEEK)
}

/// `--warmup`: zero to a week.
pub fn warmup(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::ZERO, WEEK)
}

/// `--budget`: 1 µs to 1000 s (the budgets of `--fps` 1000000 to 0.001).
pub fn budget(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_micros(1), Duration::from_secs(1000))
}

/// The least and most `--fps`.
pub const MIN_FPS: f64 = 0.001;
pub const MAX_FPS: f64 = 1e6;

/// `--fps`: 0.001 to 1000000 frames per second.
pub fn fps(text: &str) -> Result<f64, String> {
    // A number outside the range (0 too) is told the range, not only that it is not positive.
    let fps = match text.trim().parse::<f64>() {
        Ok(fps) if fps.is_finite() => fps,
        _ => framelab::units::parse_fps(text)?,
    };
    if !(MIN_FPS..=MAX_FPS).contains(&fps) {
        return Err(format!(
            "'{text}' is not a usable frame rate: it must be a positive number \
             from {MIN_FPS} to {MAX_FPS:.0} frames per second, e.g. 60"
        ));
    }
    Ok(fps)
}

/// `--grace`: zero to an hour.
pub fn grace(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::ZERO, HOUR)
}

/// `--live`: 100 ms (a print takes a read of the run file) to a day.
pub fn live(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_millis(100), DAY)
}

/// A histogram bucket width (`--linear`, `--live-linear`): above zero, at most a day.
pub fn step(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_nanos(1), DAY)
}

/// A histogram bound (`--min`, `--max`): zero to a week.
pub fn hist_bound(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::ZERO, WEEK)
}

/// `--sample-every`: 1 ms to an hour.
pub fn sample_every(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_millis(1), HOUR)
}

/// `timers --duration` (each cell): above zero, at most an hour.
pub fn timers_duration(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_nanos(1), HOUR)
}

/// `timers --need`: above zero, at most 10 s.
pub fn timers_need(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_nanos(1), 10 * SECOND)
}

/// `timers --interval`: 1 µs to 10 s. A shorter wait is shorter than the loop that measures
/// it: every deadline has passed before the wait starts, and every strategy reads the same.
pub fn timers_interval(text: &str) -> Result<Duration, String> {
    let d = duration_in(text, Duration::from_nanos(1), 10 * SECOND)?;
    if d < Duration::from_micros(1) {
        return Err(
            "is shorter than the least allowed, 1us: a shorter wait ends before the \
                    loop measuring it can start it, so every way to wait would read the same"
                .into(),
        );
    }
    Ok(d)
}

/// A whole number from `min` to `max`.
fn count_in(text: &str, min: u64, max: u64) -> Result<u64, String> {
    let n: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("is not a whole number from {min} to {max}"))?;
    if !(min..=max).contains(&n) {
        return Err(format!("is outside {min} to {max}"));
    }
    Ok(n)
}

/// `--frames`: 1 to 10^12.
pub fn frames(text: &str) -> Result<u64, String> {
    count_in(text, 1, 1_000_000_000_000)
}

/// `--warmup-frames`: 1 to 10^9.
pub fn warmup_frames(text: &str) -> Result<u64, String> {
    count_in(text, 1, 1_000_000_000)
}

/// `--ring-records`: a power of two the SDK takes (4 to 2^24).
pub fn ring_records(text: &str) -> Result<u64, String> {
    use framelab_probe::wire::{MAX_RING_RECORDS, MIN_RING_RECORDS};
    let n = count_in(text, MIN_RING_RECORDS, MAX_RING_RECORDS)?;
    if !n.is_power_of_two() {
        return Err(format!(
            "is not a power of two (e.g. {})",
            n.next_power_of_two().min(MAX_RING_RECORDS)
        ));
    }
    Ok(n)
}

/// `sources --count`: 1 to 100000 readings.
pub fn readings(text: &str) -> Result<u64, String> {
    count_in(text, 1, 100_000)
}

/// `hist --buckets`: 1 to 10000 (`hist` checks it again for callers of the library).
pub fn buckets(text: &str) -> Result<u64, String> {
    let max = framelab::hist::layout::MAX_BUCKETS;
    count_in(text, 1, max).map_err(|_| format!("give 1 to {max} buckets, e.g. --buckets 50"))
}

/// The most runs `bench -n` takes per variant and combination.
pub const MAX_RUNS: u64 = 10_000;

/// `bench -n`: 2 to 10000 (one run shows no spread across runs).
pub fn runs(text: &str) -> Result<u32, String> {
    count_in(text, 2, MAX_RUNS).map(|n| n as u32).map_err(|e| {
        format!("{e} (at least 2 runs per variant are needed to see the spread across runs, and 4 a side for a verdict; 6 or more is better)")
    })
}

/// `--profile=HZ`: 1 to the kernel's `perf_event_max_sample_rate` (the kernel refuses
/// more, and lowers it by itself when sampling takes too long).
pub fn profile_hz(text: &str) -> Result<u64, String> {
    let max = framelab::profile::perf::max_sample_rate().unwrap_or(100_000);
    count_in(text, 1, max.max(1)).map_err(|e| {
        format!("{e} samples per second (the kernel allows at most {max}: kernel.perf_event_max_sample_rate)")
    })
}

/// `profile --top`: 1 to 10000 functions per table.
pub fn top(text: &str) -> Result<usize, String> {
    count_in(text, 1, 10_000).map(|n| n as usize)
}

/// `--ready-timeout`: 10 ms to 1 h.
pub fn ready_timeout(text: &str) -> Result<Duration, String> {
    duration_in(text, Duration::from_millis(10), Duration::from_secs(3600))
}

/// `bench --warmup-runs`: 0 to 1000 rounds.
/// `bench --seed`: any 64-bit seed.
pub fn seed(text: &str) -> Result<u64, String> {
    count_in(text, 0, u64::MAX)
}

pub fn warmup_runs(text: &str) -> Result<u64, String> {
    count_in(text, 0, 1000)
}

/// `--resamples`: 100 (fewer make a 95% interval meaningless) to 1000000.
pub fn resamples(text: &str) -> Result<usize, String> {
    count_in(text, 100, 1_000_000).map(|n| n as usize)
}

/// `--run-id`: a run id, 1 or more.
pub fn run_id(text: &str) -> Result<i64, String> {
    count_in(text, 1, i64::MAX as u64).map(|n| n as i64)
}

/// `--pid`, `--watch-pid`: 1 to the kernel's `pid_max`.
pub fn pid(text: &str) -> Result<u32, String> {
    let max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        // The kernel's own ceiling (PID_MAX_LIMIT) where /proc does not say.
        .unwrap_or(4_194_304);
    let pid = count_in(text, 1, max.saturating_sub(1).clamp(1, i32::MAX as u64))
        .map_err(|e| format!("{e} (pids on this machine are below pid_max, {max})"))?;
    Ok(pid as u32)
}

/// `--watch-pid [ROLE=]PID`.
pub fn watch_pid(text: &str) -> Result<WatchArg<u32>, String> {
    let (role, pid_text) = framelab::session::watch::split_role(text)?;
    let target = pid(pid_text)?;
    Ok(WatchArg { role, target })
}

/// `demo --depth`: 1 or 2 (the demo checks it again for callers of the library).
pub fn depth(text: &str) -> Result<u32, String> {
    count_in(text, 1, 2).map(|n| n as u32).map_err(|e| {
        format!("{e}: use 1 (stages in series) or 2 (capture+convert overlapping encode+send)")
    })
}

/// `demo --fps`: one frame a minute to what the pacer keeps (1/60 to 1000000).
pub fn demo_fps(text: &str) -> Result<f64, String> {
    let fps = fps(text)?;
    if fps < 1.0 / 60.0 {
        return Err("is too low: the demo needs at least one frame a minute (0.0167 fps)".into());
    }
    Ok(fps)
}

/// The most bytes an import reads by default: the file after decompression.
pub const DEFAULT_MAX_INPUT: &str = "1GiB";

/// `import --max-input`: 1 MiB to 1 TiB; `512MB`, `4GiB`, bare bytes.
pub fn input_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| "is not a size: write e.g. 512MB or 4GiB".to_string())?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "t" | "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "'{unit}' is not a size unit: use B, KB, MB, GB, TB or KiB, MiB, GiB, TiB"
            ))
        }
    };
    let bytes = n
        .checked_mul(scale)
        .filter(|b| (1 << 20..=1 << 40).contains(b))
        .ok_or_else(|| "is outside 1MiB to 1TiB".to_string())?;
    Ok(bytes)
}

/// `import --max-ratio`: 1 to 100000 times the compressed size.
pub fn ratio(text: &str) -> Result<u64, String> {
    count_in(text, 1, 100_000)
}

/// `whatif --depth`: frames in flight, 1 to 64.
pub fn whatif_depth(text: &str) -> Result<usize, String> {
    count_in(text, 1, 64).map(|n| n as usize)
}

/// `whatif --stage-scale STAGE=FACTOR`: a factor from 0.001 to 1000.
pub fn stage_scale(text: &str) -> Result<(String, f64), String> {
    let (stage, factor) = stage_and(text, "FACTOR")?;
    let f: f64 = (factor.trim().parse())
        .map_err(|_| format!("`{factor}` is not a number: give STAGE=FACTOR, e.g. encode=0.5"))?;
    if !(0.001..=1000.0).contains(&f) {
        // As written: `{f}` of 1e308 is 309 digits.
        let factor = factor.trim();
        return Err(format!("the factor {factor} is outside 0.001 to 1000"));
    }
    Ok((stage, f))
}

/// `whatif --move STAGE=THREAD`.
pub fn stage_move(text: &str) -> Result<(String, String), String> {
    let (stage, thread) = stage_and(text, "THREAD")?;
    if thread.trim().is_empty() {
        return Err("the thread is empty: give STAGE=THREAD, e.g. encode=encoder".into());
    }
    Ok((stage, thread.to_string()))
}

fn stage_and<'a>(text: &'a str, what: &str) -> Result<(String, &'a str), String> {
    match text.split_once('=') {
        Some((stage, rest)) if !stage.trim().is_empty() => Ok((stage.trim().to_string(), rest)),
        _ => Err(format!("give STAGE={what}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_absurd_values_of_issue_11_are_refused_with_their_limit() {
        assert_eq!(
            warmup("3000000h").unwrap_err(),
            "is longer than the most allowed, 168h"
        );
        assert!(run_length("3000000h").unwrap_err().contains("168h"));
        assert!(budget("3000000h").unwrap_err().contains("1000s"));
        assert!(fps("1e308").unwrap_err().contains("0.001 to 1000000"));
        assert!(fps("0").unwrap_err().contains("0.001 to 1000000"));
        assert!(fps("-5").unwrap_err().contains("0.001 to 1000000"));
        assert!(fps("abc").unwrap_err().contains("not a frame rate"));
        assert!(seed("99999999999999999999999")
            .unwrap_err()
            .contains("0 to 18446744073709551615"));
        assert_eq!(
            stage_scale("rate=1e308").unwrap_err(),
            "the factor 1e308 is outside 0.001 to 1000"
        );
        assert!(resamples("0").unwrap_err().contains("100 to 1000000"));
        assert!(resamples("1000000000000").is_err());
        assert!(pid("4294967295").unwrap_err().contains("pid_max"));
        assert!(live("1ns").unwrap_err().contains("100ms"));
        assert!(live("0s").is_err());
        assert!(runs("1000000000").unwrap_err().contains("10000"));
        assert!(ring_records("1000").unwrap_err().contains("1024"));
        assert!(input_size("2TiB").is_err());
    }

    #[test]
    fn ordinary_values_pass() {
        assert_eq!(warmup("0s").unwrap(), Duration::ZERO);
        assert_eq!(run_length("168h").unwrap(), WEEK);
        assert_eq!(fps("59.94").unwrap(), 59.94);
        assert_eq!(budget("8.333ms").unwrap(), Duration::from_micros(8333));
        assert_eq!(ring_records("65536").unwrap(), 65536);
        assert_eq!(pid("1").unwrap(), 1);
        assert_eq!(input_size("512MB").unwrap(), 512_000_000);
        assert_eq!(input_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(resamples("10000").unwrap(), 10_000);
        assert_eq!(live("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(sample_every("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(grace(&format!("{}s", MINUTE.as_secs())).unwrap(), MINUTE);
    }
}
