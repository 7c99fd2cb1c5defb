//! Starting the command in its own process group, signalling it, reaping it.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use anyhow::{bail, Result};

use super::procfs::CpuTimes;

/// Ctrl-C (SIGINT), SIGTERM and SIGHUP received by framelab.
static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);
/// Which of them came last, so the report can say which one stopped the run.
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(signal: libc::c_int) {
    LAST_SIGNAL.store(signal, Ordering::Relaxed);
    INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    super::wake::ring_from_signal();
}

extern "C" fn on_child_exit(_: libc::c_int) {
    super::wake::ring_from_signal();
}

/// From now on Ctrl-C asks framelab to finish the run instead of killing it.
pub fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        catch(signal, on_interrupt, libc::SA_RESTART);
    }
}

/// From now on a child's exit wakes the collector at once: the run's end is not left to
/// the next drain, which may be a quarter of a second away (children stay zombies for
/// the reaper, as without a handler).
pub fn catch_child_exits() {
    catch(
        libc::SIGCHLD,
        on_child_exit,
        libc::SA_RESTART | libc::SA_NOCLDSTOP,
    );
}

fn catch(signal: libc::c_int, handler: extern "C" fn(libc::c_int), flags: libc::c_int) {
    // SAFETY: the handlers only touch atomics and make async-signal-safe system calls.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = flags;
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

pub fn interrupts() -> usize {
    INTERRUPTS.load(Ordering::Relaxed)
}

/// The signal behind the latest interrupt (SIGINT, SIGTERM or SIGHUP); `None` before any.
pub fn last_interrupt_signal() -> Option<i32> {
    Some(LAST_SIGNAL.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// Makes framelab the reaper of orphaned descendants, so their CPU time is not lost.
pub fn become_subreaper() {
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Checks that `program` can be run, with an error that says what to do if not.
pub fn check_runnable(program: &str) -> Result<()> {
    let exists = Path::new(program).metadata().is_ok();
    if !exists && program.contains(char::is_whitespace) {
        // A whole command line quoted as one word (`-- './prog --fast'`, `-- 'a | b'`):
        // no shell splits it, so naming a path or PATH would not help.
        bail!(
            "command not found: '{program}' is one word with spaces in it, and no shell reads \
             it: give the program and each argument as words of their own (-- ./prog arg1 arg2), \
             or add --shell to run it through sh -c"
        );
    }
    if program.contains('/') {
        let path = Path::new(program);
        let Ok(meta) = path.metadata() else {
            bail!(
                "command not found: '{program}' does not exist{}; check the path",
                relative_to(path)
            );
        };
        if meta.is_dir() {
            bail!("'{program}' is a directory, not a program: name the executable inside it");
        }
        if !is_executable(&meta) {
            bail!("'{program}' is not executable: chmod +x it, or run it through its interpreter (e.g. -- sh {program})");
        }
        return Ok(());
    }
    if found(program).is_none() {
        bail!(
            "command not found: '{program}' is not in PATH; give a path (./{program}) or \
             install it"
        )
    }
    Ok(())
}

/// ` (relative to /the/current/dir)` for a relative path: run from another directory, the
/// same words name another file.
pub fn relative_to(path: &Path) -> String {
    match std::env::current_dir() {
        Ok(dir) if path.is_relative() => format!(" (relative to {})", dir.display()),
        _ => String::new(),
    }
}

/// Where `program` is, as exec would find it: the path itself when it has a slash, else
/// the first executable of that name in PATH.
fn found(program: &str) -> Option<std::path::PathBuf> {
    if program.contains('/') {
        return Path::new(program).is_file().then(|| program.into());
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|c| c.metadata().is_ok_and(|m| is_executable(&m)))
}

/// Why exec said "not found" of a program that exists: its `#!` interpreter, or else its
/// dynamic loader (a binary built for another system), is missing.
fn what_runs_it_is_missing(program: &str, path: &Path) -> String {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let first_line = head[..n].split(|&b| b == b'\n').next().unwrap_or_default();
    if let Some(rest) = first_line.strip_prefix(b"#!") {
        let line = String::from_utf8_lossy(rest);
        let interpreter = line.split_whitespace().next().unwrap_or_default();
        return format!(
            "'{program}' cannot start: its first line names the interpreter '{interpreter}', \
             which does not exist here; install it or correct that line"
        );
    }
    format!(
        "'{program}' cannot start: the kernel did not find what runs it (a binary's dynamic \
         loader, as for one built for another system: see `file {}`)",
        path.display()
    )
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// A process started by [`spawn`].
pub struct Launched {
    pub pid: u32,
    /// CLOCK_MONOTONIC as the child was about to exec (ns), read in the child: after it
    /// joined the run's group, which took 10-25 ms on a loaded 2-core VM (against 2-6 ms
    /// for the whole launch without a cgroup). `None` where it could not be passed back.
    pub exec_mono_ns: Option<i64>,
}

/// Spawns `argv` in a new process group with `env` added, pinned to `cpus` unless empty,
/// its stdout and stderr as `stdio` says (inherited unless captured), in the run's group
/// (`join`: before exec, so all it starts is born there). It dies with framelab if framelab
/// is killed.
pub fn spawn(
    argv: &[String],
    env: &[(String, String)],
    cpus: &[usize],
    stdio: super::output::ChildStdio,
    hold: Option<super::hold::ChildEnds>,
    join: super::rungroup::Placement,
) -> Result<Launched> {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some(out) = stdio.stdout {
        command.stdout(out);
    }
    if let Some(err) = stdio.stderr {
        command.stderr(err);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    // Built before fork: nothing may allocate between fork and exec.
    let affinity = cpu_set(cpus)?;
    let exec_time = ExecTime::pipe();
    let tell_exec_time = exec_time.as_ref().map(|t| t.write_fd);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            // First: nothing of the child runs outside the run's group.
            join.join_in_child()?;
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
            if let Some(set) = &affinity {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(hold) = &hold {
                hold.wait_in_child();
            }
            if let Some(fd) = tell_exec_time {
                ExecTime::tell_in_child(fd);
            }
            Ok(())
        });
    }
    let spawned = command.spawn();
    // The spawn returns once the child has exec'd: its time is in the pipe by then.
    let exec_mono_ns = exec_time.and_then(ExecTime::read);
    match spawned {
        // The handle is dropped on purpose: framelab reaps with wait4 to get rusage.
        Ok(child) => Ok(Launched {
            pid: child.id(),
            exec_mono_ns,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match found(&argv[0]) {
            Some(path) => bail!("{}", what_runs_it_is_missing(&argv[0], &path)),
            None => bail!("command not found: '{}' ({e})", argv[0]),
        },
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            bail!(
                "'{}' cannot be run: permission denied; check it is executable",
                argv[0]
            )
        }
        Err(e) => bail!("cannot start '{}': {e}", argv[0]),
    }
}

/// A pipe through which the child tells when it execs (both ends close on exec).
struct ExecTime {
    read_fd: i32,
    write_fd: i32,
}

impl ExecTime {
    fn pipe() -> Option<ExecTime> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0;
        made.then_some(ExecTime {
            read_fd: fds[0],
            write_fd: fds[1],
        })
    }

    /// In the child, between fork and exec: async-signal-safe calls only.
    fn tell_in_child(fd: i32) {
        let now = framelab_probe::monotonic_ns().to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer; a failure only loses the time.
        unsafe { libc::write(fd, now.as_ptr().cast(), now.len()) };
    }

    /// The child's time, once it has exec'd (or failed to); closes the pipe.
    fn read(self) -> Option<i64> {
        let mut bytes = [0u8; 8];
        // SAFETY: both descriptors are this pipe's, closed once here; `read` fills at
        // most 8 bytes of `bytes`.
        let n = unsafe {
            libc::close(self.write_fd);
            let n = libc::read(self.read_fd, bytes.as_mut_ptr().cast(), bytes.len());
            libc::close(self.read_fd);
            n
        };
        (n == 8).then(|| u64::from_ne_bytes(bytes) as i64)
    }
}

/// The affinity mask for `cpus`; `None` when no pinning was asked.
fn cpu_set(cpus: &[usize]) -> Result<Option<libc::cpu_set_t>> {
    if cpus.is_empty() {
        return Ok(None);
    }
    // SAFETY: cpu_set_t is plain bits; CPU_SET writes inside it for cpu < CPU_SETSIZE.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            bail!(
                "--pin: CPU {cpu} is beyond the {} CPUs Linux can pin to",
                libc::CPU_SETSIZE
            );
        }
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(Some(set))
}

/// Sends `signal` to the whole process group of the command.
pub fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: kill with a negative pid signals the group; harmless if it is gone.
    unsafe { libc::kill(-(pgid as i32), signal) };
}

/// Stops the command's group after framelab failed: SIGTERM, then SIGKILL to whatever is
/// left after `grace` (or at once when the leader is gone). Reaps the leader.
pub fn stop_group(pgid: u32, grace: std::time::Duration) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        let mut status = 0;
        // SAFETY: plain waitpid on our own child.
        let reaped = unsafe { libc::waitpid(pgid as i32, &mut status, libc::WNOHANG) };
        if reaped != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    signal_group(pgid, libc::SIGKILL);
}

