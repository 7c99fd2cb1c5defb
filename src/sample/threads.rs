//! Each thread of the command's processes: time on CPU (the scheduler's sum, exact
//! nanoseconds; where the kernel lacks `schedstat`, utime + stime of `stat` in clock ticks),
//! page faults (minflt, majflt) and voluntary and involuntary context switches, and the time
//! it waited runnable for a CPU (what the scheduler fallback, `crate::sched::schedstat`,
//! splits spans with). Values are running totals, written when they change.
//!
//! Where framelab may ask the kernel about a task (CAP_NET_ADMIN), all of them come from one
//! taskstats query per thread, sent together (`ThreadQuery`), and a thread's `stat` is read
//! once, for its name and start. Else they come from /proc: `schedstat` first (about 1 µs);
//! a thread whose time on CPU has not moved since the last reading has not run, so nothing
//! else it counts can have changed, and its `stat` and `status` (about 15 µs together; a
//! process's own `status` counts its main thread only, so threads are read one by one) are
//! not read again. Either way a thread that ran costs 5-25 µs a reading, so this source
//! reads at most every 10 ms whatever `--sample-every` says: at 1 ms a busy 20-thread
//! process would cost the sampler a third of a core.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::{numbered_entries, Reread};
use super::{Readings, Tick};
use crate::model::SeriesKind;
use crate::session::taskstats::query::{ThreadCounters, ThreadQuery};
use crate::units::plural;

/// The shortest interval between readings of this source (see above).
pub const MIN_EVERY: Duration = Duration::from_millis(10);
/// Threads come and go: look for new ones this often.
const THREADS_EVERY: Duration = Duration::from_millis(200);

/// What one read of a thread's `stat` gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadStat {
    pub comm: String,
    pub cpu_ns: i64,
    pub minflt: i64,
    pub majflt: i64,
    /// When it started, since boot (clock ticks, in ns).
    pub start_ns: i64,
}

/// Parses `/proc/PID/task/TID/stat`: fields are counted from the last `)`, since the name
/// may hold spaces and parentheses.
pub fn parse_thread_stat(text: &str, ns_per_tick: i64) -> Option<ThreadStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // proc(5) numbers fields from 1; `rest` starts at field 3 (state).
    let field = |n: usize| -> Option<i64> { rest.get(n - 3)?.parse().ok() };
    Some(ThreadStat {
        comm,
        cpu_ns: field(14)?
            .saturating_add(field(15)?)
            .saturating_mul(ns_per_tick),
        minflt: field(10)?,
        majflt: field(12)?,
        start_ns: field(22)?.saturating_mul(ns_per_tick),
    })
}

