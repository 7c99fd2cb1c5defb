//! Telling a file's format from its first few kilobytes, most specific signature first.

use super::Format;

/// How much of the file the signatures look at.
const HEAD: usize = 64 * 1024;

/// The format `input` (decompressed) is in, or `None` when nothing matches.
pub fn detect(input: &[u8]) -> Option<Format> {
    let head = &input[..input.len().min(HEAD)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if looks_like_perfetto(head) {
        return Some(Format::Perfetto);
    }
    let text = String::from_utf8_lossy(head);
    let first_line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let lines = text.lines();
    if lines.clone().take(200).any(is_wayland_line) {
        return Some(Format::Wayland);
    }
    // Anywhere in the head: a script's printf lines often come before its maps.
    if lines.clone().any(is_bpftrace_bucket) {
        return Some(Format::Bpftrace);
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        return Some(json_kind(&text, first_line));
    }
    if is_presentmon_header(first_line) {
        return Some(Format::Presentmon);
    }
    // MangoHud's `log_versioning` puts `v1`, the version and `---` before the system line.
    if lines
        .clone()
        .take(5)
        .any(|l| l.starts_with("os,cpu,gpu") || l.starts_with("fps,frametime"))
    {
        return Some(Format::Mangohud);
    }
    if lines
        .clone()
        .any(|l| l.contains("bench: ") && l.contains(" real "))
    {
        return Some(Format::Ffmpeg);
    }
    if first_line.contains(',') && !looks_binary(head) {
        return Some(Format::Csv);
    }
    None
}

/// Bytes no text log has: a NUL, or more than one in a hundred other control characters
/// or invalid UTF-8 sequences (a binary file with a comma in it is not a CSV).
fn looks_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    let controls = (head.iter())
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count();
    let invalid = head
        .utf8_chunks()
        .filter(|c| !c.invalid().is_empty())
        .count();
    (controls + invalid) * 100 > head.len()
}

/// PresentMon 1.x (`MsBetweenPresents`, spelled `msBetweenPresents` by some versions),
/// 2.x (`MsBetweenAppStart`) and 2.x with `--v2_metrics`: `FrameTime` beside a swap chain
/// or a CPU start column (`CPUStartTime`, or `CPUStartQPC`/`CPUStartQPCTimeInMs` with
/// `--qpc_time`/`--qpc_time_ms`). MangoHud's `frametime` comes with neither.
fn is_presentmon_header(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let columns: Vec<&str> = lower.split(',').map(str::trim).collect();
    let has = |name: &str| columns.contains(&name);
    has("msbetweenpresents")
        || has("msbetweenappstart")
        || (has("frametime")
            && (has("swapchainaddress") || columns.iter().any(|c| c.starts_with("cpustart"))))
}

/// A Perfetto trace is a `Trace` message: repeated field 1 (`packet`), each a
/// length-delimited `TracePacket`. The first packet's length must fit in the file.
fn looks_like_perfetto(head: &[u8]) -> bool {
    if head.first() != Some(&0x0A) {
        return false;
    }
    let mut len: u64 = 0;
    for (i, &byte) in head.iter().skip(1).take(10).enumerate() {
        len |= u64::from(byte & 0x7F) << (7 * i);
        if byte & 0x80 == 0 {
            // A text file starting with a newline would need a tiny "length" that is
            // followed by printable text; real packets start with a field tag.
            let rest = &head[2 + i..];
            return len > 0 && rest.first().is_some_and(|&t| t & 0x07 <= 5 && t >= 0x08);
        }
    }
    false
}

/// Chrome trace, JSON Lines of spans, or bpftrace's `-f json` output.
fn json_kind(text: &str, first_line: &str) -> Format {
    let first = first_line.trim();
    if first.starts_with("{\"type\"") || first.starts_with("{ \"type\"") {
        return Format::Bpftrace;
    }
    if text.contains("\"traceEvents\"") || text.trim_start().starts_with('[') {
        return Format::Chrome;
    }
    let second = text.lines().filter(|l| !l.trim().is_empty()).nth(1);
    if first.starts_with('{')
        && first.ends_with('}')
        && second.is_none_or(|l| l.trim_start().starts_with('{'))
    {
        return Format::Jsonl;
    }
    Format::Chrome
}

/// `[4, 8)   12 |@@@@   |`: a bucket line of a bpftrace `hist()` or `lhist()`.
fn is_bpftrace_bucket(line: &str) -> bool {
    let line = line.trim_end();
    (line.starts_with('[') || line.starts_with('(')) && line.ends_with('|') && line.contains(" |")
}

