//! Starting each `--service` before the command, waiting until it is ready, and stopping it
//! after: SIGINT, SIGTERM, SIGKILL to its whole process group, each after the grace period.
//! Each is registered with the guardian, so it dies with framelab even on kill -9.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::output::{pipe, ChildStdio};
use super::rungroup::Placement;
use super::{guard, launch};
use crate::output::{CapturedOutput, KEEP_BYTES};
use crate::services::{Ready, ServiceSpec};

/// A service that was started.
pub struct Service {
    pub name: String,
    pub pid: u32,
    drains: Vec<mpsc::Receiver<CapturedOutput>>,
}

/// Every service of a run, in the order started.
#[derive(Default)]
pub struct Services {
    pub started: Vec<Service>,
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

/// The last lines a service wrote, for an error that says why it never got ready.
fn last_lines(outputs: &[CapturedOutput]) -> String {
    let mut text = String::new();
    for o in outputs {
        let s = String::from_utf8_lossy(&o.content);
        let tail: Vec<&str> = s.lines().rev().take(3).collect();
        for line in tail.into_iter().rev() {
            text.push_str(&format!("\n  {}: {}", o.stream, crate::display::name(line)));
        }
    }
    text
}

/// Whether something accepts connections at host:port now.
fn accepts(host: &str, port: u16) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok())
}

/// The leader's exit status, if it exited (reaped here), without blocking.
fn exited(pid: u32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: plain waitpid on our own child.
    let r = unsafe { libc::waitpid(pid as i32, &mut status, libc::WNOHANG) };
    (r == pid as i32).then_some(status)
}

fn describe_status(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit code {}", libc::WEXITSTATUS(status))
    }
}

impl Services {
    /// Starts each service in order and waits until it is ready; on any failure stops
    /// those already started and says which service failed and why.
    pub fn start(
        specs: &[ServiceSpec],
        env: &[(String, String)],
        timeout: Duration,
        grace: Duration,
        join: Placement,
    ) -> Result<Services> {
        let mut services = Services::default();
        for spec in specs {
            if let Err(e) = services.start_one(spec, env, timeout, join) {
                services.stop(grace);
                return Err(e);
            }
        }
        Ok(services)
    }

    fn start_one(
        &mut self,
        spec: &ServiceSpec,
        env: &[(String, String)],
        timeout: Duration,
        join: Placement,
    ) -> Result<()> {
        let name = &spec.name;
        if let Ready::Tcp { host, port } = &spec.ready {
            if accepts(host, *port) {
                bail!(
                    "--ready {name}=tcp:{port}: something already accepts connections on \
                     {host}:{port} before {name} started, so its readiness cannot be told; stop \
                     that process or give {name} another port"
                );
            }
        }
        let (out_read, out_write) = pipe()?;
        let (err_read, err_write) = pipe()?;
        let stdio = ChildStdio {
            stdout: Some(Stdio::from(out_write)),
            stderr: Some(Stdio::from(err_write)),
        };
        let pid = launch::spawn(&spec.argv, env, &spec.cpus, stdio, None, join)
            .map_err(|e| anyhow::anyhow!("--service {name}: {e}"))?;
        guard::register_group(pid);
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
        drop(tell);
        self.started.push(Service {
            name: name.clone(),
            pid,
            drains,
        });
        let started = Instant::now();
        loop {
            let ready = match &spec.ready {
                Ready::Started => true,
                Ready::Delay(d) => started.elapsed() >= *d,
                Ready::Tcp { host, port } => accepts(host, *port),
                Ready::Line(_) => told.try_recv().is_ok(),
            };
            if ready {
                return Ok(());
            }
            if let Some(status) = exited(pid) {
                let service = self.started.pop().expect("just pushed");
                guard::unregister_group(pid);
                launch::signal_group(pid, libc::SIGKILL);
                let outputs = collect(service.drains);
                bail!(
                    "service {name} exited ({}) before it was ready ({}); its last output:{}",
                    describe_status(status),
                    spec.ready.describe(),
                    last_lines(&outputs)
                );
            }
            if launch::interrupts() > 0 {
                bail!("interrupted while waiting for service {name} to get ready");
            }
            if started.elapsed() >= timeout {
                bail!(
                    "service {name} was not ready {} after {} (it is still running, and was \
                     stopped); check the --ready condition or give it longer with --ready-timeout",
                    spec.ready.describe(),
                    humantime::format_duration(Duration::from_millis(timeout.as_millis() as u64))
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Each service's leader and name, for the accounting of its processes.
    pub fn roots(&self) -> Vec<(u32, String)> {
        self.started
            .iter()
            .map(|s| (s.pid, s.name.clone()))
            .collect()
    }

    /// After the command: says which services died while it ran, stops the rest, and
    /// returns what each wrote, with what happened to it in the stdout record's note (the
    /// run file keeps it); each event is also said on stderr.
    pub fn finish(&mut self, grace: Duration) -> Vec<CapturedOutput> {
        let mut events: Vec<(String, String)> = self
            .started
            .iter()
            // SAFETY: signal 0 only checks existence; a zombie still exists.
            .filter(|s| unsafe { libc::kill(s.pid as i32, 0) } != 0)
            .map(|s| {
                let text = format!(
                    "service {} exited while the command ran: what the command measured may \
                     not be what you meant",
                    s.name
                );
                (s.name.clone(), text)
            })
            .collect();
        let (stopping, mut outputs) = self.stop(grace);
        events.extend(stopping);
        for (name, text) in events {
            eprintln!("framelab: {text}");
            if let Some(o) = outputs
                .iter_mut()
                .find(|o| o.role == name && o.stream == "stdout")
            {
                if !o.note.is_empty() {
                    o.note.push_str("; ");
                }
                o.note.push_str(&text);
            }
        }
        outputs
    }

    /// Stops every service, last started first: SIGINT, then SIGTERM, then SIGKILL to its
    /// group, each after `grace`. Returns notes on those that needed more than SIGINT,
    /// and what each wrote.
    pub fn stop(&mut self, grace: Duration) -> (Vec<(String, String)>, Vec<CapturedOutput>) {
        let (mut notes, mut outputs) = (Vec::new(), Vec::new());
        while let Some(service) = self.started.pop() {
            let name = &service.name;
            let pid = service.pid;
            // SAFETY: signal 0 only checks existence.
            let mut alive = unsafe { libc::kill(pid as i32, 0) } == 0 && exited(pid).is_none();
            for (signal, word) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
                if !alive {
                    break;
                }
                launch::signal_group(pid, signal);
                let deadline = Instant::now() + grace;
                while alive && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                    alive = exited(pid).is_none();
                }
                if alive {
                    notes.push((
                        name.clone(),
                        format!(
                            "service {name} ignored {word} for {}",
                            humantime::format_duration(grace)
                        ),
                    ));
                }
            }
            // The leader is gone; whatever else of its group is left goes too.
            launch::signal_group(pid, libc::SIGKILL);
            if alive {
                notes.push((name.clone(), format!("service {name} was killed (SIGKILL)")));
                let mut status = 0;
                // SAFETY: blocking waitpid on our own child, which was just sent SIGKILL.
                unsafe { libc::waitpid(pid as i32, &mut status, 0) };
            }
            guard::unregister_group(pid);
            outputs.extend(collect(service.drains));
        }
        outputs.reverse();
        (notes, outputs)
    }
}
