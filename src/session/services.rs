//! Starting each `--service` before the command, waiting until it is ready, and stopping it
//! after: SIGINT, SIGTERM, SIGKILL to its whole process group, each after the grace period.
//! Each is registered with the guardian, so it dies with framelab even on kill -9.
//!
//! The loops are here and every step goes through the `Executor`: its clock decides the
//! ready timeout and the grace periods, so the supervisor's tests drive a service that
//! never gets ready or ignores its stop signals on the mock's clock. The real streams and
//! processes are `service_io.rs`'s.

use std::time::Duration;

use anyhow::{bail, Result};

use super::executor::Executor;
use super::rungroup::Placement;
use crate::output::CapturedOutput;
use crate::services::{Ready, ServiceSpec};

/// How often a service is looked at while it gets ready, and while it stops.
const READY_POLL: Duration = Duration::from_millis(10);
const STOP_POLL: Duration = Duration::from_millis(5);

/// A service that was started.
pub struct Service {
    pub name: String,
    pub pid: u32,
}

/// Every service of a run, in the order started.
#[derive(Default)]
pub struct Services {
    pub started: Vec<Service>,
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
        exec: &mut impl Executor,
        specs: &[ServiceSpec],
        env: &[(String, String)],
        timeout: Duration,
        grace: Duration,
        join: Placement,
    ) -> Result<Services> {
        let mut services = Services::default();
        for spec in specs {
            if let Err(e) = services.start_one(exec, spec, env, timeout, join) {
                services.stop(exec, grace, &[]);
                return Err(e);
            }
        }
        Ok(services)
    }

    fn start_one(
        &mut self,
        exec: &mut impl Executor,
        spec: &ServiceSpec,
        env: &[(String, String)],
        timeout: Duration,
        join: Placement,
    ) -> Result<()> {
        let name = &spec.name;
        if let Ready::Tcp { host, port } = &spec.ready {
            if exec.accepts(host, *port) {
                bail!(
                    "--ready {name}=tcp:{port}: something already accepts connections on \
                     {host}:{port} before {name} started, so its readiness cannot be told; stop \
                     that process or give {name} another port"
                );
            }
        }
        let pid = exec.spawn_service(spec, env, join)?;
        exec.register_group(pid);
        self.started.push(Service {
            name: name.clone(),
            pid,
        });
        let started = exec.now();
        loop {
            let ready = match &spec.ready {
                Ready::Started => true,
                Ready::Delay(d) => exec.now() - started >= *d,
                Ready::Tcp { host, port } => exec.accepts(host, *port),
                Ready::Line(_) => exec.ready_line_seen(pid),
            };
            if ready {
                return Ok(());
            }
            if let Some(status) = exec.service_exited(pid) {
                self.started.pop().expect("just pushed");
                exec.unregister_group(pid);
                exec.signal_group(pid, libc::SIGKILL);
                let outputs = exec.service_output(pid);
                bail!(
                    "service {name} exited ({}) before it was ready ({}); its last output:{}",
                    describe_status(status),
                    spec.ready.describe(),
                    last_lines(&outputs)
                );
            }
            if exec.interrupts() > 0 {
                bail!("interrupted while waiting for service {name} to get ready");
            }
            if exec.now() - started >= timeout {
                bail!(
                    "service {name} was not ready {} after {} (it is still running, and was \
                     stopped); check the --ready condition or give it longer with --ready-timeout",
                    spec.ready.describe(),
                    humantime::format_duration(Duration::from_millis(timeout.as_millis() as u64))
                );
            }
            exec.sleep(READY_POLL);
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
    pub fn finish(
        &mut self,
        exec: &mut impl Executor,
        grace: Duration,
        daemons: &[(u32, String)],
    ) -> Vec<CapturedOutput> {
        // A service whose daemon still runs (`pg_ctl start`) did not end.
        let mut events: Vec<(String, String)> = self
            .started
            .iter()
            .filter(|s| !exec.service_exists(s.pid))
            .filter(|s| !daemons.iter().any(|(_, name)| *name == s.name))
            .map(|s| {
                let text = format!(
                    "service {} exited while the command ran: what the command measured may \
                     not be what you meant",
                    s.name
                );
                (s.name.clone(), text)
            })
            .collect();
        let (stopping, mut outputs) = self.stop(exec, grace, daemons);
        events.extend(stopping);
        for (name, text) in events {
            log::info!("{text}");
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
    /// group and to each of its `daemons` (its processes that left the group), each after
    /// `grace`. Returns notes on those that needed more than SIGINT, and what each wrote.
    pub fn stop(
        &mut self,
        exec: &mut impl Executor,
        grace: Duration,
        daemons: &[(u32, String)],
    ) -> (Vec<(String, String)>, Vec<CapturedOutput>) {
        let (mut notes, mut outputs) = (Vec::new(), Vec::new());
        while let Some(service) = self.started.pop() {
            let name = &service.name;
            let pid = service.pid;
            let mut alive = exec.service_exists(pid) && exec.service_exited(pid).is_none();
            let mut left: Vec<u32> = (daemons.iter())
                .filter(|(daemon, of)| of == name && exec.process_alive(*daemon))
                .map(|(daemon, _)| *daemon)
                .collect();
            for (signal, word) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
                if !alive && left.is_empty() {
                    break;
                }
                if alive {
                    exec.signal_group(pid, signal);
                }
                for &daemon in &left {
                    exec.signal_process(daemon, signal);
                }
                let deadline = exec.now() + grace;
                while (alive || !left.is_empty()) && exec.now() < deadline {
                    exec.sleep(STOP_POLL);
                    alive = alive && exec.service_exited(pid).is_none();
                    left.retain(|&daemon| exec.process_alive(daemon));
                }
                if alive || !left.is_empty() {
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
            exec.signal_group(pid, libc::SIGKILL);
            for &daemon in &left {
                exec.signal_process(daemon, libc::SIGKILL);
            }
            if alive || !left.is_empty() {
                notes.push((name.clone(), format!("service {name} was killed (SIGKILL)")));
            }
            if alive {
                exec.wait_killed(pid);
            }
            exec.unregister_group(pid);
            outputs.extend(exec.service_output(pid));
        }
        outputs.reverse();
        (notes, outputs)
    }
}