/// `[1234567.890]  -> wl_surface@3.commit()` and the like (`wl_surface#3` since
/// libwayland 1.23).
fn is_wayland_line(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix('[') else {
        return false;
    };
    let Some((stamp, message)) = rest.split_once(']') else {
        return false;
    };
    let stamp = stamp.trim();
    !stamp.is_empty()
        && stamp
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        && (message.contains('@') || message.contains('#'))
        && message.contains('(')
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::import::test_support::fixture;

    #[test]
    fn the_shared_fixtures_are_recognised() {
        assert_eq!(
            detect(&fixture("presentmon-v1-farcrynewdawn.csv")),
            Some(Format::Presentmon)
        );
        assert_eq!(
            detect(&fixture("presentmon-v2-presentbench-multiprocess.csv")),
            Some(Format::Presentmon)
        );
        assert_eq!(
            detect(&fixture("mangohud-0.6.8-glxgears-llvmpipe.csv")),
            Some(Format::Mangohud)
        );
    }

    #[test]
    fn signatures() {
        assert_eq!(detect(b"[{\"ph\":\"X\"}]"), Some(Format::Chrome));
        assert_eq!(detect(b"{\"traceEvents\":[]}"), Some(Format::Chrome));
        assert_eq!(
            detect(b"{\"start\":1,\"dur\":2}\n{\"start\":3,\"dur\":2}\n"),
            Some(Format::Jsonl)
        );
        assert_eq!(
            detect(b"{\"type\": \"hist\", \"data\": {}}\n"),
            Some(Format::Bpftrace)
        );
        assert_eq!(
            detect(b"[1234567.890]  -> wl_surface@3.commit()\n"),
            Some(Format::Wayland)
        );
        assert_eq!(
            detect(b"[4056,123] wl_display@1.delete_id(3)\n"),
            Some(Format::Wayland)
        );
        assert_eq!(
            detect(b"[1081336.980] {Display Queue} wl_display#1.delete_id(3)\n"),
            Some(Format::Wayland)
        );
        assert_eq!(
            detect(b"bench: 1234 user 0 sys 1300 real decode_video 0.0\n"),
            Some(Format::Ffmpeg)
        );
        assert_eq!(
            detect(b"@usecs:\n[0]                    3 |@@@@                |\n"),
            Some(Format::Bpftrace)
        );
        assert_eq!(detect(b"start_ns,dur_ns,stage\n1,2,a\n"), Some(Format::Csv));
        assert_eq!(
            detect(b"Application,ProcessID,msBetweenPresents\ngame.exe,1,16.6\n"),
            Some(Format::Presentmon)
        );
        assert_eq!(
            detect(b"Application,ProcessID,SwapChainAddress,CPUStartTime,FrameTime,CPUBusy\n"),
            Some(Format::Presentmon)
        );
        // `--v2_metrics --qpc_time` and `--qpc_time_ms`; and a swap chain alone.
        for header in [
            "Application,ProcessID,SwapChainAddress,FrameType,CPUStartQPC,FrameTime,CPUBusy\n",
            "Application,ProcessID,FrameType,CPUStartQPCTimeInMs,FrameTime,CPUBusy\n",
            "Application,ProcessID,SwapChainAddress,FrameTime\n",
        ] {
            assert_eq!(
                detect(header.as_bytes()),
                Some(Format::Presentmon),
                "{header}"
            );
        }
        assert_eq!(
            detect(
                b"v1\n0.7.2\n---------------------\nos,cpu,gpu,ram,kernel,driver,cpuscheduler\n"
            ),
            Some(Format::Mangohud)
        );
        assert_eq!(
            detect(b"\x0a\x05\x08\x01\x10\x02\x00"),
            Some(Format::Perfetto)
        );
        assert_eq!(detect(b"\x00\x01\x02garbage"), None);
        // Random bytes with a comma in the first line: not a CSV.
        let mut random = vec![b'a', b','];
        let mut x = 0x2545F4914F6CDD1Du64;
        for _ in 0..4096 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            random.push((x >> 56) as u8 | 1);
        }
        assert_eq!(detect(&random), None);
        assert_eq!(detect("début,durée\n1,2\n".as_bytes()), Some(Format::Csv));
        assert_eq!(detect(b""), None);
    }
}
