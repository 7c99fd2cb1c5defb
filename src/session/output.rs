//! The command's stdout and stderr, when a run needs them: each goes through a pipe that a
//! thread of framelab drains, forwarding every byte to framelab's own stdout or stderr
//! (the terminal still shows everything), keeping the last `KEEP_BYTES` for the run file
//! and matching lines for `--metric`. A stream nobody needs is not captured at all: the
//! command writes straight to the terminal, as without framelab (a pipe is not a
//! terminal, and programs that colour their output or buffer it by line behave
//! differently on one).

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use crate::output::{
    evaluate_json, evaluate_output, CapturedOutput, FileBefore, MetricSource, MetricSpec,
    MetricValue, Scanner, COMMAND_ROLE, KEEP_BYTES,
};

/// What the command's stdout and stderr are connected to: a pipe of framelab's, or
/// inherited (`None`).
#[derive(Default)]
pub struct ChildStdio {
    pub stdout: Option<Stdio>,
    pub stderr: Option<Stdio>,
}

/// Pipes made before the launch, and what JSON result files looked like then.
pub struct Prepared {
    metrics: Vec<MetricSpec>,
    /// Where the command's captured stdout is forwarded: framelab's stdout (1) or stderr (2).
    stdout_forward: RawFd,
    stdio: Option<ChildStdio>,
    readers: [Option<OwnedFd>; 2],
    json_before: Vec<FileBefore>,
    started: SystemTime,
}

/// Which streams a run captures: those a `--metric` reads, or both with `--keep-output`.
pub fn streams_needed(metrics: &[MetricSpec], keep_output: bool) -> (bool, bool) {
    metrics
        .iter()
        .fold((keep_output, keep_output), |(o, e), m| {
            let (mo, me) = m.streams();
            (o || mo, e || me)
        })
}

/// Makes the pipes the command will write to (none when no stream is needed). With
/// `stdout_to_stderr` (the report is framelab's stdout, as JSON) the command's stdout goes
/// to framelab's stderr, captured or not, so that stdout holds the report alone.
pub fn prepare(
    metrics: &[MetricSpec],
    keep_output: bool,
    stdout_to_stderr: bool,
) -> Result<Prepared> {
    let (out, err) = streams_needed(metrics, keep_output);
    let mut stdio = ChildStdio::default();
    if stdout_to_stderr && !out {
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .context("cannot give the command framelab's stderr as its stdout")?;
        stdio.stdout = Some(Stdio::from(stderr));
    }
    let mut readers = [None, None];
    if out {
        let (read, write) = pipe().context("cannot make a pipe for the command's stdout")?;
        stdio.stdout = Some(Stdio::from(write));
        readers[0] = Some(read);
    }
    if err {
        let (read, write) = pipe().context("cannot make a pipe for the command's stderr")?;
        stdio.stderr = Some(Stdio::from(write));
        readers[1] = Some(read);
    }
    let json_before = metrics
        .iter()
        .map(|m| match &m.source {
            MetricSource::Json { file, .. } => FileBefore::of(Path::new(file)),
            MetricSource::Output { .. } => FileBefore::of(Path::new("")),
        })
        .collect();
    Ok(Prepared {
        metrics: metrics.to_vec(),
        stdout_forward: if stdout_to_stderr { 2 } else { 1 },
        stdio: Some(stdio),
        readers,
        json_before,
        started: SystemTime::now(),
    })
}

/// A pipe whose ends are closed on exec: the command gets its end as fd 1 or 2 only.
pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [RawFd; 2] = [-1, -1];
    // SAFETY: pipe2 writes two fds into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // A bigger pipe than the 64 KiB default: a command printing fast blocks (and wakes the
    // drain) less often. Best effort: the limit is /proc/sys/fs/pipe-max-size.
    // SAFETY: fcntl on a pipe fd we own.
    unsafe { libc::fcntl(fds[0], libc::F_SETPIPE_SZ, PIPE_BYTES) };
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The pipe's capacity asked for, and what one read takes from it.
const PIPE_BYTES: libc::c_int = 1 << 20;
const READ_BYTES: usize = 256 * 1024;