/// `schedstat`: time on CPU and time waiting on a run queue, ns (the third field, the
/// number of times it ran, is not used).
pub fn parse_schedstat(text: &str) -> Option<(i64, i64)> {
    let mut fields = text.split_whitespace().map(|f| f.parse::<i64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// Voluntary and involuntary context switches from a `status` file.
pub fn parse_context_switches(text: &str) -> Option<(i64, i64)> {
    let value = |key: &str| -> Option<i64> {
        let line = text.lines().find(|l| l.starts_with(key))?;
        line[key.len()..].trim().parse().ok()
    };
    Some((
        value("voluntary_ctxt_switches:")?,
        value("nonvoluntary_ctxt_switches:")?,
    ))
}

/// Series ids of one thread, registered at its first reading.
#[derive(Clone, Copy)]
struct ThreadSeries {
    cpu: u32,
    minflt: u32,
    majflt: u32,
    voluntary: u32,
    involuntary: u32,
    run_wait: u32,
}

/// One thread's running totals as last read.
#[derive(Clone, Copy, Debug)]
struct Totals {
    cpu_ns: i64,
    minflt: i64,
    majflt: i64,
    switches: Option<(i64, i64)>,
    run_wait_ns: Option<i64>,
}

struct Thread {
    pid: u32,
    tid: u32,
    schedstat: Reread,
    stat: Reread,
    status: Reread,
    series: Option<ThreadSeries>,
    /// `schedstat`'s time on CPU at the last full reading.
    ran_ns: Option<i64>,
    last: Option<Totals>,
}

pub struct Threads {
    proc_root: PathBuf,
    ns_per_tick: i64,
    threads: BTreeMap<u32, Thread>,
    /// Threads that ended while sampled: dropped, their last reading kept.
    ended: BTreeSet<u32>,
    /// Of those, threads that ended while their process went on.
    ended_early: u64,
    listed: Option<Instant>,
    listed_pids: Vec<u32>,
    processes_seen: BTreeSet<u32>,
    /// The kernel's answers, where it gives them (see the module's comment), or why not.
    query: Result<ThreadQuery, String>,
    answers: Vec<Option<ThreadCounters>>,
    /// Readings taken from /proc because a query failed, and the last reason.
    queries_failed: u64,
    query_failure: String,
}

impl Threads {
    pub fn open(proc_root: &Path, ticks_per_second: i64) -> Result<Threads, String> {
        if !proc_root.join("self").exists() && !proc_root.exists() {
            return Err(format!("no {} (procfs not mounted)", proc_root.display()));
        }
        Ok(Threads {
            proc_root: proc_root.to_path_buf(),
            ns_per_tick: 1_000_000_000 / ticks_per_second.max(1),
            threads: BTreeMap::new(),
            ended: BTreeSet::new(),
            ended_early: 0,
            listed: None,
            listed_pids: Vec::new(),
            processes_seen: BTreeSet::new(),
            // The kernel answers about its own tasks, not a copy of /proc's (tests').
            query: if proc_root == Path::new("/proc") {
                ThreadQuery::open()
            } else {
                Err(format!("{} is not the system's /proc", proc_root.display()))
            },
            answers: Vec::new(),
            queries_failed: 0,
            query_failure: String::new(),
        })
    }

    pub fn describe(&self) -> String {
        let threads = self.threads.len() + self.ended.len();
        let mut s = format!(
            "{} of {}",
            plural(threads as u64, "thread", "threads"),
            plural(self.processes_seen.len() as u64, "process", "processes")
        );
        match &self.query {
            Ok(_) => s.push_str(", asked of the kernel (taskstats)"),
            Err(why) => s.push_str(&format!(", read from /proc ({why})")),
        }
        if self.queries_failed > 0 {
            s.push_str(&format!(
                "; {} from /proc after a failed query: {}",
                plural(self.queries_failed, "reading", "readings"),
                self.query_failure
            ));
        }
        if self.ended_early > 0 {
            s.push_str(&format!(
                "; {} before {} process (last readings kept)",
                plural(self.ended_early, "thread ended", "threads ended"),
                if self.ended_early == 1 {
                    "its"
                } else {
                    "their"
                }
            ));
        }
        s
    }

    /// Adds threads of `pids` not known yet.
    fn list(&mut self, pids: &[u32]) {
        for &pid in pids {
            self.processes_seen.insert(pid);
            let task_dir = self.proc_root.join(pid.to_string()).join("task");
            for (tid, dir) in numbered_entries(&task_dir, "") {
                if self.threads.contains_key(&tid) || self.ended.contains(&tid) {
                    continue;
                }
                self.threads.insert(
                    tid,
                    Thread {
                        pid,
                        tid,
                        schedstat: Reread::new(dir.join("schedstat")),
                        stat: Reread::new(dir.join("stat")),
                        status: Reread::new(dir.join("status")),
                        series: None,
                        ran_ns: None,
                        last: None,
                    },
                );
            }
        }
    }

    pub fn read(&mut self, tick: &Tick, out: &mut Readings) -> Result<(), String> {
        let now = Instant::now();
        if tick.opening
            || self.listed_pids != tick.pids
            || self
                .listed
                .is_none_or(|t| now.duration_since(t) >= THREADS_EVERY)
        {
            self.list(tick.pids);
            self.listed = Some(now);
            self.listed_pids = tick.pids.to_vec();
        }
        let answered = self.ask_the_kernel();
        let mut gone = Vec::new();
        for (index, thread) in self.threads.values_mut().enumerate() {
            let reading = if answered {
                from_answer(thread, self.answers[index], self.ns_per_tick)
            } else {
                from_proc(thread, self.ns_per_tick)
            };
            let (totals, stat) = match reading {
                Reading::Totals(totals, stat) => (totals, stat),
                Reading::Gone => {
                    gone.push(thread.tid);
                    continue;
                }
                Reading::Unreadable(path) => {
                    let path = path.display().to_string();
                    out.skip(|| format!("{path}: not in the expected format"));
                    continue;
                }
            };
            if let (Some(stat), None) = (&stat, thread.series) {
                thread.series = Some(register(thread, stat, tick, self.ns_per_tick, out));
            }
            // Where `status` was read just now (its counts are kept between readings).
            if stat.is_some() && totals.switches.is_none() {
                let path = thread.status.path().display().to_string();
                out.skip(|| format!("{path}: no context switch counts"));
            }
            thread.last = Some(totals);
            let Some(series) = thread.series else {
                continue;
            };
            out.push(series.cpu, totals.cpu_ns);
            out.push(series.minflt, totals.minflt);
            out.push(series.majflt, totals.majflt);
            if let Some(wait) = totals.run_wait_ns {
                out.push(series.run_wait, wait);
            }
            if let Some((voluntary, involuntary)) = totals.switches {
                out.push(series.voluntary, voluntary);
                out.push(series.involuntary, involuntary);
            }
        }
        for tid in gone {
            if let Some(thread) = self.threads.remove(&tid) {
                // Threads ending while the command is being stopped are no news.
                if !tick.window_closed && self.proc_root.join(thread.pid.to_string()).exists() {
                    self.ended_early += 1;
                }
            }
            self.ended.insert(tid);
        }
        Ok(())
    }

    /// Asks the kernel about every known thread at once, into `answers` (in the order of
    /// `threads`); false where it cannot be asked or did not answer this time.
    fn ask_the_kernel(&mut self) -> bool {
        let Ok(query) = &mut self.query else {
            return false;
        };
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        match query.read(&tids, &mut self.answers) {
            Ok(()) => true,
            Err(why) => {
                self.queries_failed += 1;
                self.query_failure = why.to_string();
                false
            }
        }
    }
}

/// What one reading of a thread found.
enum Reading {
    /// Its totals, and its `stat` where it was read (always at its first reading).
    Totals(Totals, Option<ThreadStat>),
    /// It exited since it was listed.
    Gone,
    /// This file is not as expected.
    Unreadable(PathBuf),
}

/// A thread's reading from the kernel's answer; its `stat` read only the first time, for its
/// name and start.
fn from_answer(thread: &mut Thread, answer: Option<ThreadCounters>, ns_per_tick: i64) -> Reading {
    let Some(counters) = answer else {
        return Reading::Gone;
    };
    let stat = if thread.series.is_none() {
        match thread.stat.read() {
            Ok(text) => match parse_thread_stat(text, ns_per_tick) {
                Some(stat) => Some(stat),
                None => return Reading::Unreadable(thread.stat.path().to_path_buf()),
            },
            Err(_) => return Reading::Gone,
        }
    } else {
        None
    };
    let totals = Totals {
        cpu_ns: counters.cpu_ns,
        minflt: counters.minflt,
        majflt: counters.majflt,
        switches: Some((counters.voluntary, counters.involuntary)),
        run_wait_ns: Some(counters.run_wait_ns),
    };
    Reading::Totals(totals, stat)
}

/// A thread's reading from its /proc files: `stat` and `status` only when it ran.
fn from_proc(thread: &mut Thread, ns_per_tick: i64) -> Reading {
    let schedstat = thread.schedstat.read().ok().and_then(parse_schedstat);
    let ran_ns = schedstat.map(|(ran, _)| ran);
    if let (Some(last), Some(ran)) = (thread.last, ran_ns) {
        if thread.ran_ns == Some(ran) {
            // Not run since the last reading: nothing it counts has moved.
            return Reading::Totals(last, None);
        }
    }
    let stat = match thread.stat.read() {
        Ok(text) => parse_thread_stat(text, ns_per_tick),
        Err(_) => return Reading::Gone,
    };
    let Some(stat) = stat else {
        return Reading::Unreadable(thread.stat.path().to_path_buf());
    };
    let switches = thread.status.read().ok().and_then(parse_context_switches);
    let totals = Totals {
        cpu_ns: ran_ns.unwrap_or(stat.cpu_ns),
        minflt: stat.minflt,
        majflt: stat.majflt,
        switches,
        run_wait_ns: schedstat.map(|(_, wait)| wait),
    };
    thread.ran_ns = ran_ns;
    Reading::Totals(totals, Some(stat))
}

/// A thread's series, at its first reading.
fn register(
    thread: &Thread,
    stat: &ThreadStat,
    tick: &Tick,
    ns_per_tick: i64,
    out: &mut Readings,
) -> ThreadSeries {
    let entity = format!("{}/{}", thread.pid, thread.tid);
    let mut counter = |metric: &str, unit: &str| {
        out.series(
            metric,
            entity.clone(),
            stat.comm.clone(),
            unit,
            SeriesKind::Counter,
        )
    };
    let series = ThreadSeries {
        cpu: counter("cpu_time", "ns"),
        minflt: counter("minflt", "count"),
        majflt: counter("majflt", "count"),
        voluntary: counter("ctx_voluntary", "count"),
        involuntary: counter("ctx_involuntary", "count"),
        run_wait: counter("run_wait", "ns"),
    };
    // Born after the launch (its start is in ticks, rounded down): its totals were 0 at its
    // birth. A thread older than the run (a watched daemon's) has no such reading: its
    // totals before its first reading are unknown, and differences start from that reading.
    let born_ns = stat.start_ns - tick.origin_mono_ns;
    if born_ns > -ns_per_tick && tick.t_ns > 0 {
        let at = born_ns.clamp(0, tick.t_ns - 1);
        for id in [
            series.cpu,
            series.minflt,
            series.majflt,
            series.voluntary,
            series.involuntary,
            series.run_wait,
        ] {
            out.born(id, at);
        }
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_thread_stat_with_an_awkward_name() {
        let text = "301 (enc (1) x) R 300 300 300 0 -1 4194560 1500 0 7 0 250 30 0 0 20 0 3 0 12345 1000 10 0";
        let s = parse_thread_stat(text, 10_000_000).unwrap();
        assert_eq!(s.comm, "enc (1) x");
        assert_eq!(s.cpu_ns, 2_800_000_000);
        assert_eq!((s.minflt, s.majflt), (1500, 7));
        assert_eq!(s.start_ns, 123_450_000_000);
        assert!(parse_thread_stat("1 (x) R 2", 1).is_none());
    }

    /// Whatever the kernel (or a damaged fixture) puts in these files, parsing returns
    /// `None` or a value, never a panic.
    #[test]
    fn garbage_never_panics() {
        let alphabet: Vec<char> =
            "0123456789 ()-:\n\tRSx9223372036854775807voluntary_ctxt_switches"
                .chars()
                .collect();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let len = (state % 120) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            let _ = parse_thread_stat(&text, 10_000_000);
            let _ = parse_context_switches(&text);
            let _ = crate::sample::amdgpu::current_level_mhz(&text);
        }
        let huge =
            "1 (x) R 1 1 1 0 -1 0 0 0 0 0 9223372036854775807 9223372036854775807 0 0 0 0 0 0 0 0";
        assert_eq!(parse_thread_stat(huge, 10).unwrap().cpu_ns, i64::MAX);
    }

    /// Threads parked on a barrier count nothing more while they wait: the kernel's answers
    /// and their /proc files must then give the same totals, field by field. Where framelab
    /// may not ask the kernel this says why and checks nothing.
    #[test]
    fn the_kernels_answers_equal_the_proc_files() {
        let mut query = match ThreadQuery::open() {
            Ok(query) => query,
            Err(why) => {
                assert!(!why.contains('\n'), "{why}");
                eprintln!("threads are read from /proc here: {why}");
                return;
            }
        };
        const THREADS: usize = 3;
        let parked = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
        let release = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
        let (tid_sender, tids) = std::sync::mpsc::channel();
        let workers: Vec<_> = (0..THREADS)
            .map(|n| {
                let (parked, release, tid_sender) =
                    (parked.clone(), release.clone(), tid_sender.clone());
                std::thread::spawn(move || {
                    // Some CPU, page faults (fresh pages: the allocator may hand out
                    // memory already touched) and a voluntary switch of its own.
                    let len = (n + 1) << 20;
                    // SAFETY: a private anonymous mapping, unmapped below.
                    let pages = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                            -1,
                            0,
                        )
                    };
                    assert_ne!(pages, libc::MAP_FAILED);
                    // SAFETY: `len` bytes just mapped, readable and writable.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(pages as *mut u8, len) };
                    bytes.iter_mut().step_by(4096).for_each(|b| *b = 1);
                    let mut sum = 0u64;
                    for _ in 0..(n + 1) * 200 {
                        sum = sum.wrapping_add(bytes.iter().step_by(4096).map(|&b| b as u64).sum());
                    }
                    // SAFETY: the mapping above, no longer used.
                    unsafe { libc::munmap(pages, len) };
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    tid_sender.send(unsafe { libc::gettid() } as u32).unwrap();
                    parked.wait();
                    release.wait();
                    std::hint::black_box(sum);
                })
            })
            .collect();
        parked.wait();
        let mut tids: Vec<u32> = tids.iter().take(THREADS).collect();
        tids.sort_unstable();
        let ns_per_tick = 1_000_000_000 / crate::session::procfs::system_ticks_per_second();
        let from_proc = |tid: u32| {
            let dir = format!("/proc/self/task/{tid}");
            let read = |file: &str| std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            let (ran, waited) = parse_schedstat(&read("schedstat")).unwrap();
            let stat = parse_thread_stat(&read("stat"), ns_per_tick).unwrap();
            let (voluntary, involuntary) = parse_context_switches(&read("status")).unwrap();
            ThreadCounters {
                cpu_ns: ran,
                run_wait_ns: waited,
                minflt: stat.minflt,
                majflt: stat.majflt,
                voluntary,
                involuntary,
            }
        };
        // A thread past the barrier may still be on its way into the next wait: compare once
        // two answers around the /proc reads are the same (it did not move meanwhile).
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let mut compared = false;
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(20));
            query.read(&tids, &mut before).unwrap();
            let read: Vec<ThreadCounters> = tids.iter().map(|&tid| from_proc(tid)).collect();
            query.read(&tids, &mut after).unwrap();
            if before != after {
                continue;
            }
            for ((tid, answer), proc) in tids.iter().zip(&after).zip(&read) {
                assert_eq!(answer.unwrap(), *proc, "thread {tid}");
                assert!(proc.cpu_ns > 0 && proc.minflt > 0 && proc.voluntary > 0);
            }
            compared = true;
            break;
        }
        assert!(compared, "the parked threads kept running");
        let mut answers = Vec::new();
        release.wait();
        for worker in workers {
            worker.join().unwrap();
        }
        // Gone threads are answered as gone, not as an error. A joined thread's id is
        // cleared while it exits, before the kernel lets its task go: ask until it has.
        for _ in 0..200 {
            query.read(&tids, &mut answers).unwrap();
            if answers.iter().all(Option::is_none) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(answers.iter().all(Option::is_none), "{answers:?}");
    }

    #[test]
    fn parses_schedstat() {
        assert_eq!(
            parse_schedstat("2500000 130000 42\n"),
            Some((2_500_000, 130_000))
        );
        assert_eq!(parse_schedstat("2500000"), None);
    }

    #[test]
    fn parses_context_switches() {
        let text = "Name:\tx\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t7\n";
        assert_eq!(parse_context_switches(text), Some((120, 7)));
        assert_eq!(parse_context_switches("Name:\tx\n"), None);
    }
}
