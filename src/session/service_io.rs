//! The operating-system side of `--service` (the real executor's): a service's process,
//! its output drained by a thread per stream (the last `KEEP_BYTES` kept, its ready line
//! watched), TCP readiness, and reaping its leader. The loops that wait for readiness and
//! stop services are `services.rs`'s, on the executor's clock.

use std::collections::HashMap;
use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;

use super::launch;
use super::output::{pipe, ChildStdio};
use super::rungroup::Placement;
use crate::output::{CapturedOutput, KEEP_BYTES};
use crate::services::{Ready, ServiceSpec};

/// The streams of each started service, by its leader's pid.
#[derive(Default)]
pub struct ServiceStreams {
    by_pid: HashMap<u32, Streams>,
}

struct Streams {
    drains: Vec<mpsc::Receiver<CapturedOutput>>,
    /// Told once a line matched its `Ready::Line`.
    ready_line: mpsc::Receiver<()>,
}

impl ServiceStreams {
    /// Starts a service with its stdout and stderr drained; its leader's pid.
    pub fn spawn(
        &mut self,
        spec: &ServiceSpec,
        env: &[(String, String)],
        join: Placement,
    ) -> Result<u32> {
        let name = &spec.name;
        let (out_read, out_write) = pipe()?;
        let (err_read, err_write) = pipe()?;
        let stdio = ChildStdio {
            stdout: Some(Stdio::from(out_write)),
            stderr: Some(Stdio::from(err_write)),
        };
        let pid = launch::spawn(&spec.argv, env, &spec.cpus, stdio, None, join)
            .map(|launched| launched.pid)
            .map_err(|e| anyhow::anyhow!("--service {name}: {e}"))?;
        let (tell, told) = mpsc::channel();
        let line_ready = match &spec.ready {
            Ready::Line(re) => Some(re),
            _ => None,
        };
        let drains = vec![
            drain(
                name.clone(),
                "stdout",
                out_read,
                line_ready.map(|re| (re.clone(), tell.clone())),
            ),
            drain(
                name.clone(),
                "stderr",
                err_read,
                line_ready.map(|re| (re.clone(), tell.clone())),
            ),
        ];
        self.by_pid.insert(
            pid,
            Streams {
                drains,
                ready_line: told,
            },
        );
        Ok(pid)
    }

    /// Whether a line of the service's output matched its `Ready::Line` (told once).
    pub fn ready_line_seen(&mut self, pid: u32) -> bool {
        self.by_pid
            .get(&pid)
            .is_some_and(|s| s.ready_line.try_recv().is_ok())
    }

    /// What the service wrote; its streams are forgotten.
    pub fn output(&mut self, pid: u32) -> Vec<CapturedOutput> {
        self.by_pid
            .remove(&pid)
            .map_or_else(Vec::new, |s| collect(s.drains))
    }
}

/// The last `KEEP_BYTES` of a stream, and whether a line matched `ready` (told once).
fn drain(
    role: String,
    stream: &'static str,
    fd: OwnedFd,
    ready: Option<(regex::Regex, mpsc::Sender<()>)>,
) -> mpsc::Receiver<CapturedOutput> {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(fd);
        let mut kept: Vec<u8> = Vec::new();
        let (mut bytes, mut line) = (0u64, Vec::new());
        let mut ready = ready;
        let mut buf = vec![0u8; 64 * 1024];
        let mut note = String::new();
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    note = format!("reading service {role}'s {stream} failed: {e}");
                    break;
                }
            };
            bytes += n as u64;
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * KEEP_BYTES {
                kept.drain(..kept.len() - KEEP_BYTES);
            }
            if let Some((re, tell)) = &ready {
                let mut matched = false;
                for &b in &buf[..n] {
                    if b == b'\n' || b == b'\r' {
                        matched |= re.is_match(&String::from_utf8_lossy(&line));
                        line.clear();
                    } else if line.len() < 64 * 1024 {
                        line.push(b);
                    }
                }
                matched |= re.is_match(&String::from_utf8_lossy(&line));
                if matched {
                    let _ = tell.send(());
                    ready = None;
                    line = Vec::new();
                }
            }
        }
        if kept.len() > KEEP_BYTES {
            kept.drain(..kept.len() - KEEP_BYTES);
        }
        let _ = done.send(CapturedOutput {
            role,
            stream: stream.into(),
            bytes,
            dropped: bytes - kept.len() as u64,
            content: kept,
            note,
        });
    });
    result
}

/// What a service wrote; a stream still held open by a process that left its group (a
/// daemon that detached) is let go after a second rather than waited for.
fn collect(drains: Vec<mpsc::Receiver<CapturedOutput>>) -> Vec<CapturedOutput> {
    drains
        .into_iter()
        .filter_map(|d| d.recv_timeout(Duration::from_secs(1)).ok())
        .collect()
}

/// Whether something accepts connections at host:port now.
pub fn accepts(host: &str, port: u16) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok())
}

/// The leader's exit status, if it exited (reaped here), without blocking.
pub fn exited(pid: u32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: plain waitpid on our own child.
    let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
    (r == pid as i32).then_some(status)
}

/// Waits for a leader that was sent SIGKILL.
pub fn wait_killed(pid: u32) {
    let mut status = 0;
    // SAFETY: blocking waitpid on our own child, which was just sent SIGKILL.
    unsafe { libc::waitpid(pid as i32, &mut status, 0) };
}

/// Whether `pid` exists (a zombie does).
pub fn exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}