impl Prepared {
    /// The command's ends of the pipes, for the launch (taken once).
    pub fn child_stdio(&mut self) -> ChildStdio {
        self.stdio.take().unwrap_or_default()
    }

    /// Starts draining, once the command is launched (its ends of the pipes are closed in
    /// framelab by then, so the streams end when the command's processes are gone).
    pub fn start(mut self) -> Running {
        drop(self.stdio.take());
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (i, reader) in self.readers.iter_mut().enumerate() {
            let Some(fd) = reader.take() else {
                continue;
            };
            let stdout = i == 0;
            let forward = if stdout { self.stdout_forward } else { 2 };
            let scanner = Scanner::new(&self.metrics, stdout);
            let stop = Arc::clone(&stop);
            let name = if stdout { "stdout" } else { "stderr" };
            let spawned = std::thread::Builder::new()
                .name(format!("framelab-{name}"))
                .spawn(move || drain(fd, forward, scanner, &stop));
            match spawned {
                Ok(handle) => threads.push((stdout, handle)),
                Err(e) => log::warn!("cannot read the command's {name}: {e}"),
            }
        }
        Running {
            metrics: self.metrics,
            json_before: self.json_before,
            started: self.started,
            stop,
            threads,
        }
    }
}

/// The streams being drained.
pub struct Running {
    metrics: Vec<MetricSpec>,
    json_before: Vec<FileBefore>,
    started: SystemTime,
    stop: Arc<AtomicBool>,
    threads: Vec<(bool, JoinHandle<Drained>)>,
}

/// How long the streams may stay open after the command and its group are gone: a
/// process that left the group (a daemon) may hold them; what it writes later is not read.
const LINGER: Duration = Duration::from_secs(1);

impl Running {
    /// Waits for the streams to end (at most `LINGER` after the command's end), then takes
    /// every metric: from the lines seen, or from the JSON files now written.
    pub fn finish(self) -> (Vec<MetricValue>, Vec<CapturedOutput>) {
        let deadline = Instant::now() + LINGER;
        while Instant::now() < deadline && self.threads.iter().any(|(_, t)| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.stop.store(true, Ordering::Relaxed);
        let mut outputs = Vec::new();
        let (mut seen_out, mut seen_err) = (None, None);
        let mut lines = 0;
        for (stdout, handle) in self.threads {
            let stream = if stdout { "stdout" } else { "stderr" };
            let Ok(drained) = handle.join() else {
                outputs.push(CapturedOutput {
                    role: COMMAND_ROLE.into(),
                    stream: stream.into(),
                    note: "the thread reading it failed".into(),
                    ..CapturedOutput::default()
                });
                continue;
            };
            lines += drained.scanner.lines;
            let kept = drained.tail.len() as u64;
            outputs.push(CapturedOutput {
                role: COMMAND_ROLE.into(),
                stream: stream.into(),
                bytes: drained.bytes,
                dropped: drained.bytes - kept,
                content: drained.tail,
                note: drained.notes.join("; "),
            });
            if stdout {
                seen_out = Some(drained.scanner.seen);
            } else {
                seen_err = Some(drained.scanner.seen);
            }
        }
        let metrics = self
            .metrics
            .iter()
            .enumerate()
            .map(|(i, spec)| match &spec.source {
                MetricSource::Json { .. } => {
                    evaluate_json(spec, &self.json_before[i], self.started)
                }
                MetricSource::Output { .. } => evaluate_output(
                    spec,
                    seen_out.as_ref().map(|s| &s[i]),
                    seen_err.as_ref().map(|s| &s[i]),
                    lines,
                ),
            })
            .collect();
        (metrics, outputs)
    }
}

/// What a drained stream left.
struct Drained {
    bytes: u64,
    tail: Vec<u8>,
    scanner: Scanner,
    notes: Vec<String>,
}

/// The last `KEEP_BYTES` of a stream, appended to in chunks: the front is cut when twice
/// that has piled up, so each byte is copied at most about twice.
struct Tail(Vec<u8>);

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        let (old, total) = (self.0.len(), self.0.len() + chunk.len());
        if total > 2 * KEEP_BYTES {
            // Keep the last KEEP_BYTES of what is here and the chunk together.
            let keep_from = total - KEEP_BYTES;
            if keep_from >= old {
                self.0.clear();
                self.0.extend_from_slice(&chunk[keep_from - old..]);
                return;
            }
            self.0.drain(..keep_from);
        }
        self.0.extend_from_slice(chunk);
    }

    fn into_kept(mut self) -> Vec<u8> {
        let excess = self.0.len().saturating_sub(KEEP_BYTES);
        self.0.drain(..excess);
        self.0
    }
}