/// A child framelab reaped.
pub struct Reaped {
    pub pid: u32,
    pub status: i32,
    pub cpu: CpuTimes,
    pub max_rss_bytes: u64,
}

/// Reaps one exited child without blocking. `before_reaping` sees its pid while it is still a
/// zombie, when /proc still holds its final CPU times split into its own and its children's.
pub fn reap_one(mut before_reaping: impl FnMut(u32)) -> Option<Reaped> {
    // SAFETY: waitid with WNOWAIT only peeks; valid out-pointer.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let peeked = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    let zombie = if peeked == 0 {
        unsafe { info.si_pid() }
    } else {
        0
    };
    if zombie <= 0 {
        return None;
    }
    before_reaping(zombie as u32);
    let mut status = 0;
    // SAFETY: plain wait4 with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(zombie, &mut status, libc::WNOHANG, &mut usage) };
    if pid <= 0 {
        return None;
    }
    Some(Reaped {
        pid: pid as u32,
        status,
        cpu: CpuTimes {
            user_ns: timeval_ns(usage.ru_utime),
            sys_ns: timeval_ns(usage.ru_stime),
            ..Default::default()
        },
        max_rss_bytes: usage.ru_maxrss as u64 * 1024,
    })
}

/// A rusage time in nanoseconds.
pub fn timeval_ns(tv: libc::timeval) -> i64 {
    tv.tv_sec * 1_000_000_000 + tv.tv_usec * 1_000
}