/// Reads `fd` to its end (or until told to stop and nothing is left to read), forwarding
/// every chunk to framelab's `forward_to` first.
fn drain(fd: OwnedFd, forward_to: RawFd, mut scanner: Scanner, stop: &AtomicBool) -> Drained {
    const CHUNK: usize = READ_BYTES;
    let mut buf = vec![0u8; CHUNK];
    let mut tail = Tail(Vec::new());
    let mut bytes = 0u64;
    let mut notes = Vec::new();
    let mut forwarding = true;
    loop {
        let mut poll = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, 100) };
        if ready == 0 {
            if stop.load(Ordering::Relaxed) {
                notes.push(
                    "still open when the run ended (a process outside the command's group \
                     holds it): what it wrote later was not read"
                        .to_owned(),
                );
                break;
            }
            continue;
        }
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            notes.push(format!("reading it failed: {e}"));
            break;
        }
        // SAFETY: reading into a buffer of CHUNK bytes we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), CHUNK) };
        if n == 0 {
            break;
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            notes.push(format!("reading it failed: {e}"));
            break;
        }
        let chunk = &buf[..n as usize];
        if forwarding {
            if let Err(e) = write_all(forward_to, chunk) {
                // Still drained and kept: the command must never block on a full pipe.
                notes.push(format!(
                    "forwarding it to framelab's own stream stopped: {e}"
                ));
                forwarding = false;
            }
        }
        bytes += chunk.len() as u64;
        tail.push(chunk);
        scanner.feed(chunk, framelab_probe::monotonic_ns() as i64);
    }
    scanner.finish(framelab_probe::monotonic_ns() as i64);
    if scanner.split_lines > 0 {
        notes.push(format!(
            "{} line{} longer than {} KiB matched in pieces",
            scanner.split_lines,
            if scanner.split_lines == 1 { "" } else { "s" },
            crate::output::scan::MAX_LINE / 1024
        ));
    }
    Drained {
        bytes,
        tail: tail.into_kept(),
        scanner,
        notes,
    }
}

/// Writes all of `data` to `fd` (framelab's stdout or stderr), unbuffered.
fn write_all(fd: RawFd, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        // SAFETY: writing from a live slice.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_whatever_the_chunks() {
        let mut tail = Tail(Vec::new());
        let mut all = Vec::new();
        for i in 0..40u32 {
            let chunk: Vec<u8> = (0..(70_000 + i * 997)).map(|j| (i + j) as u8).collect();
            all.extend_from_slice(&chunk);
            tail.push(&chunk);
            assert!(tail.0.len() <= 2 * KEEP_BYTES);
        }
        let big = vec![7u8; 3 * KEEP_BYTES];
        all.extend_from_slice(&big);
        tail.push(&big);
        all.extend_from_slice(b"end");
        tail.push(b"end");
        assert_eq!(tail.into_kept(), all[all.len() - KEEP_BYTES..]);
    }

    #[test]
    fn only_the_streams_a_metric_reads_are_captured() {
        let m = |t: &str| MetricSpec::parse(t).unwrap();
        assert_eq!(streams_needed(&[], false), (false, false));
        assert_eq!(streams_needed(&[], true), (true, true));
        assert_eq!(
            streams_needed(&[m(r"a:stdout=a(\d)")], false),
            (true, false)
        );
        assert_eq!(streams_needed(&[m(r"a=a(\d)")], false), (true, true));
        assert_eq!(
            streams_needed(&[m("a=json:x.json:$.a")], false),
            (false, false)
        );
    }
}