#[cfg(test)]
mod tests {
    use super::check_runnable;

    fn refusal(program: &str) -> String {
        format!("{:#}", check_runnable(program).unwrap_err())
    }

    /// A command line quoted as one word is named as such, with --shell as the way out
    /// (it suggested `./echo hi | cat`, a path that cannot exist).
    #[test]
    fn a_quoted_command_line_points_to_separate_words_or_shell() {
        for program in ["echo hi | cat", "./pipeline --fast"] {
            let e = refusal(program);
            assert!(e.contains("one word with spaces"), "{e}");
            assert!(e.contains("--shell"), "{e}");
            assert!(!e.contains("./echo"), "{e}");
        }
    }

    /// A relative path that is not there says where it was looked for: run from another
    /// directory, the same words name another file.
    #[test]
    fn a_missing_relative_path_names_the_directory_it_is_relative_to() {
        let here = std::env::current_dir().unwrap();
        let e = refusal("./no-such-program-xyz");
        assert!(e.contains("does not exist"), "{e}");
        assert!(
            e.contains(&format!("relative to {}", here.display())),
            "{e}"
        );
        let e = refusal("/no/such/program-xyz");
        assert!(!e.contains("relative to"), "{e}");
        assert!(e.contains("check the path"), "{e}");
    }

    /// A file whose name has a space in it is run as it is.
    #[test]
    fn an_existing_program_with_a_space_in_its_name_is_runnable() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("my prog");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        check_runnable(program.to_str().unwrap()).unwrap();
    }
}
