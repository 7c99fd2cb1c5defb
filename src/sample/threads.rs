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
//!
//! A thread's last reading is up to an interval before its exit. Where the kernel's exit
//! records come (`hear_exits`), a thread that ends gets one more row per series: its totals
//! at its exit, dated when its record was read (at most a process reading's interval
//! later, never before its last reading). A thread that lived between two listings, never
//! read, gets its rows from its record alone: 0 at its start (the record's time less its
//! lifetime) and its totals at its exit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::{numbered_entries, Reread};
use super::{Readings, Tick};
use crate::model::SeriesKind;
use crate::session::taskstats::query::{ThreadCounters, ThreadQuery};
use crate::session::taskstats::{ThreadEnd, ThreadExits};
use crate::units::plural;

/// The shortest interval between readings of this source (see above).
pub const MIN_EVERY: Duration = Duration::from_millis(10);
/// Threads come and go: look for new ones this often.
const THREADS_EVERY: Duration = Duration::from_millis(200);
/// A thread found gone waits this long for its exit record (read within a process
/// reading's interval of its exit; lost only when the kernel's socket overflowed).
const AWAIT_EXIT_NS: i64 = 10_000_000_000;
/// At most this many threads get rows from their exit records alone (a program starting a
/// thread per task would otherwise add six series per task); the rest are counted.
const MAX_FROM_EXIT_ALONE: u64 = 4096;

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
    /// When `last` was read, ns after launch.
    read_at_ns: i64,
}

/// A thread found gone before its exit record came: what writing its totals at its exit
/// needs.
struct Ended {
    pid: u32,
    series: ThreadSeries,
    last: Totals,
    read_at_ns: i64,
    /// It ended while its process went on (counted in `ended_early`).
    early: bool,
}

pub struct Threads {
    proc_root: PathBuf,
    ns_per_tick: i64,
    threads: BTreeMap<u32, Thread>,
    /// Threads that ended while sampled: dropped, their last reading kept.
    ended: BTreeSet<u32>,
    /// Of those, threads that ended while their process went on.
    ended_early: u64,
    /// Of those, threads whose totals at their exit were written.
    early_with_exit: u64,
    /// The threads' ends from their exit records, where the kernel sends them.
    exits: Option<ThreadExits>,
    /// Threads found gone whose exit record has not come yet.
    awaiting: BTreeMap<u32, Ended>,
    /// Threads found gone before their first reading (their exit records still give rows).
    ended_unread: BTreeSet<u32>,
    /// Threads that lived between two listings: given rows from their exit records, and
    /// past `MAX_FROM_EXIT_ALONE` or born before the launch, counted only.
    from_exit_alone: u64,
    without_rows: u64,
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
            early_with_exit: 0,
            exits: None,
            awaiting: BTreeMap::new(),
            ended_unread: BTreeSet::new(),
            from_exit_alone: 0,
            without_rows: 0,
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
        if self.from_exit_alone > 0 {
            s.push_str(&format!(
                "; {} between two listings, from {}",
                plural(self.from_exit_alone, "thread lived", "threads lived"),
                if self.from_exit_alone == 1 {
                    "its exit record"
                } else {
                    "their exit records"
                }
            ));
        }
        if self.without_rows > 0 {
            s.push_str(&format!(
                "; {} without rows (past {MAX_FROM_EXIT_ALONE} from exit records, or born \
                 before the launch)",
                plural(self.without_rows, "more thread", "more threads"),
            ));
        }
        if self.ended_early > 0 {
            s.push_str(&format!(
                "; {} before {} process ({})",
                plural(self.ended_early, "thread ended", "threads ended"),
                if self.ended_early == 1 {
                    "its"
                } else {
                    "their"
                },
                self.how_ended_threads_count()
            ));
        }
        s
    }

    /// What the rows of threads that ended early hold: their totals at exit (from their exit
    /// records) or their last readings.
    fn how_ended_threads_count(&self) -> String {
        let (at_exit, last) = (
            self.early_with_exit,
            self.ended_early - self.early_with_exit,
        );
        match (at_exit, last) {
            (_, 0) => "totals at exit kept, from the kernel's exit records".to_owned(),
            (0, _) => "last readings kept".to_owned(),
            _ => format!("{at_exit} with totals at exit, {last} with last readings"),
        }
    }

    /// Where the kernel's exit records come: each thread's totals at its exit, from `exits`.
    pub fn hear_exits(&mut self, exits: ThreadExits) {
        self.exits = Some(exits);
    }

    /// Whether a thread of `pid` ending now ended before its process: threads ending while
    /// the command is being stopped are no news.
    fn ends_early(&self, pid: u32, tick: &Tick) -> bool {
        !tick.window_closed && self.proc_root.join(pid.to_string()).exists()
    }

    /// Takes `tid` off the threads read, counting it among those that ended (early when
    /// its process goes on); what writing its totals at exit needs, if it was ever read.
    fn retire(&mut self, tid: u32, tick: &Tick) -> Option<Ended> {
        self.ended.insert(tid);
        let thread = self.threads.remove(&tid)?;
        if thread.series.is_none() {
            // Never read: its exit record alone gives its rows (`from_exit_alone`).
            self.ended_unread.insert(tid);
            return None;
        }
        let early = self.ends_early(thread.pid, tick);
        self.ended_early += u64::from(early);
        thread.ended(early)
    }

    /// Writes the totals at exit of the threads whose exit records came, whether or not a
    /// reading found them gone yet.
    fn take_exits(&mut self, tick: &Tick, out: &mut Readings) {
        let Some(ends) = self.exits.as_ref().map(ThreadExits::take) else {
            return;
        };
        for end in ends {
            let ended = match self.threads.get(&end.tid) {
                Some(thread) if thread.pid == end.pid => self.retire(end.tid, tick),
                Some(_) => None,
                None => match self.awaiting.remove(&end.tid) {
                    Some(ended) => Some(ended).filter(|ended| ended.pid == end.pid),
                    None if !self.ended.contains(&end.tid)
                        || self.ended_unread.remove(&end.tid) =>
                    {
                        self.write_from_exit_record(&end, tick, out);
                        None
                    }
                    None => None,
                },
            };
            if let Some(ended) = ended {
                write_end(&ended, &end, out);
                self.early_with_exit += u64::from(ended.early);
            }
        }
        // Records lost (the kernel's socket overflowed) leave their threads' last readings.
        self.awaiting
            .retain(|_, ended| tick.t_ns - ended.read_at_ns < AWAIT_EXIT_NS);
    }

    /// A thread never read (it lived between two listings, or ended before its first
    /// reading): its rows from its record alone, 0 at its start and its totals at its exit.
    fn write_from_exit_record(&mut self, end: &ThreadEnd, tick: &Tick, out: &mut Readings) {
        self.ended.insert(end.tid);
        let born_ns = end.lifetime_ns.map(|lived| end.by_ns - lived);
        let Some(born_ns) =
            born_ns.filter(|&b| b >= 0 && self.from_exit_alone < MAX_FROM_EXIT_ALONE)
        else {
            // Older than the launch, its totals there are unknown; or one too many.
            self.without_rows += 1;
            return;
        };
        self.from_exit_alone += 1;
        let early = self.ends_early(end.pid, tick);
        self.ended_early += u64::from(early);
        self.early_with_exit += u64::from(early);
        let series = register_series(end.pid, end.tid, &end.comm, out);
        series.born(born_ns.min(end.by_ns), out);
        let ended = Ended {
            pid: end.pid,
            series,
            // Its record holds every counter: each series gets its total.
            last: Totals {
                cpu_ns: 0,
                minflt: 0,
                majflt: 0,
                switches: Some((0, 0)),
                run_wait_ns: Some(0),
            },
            read_at_ns: born_ns,
            early,
        };
        write_end(&ended, end, out);
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
                        read_at_ns: 0,
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
        self.take_exits(tick, out);
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
                let series = register_series(thread.pid, thread.tid, &stat.comm, out);
                // Born after the launch (its start is in ticks, rounded down): its totals
                // were 0 at its birth. A thread older than the run (a watched daemon's) has
                // no such reading: its totals before its first reading are unknown, and
                // differences start from that reading.
                let born_ns = stat.start_ns - tick.origin_mono_ns;
                if born_ns > -self.ns_per_tick && tick.t_ns > 0 {
                    series.born(born_ns.clamp(0, tick.t_ns - 1), out);
                }
                thread.series = Some(series);
            }
            // Where `status` was read just now (its counts are kept between readings).
            if stat.is_some() && totals.switches.is_none() {
                let path = thread.status.path().display().to_string();
                out.skip(|| format!("{path}: no context switch counts"));
            }
            thread.last = Some(totals);
            thread.read_at_ns = tick.t_ns;
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
            let ended = self.retire(tid, tick);
            // Its exit record may come at a later reading.
            if let (Some(ended), true) = (ended, self.exits.is_some()) {
                self.awaiting.insert(tid, ended);
            }
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

impl Thread {
    /// What writing its totals at exit needs, if it was ever read.
    fn ended(self, early: bool) -> Option<Ended> {
        Some(Ended {
            pid: self.pid,
            series: self.series?,
            last: self.last?,
            read_at_ns: self.read_at_ns,
            early,
        })
    }
}

/// Writes a thread's totals at its exit: never below its last reading (its record is taken
/// early in its exit, which a reading may still follow), dated no earlier than that reading.
fn write_end(ended: &Ended, end: &ThreadEnd, out: &mut Readings) {
    let (series, last, at) = (ended.series, ended.last, end.by_ns.max(ended.read_at_ns));
    let exit = end.counters;
    out.push_at(series.cpu, at, exit.cpu_ns.max(last.cpu_ns));
    out.push_at(series.minflt, at, exit.minflt.max(last.minflt));
    out.push_at(series.majflt, at, exit.majflt.max(last.majflt));
    if let Some(wait) = last.run_wait_ns {
        out.push_at(series.run_wait, at, exit.run_wait_ns.max(wait));
    }
    if let Some((voluntary, involuntary)) = last.switches {
        out.push_at(series.voluntary, at, exit.voluntary.max(voluntary));
        out.push_at(series.involuntary, at, exit.involuntary.max(involuntary));
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

/// A thread's series, at its first reading (or its exit record).
fn register_series(pid: u32, tid: u32, comm: &str, out: &mut Readings) -> ThreadSeries {
    let entity = format!("{pid}/{tid}");
    let mut counter = |metric: &str, unit: &str| {
        out.series(
            metric,
            entity.clone(),
            comm.to_owned(),
            unit,
            SeriesKind::Counter,
        )
    };
    ThreadSeries {
        cpu: counter("cpu_time", "ns"),
        minflt: counter("minflt", "count"),
        majflt: counter("majflt", "count"),
        voluntary: counter("ctx_voluntary", "count"),
        involuntary: counter("ctx_involuntary", "count"),
        run_wait: counter("run_wait", "ns"),
    }
}

impl ThreadSeries {
    /// Every counter of the thread at 0 at `at_ns`, its birth.
    fn born(&self, at_ns: i64, out: &mut Readings) {
        for id in [
            self.cpu,
            self.minflt,
            self.majflt,
            self.voluntary,
            self.involuntary,
            self.run_wait,
        ] {
            out.born(id, at_ns);
        }
    }
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

    /// A fixture /proc thread: `cpu_ms` on CPU, 7 minor faults, 3 + 1 switches.
    fn write_thread(root: &Path, pid: u32, tid: u32, cpu_ms: i64) {
        let dir = root.join(format!("{pid}/task/{tid}"));
        std::fs::create_dir_all(&dir).unwrap();
        let stat = format!("{tid} (worker) S 1 1 1 0 -1 0 7 0 0 0 1 0 0 0 20 0 1 0 0 0 0");
        std::fs::write(dir.join("stat"), stat).unwrap();
        std::fs::write(dir.join("schedstat"), format!("{} 1000 3\n", cpu_ms * MS)).unwrap();
        let status = "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t1\n";
        std::fs::write(dir.join("status"), status).unwrap();
    }

    const MS: i64 = 1_000_000;

    /// One reading of `pids` at `t_ns` (the first opens the window).
    fn read_at(threads: &mut Threads, out: &mut Readings, pids: &[u32], t_ns: i64) {
        let tick = Tick {
            t_ns,
            pids,
            closing: false,
            window_closed: false,
            opening: t_ns == 0,
            closes_window: false,
            origin_mono_ns: 0,
        };
        out.begin(0, t_ns, false);
        threads.read(&tick, out).unwrap();
    }

    /// Threads whose exit records come get one more reading, their totals at exit, dated
    /// when the record was read: whether it comes before the next reading (101) or after
    /// one (102); never below the last reading (103, whose record was taken before the
    /// reading that followed it).
    #[test]
    fn a_threads_exit_record_gives_its_totals_at_exit() {
        let root = tempfile::tempdir().unwrap();
        for (tid, cpu_ms) in [(101, 5), (102, 6), (103, 50)] {
            write_thread(root.path(), 100, tid, cpu_ms);
        }
        let mut threads = Threads::open(root.path(), 100).unwrap();
        let exits = ThreadExits::default();
        threads.hear_exits(exits.clone());
        let mut out = Readings::new(vec!["threads"]);
        let pids = [100];
        let read_at =
            |threads: &mut Threads, out: &mut Readings, t_ns| read_at(threads, out, &pids, t_ns);
        read_at(&mut threads, &mut out, 0);
        let end = |tid: u32, cpu_ms: i64, by_ms: i64| ThreadEnd {
            pid: 100,
            tid,
            counters: ThreadCounters {
                cpu_ns: cpu_ms * MS,
                run_wait_ns: 2000,
                minflt: 9,
                majflt: 0,
                voluntary: 4,
                involuntary: 2,
            },
            by_ns: by_ms * MS,
            ..ThreadEnd::default()
        };
        // 101 and 103 end; 101's record comes before the next reading, 103's too, lower than
        // its last reading.
        std::fs::remove_dir_all(root.path().join("100/task/101")).unwrap();
        exits.post([end(101, 40, 70), end(103, 45, 70)]);
        // 102 ends and is found gone first; its record comes later.
        std::fs::remove_dir_all(root.path().join("100/task/102")).unwrap();
        read_at(&mut threads, &mut out, 100 * MS);
        exits.post([end(102, 30, 120)]);
        read_at(&mut threads, &mut out, 150 * MS);
        let batch = out.take_batch();
        let cpu_of = |tid: u32| -> Vec<(i64, i64)> {
            let entity = format!("100/{tid}");
            let (id, _) = (batch.series.iter())
                .find(|(_, s)| s.entity == entity && s.metric == "cpu_time")
                .unwrap();
            (batch.samples.iter())
                .filter(|s| s.series == *id)
                .map(|s| (s.t_ns / MS, s.value / MS))
                .collect()
        };
        assert_eq!(cpu_of(101), [(0, 5), (70, 40)]);
        // Read unchanged at 100 (a fixture's open file outlives its directory), then ended.
        assert_eq!(cpu_of(102), [(0, 6), (100, 6), (120, 30)]);
        // Unchanged: nothing more to write.
        assert_eq!(cpu_of(103), [(0, 50)]);
        let described = threads.describe();
        assert!(
            described.contains("3 threads ended before their process (totals at exit kept"),
            "{described}"
        );
    }

    /// A thread that lived between two listings was never read: its exit record alone gives
    /// its rows, 0 at its start and its totals at its exit; one older than the launch is
    /// counted without rows (its totals there are unknown).
    #[test]
    fn a_thread_that_lived_between_two_listings_gets_its_rows_from_its_exit_record() {
        let root = tempfile::tempdir().unwrap();
        write_thread(root.path(), 100, 100, 5);
        let mut threads = Threads::open(root.path(), 100).unwrap();
        let exits = ThreadExits::default();
        threads.hear_exits(exits.clone());
        let mut out = Readings::new(vec!["threads"]);
        let pids = [100];
        read_at(&mut threads, &mut out, &pids, 0);
        let end = |tid: u32, cpu_ms: i64, by_ms: i64, lived_ms: i64| ThreadEnd {
            pid: 100,
            tid,
            comm: format!("worker-{tid}"),
            counters: ThreadCounters {
                cpu_ns: cpu_ms * MS,
                run_wait_ns: 3 * MS,
                minflt: 12,
                majflt: 1,
                voluntary: 5,
                involuntary: 2,
            },
            by_ns: by_ms * MS,
            lifetime_ns: Some(lived_ms * MS),
        };
        // 104 lived from 30 to 80 ms (its record read at 90), between two listings; 105
        // began before the launch.
        exits.post([end(104, 40, 90, 60), end(105, 7, 95, 200)]);
        read_at(&mut threads, &mut out, &pids, 100 * MS);
        let batch = out.take_batch();
        let rows = |tid: u32, metric: &str| -> Vec<(i64, i64)> {
            let entity = format!("100/{tid}");
            let Some((id, series)) =
                (batch.series.iter()).find(|(_, s)| s.entity == entity && s.metric == metric)
            else {
                return Vec::new();
            };
            assert_eq!(series.label, format!("worker-{tid}"));
            (batch.samples.iter())
                .filter(|s| s.series == *id)
                .map(|s| (s.t_ns, s.value))
                .collect()
        };
        assert_eq!(rows(104, "cpu_time"), [(30 * MS, 0), (90 * MS, 40 * MS)]);
        assert_eq!(rows(104, "minflt"), [(30 * MS, 0), (90 * MS, 12)]);
        assert_eq!(rows(104, "run_wait"), [(30 * MS, 0), (90 * MS, 3 * MS)]);
        assert_eq!(rows(104, "ctx_involuntary"), [(30 * MS, 0), (90 * MS, 2)]);
        assert!(rows(105, "cpu_time").is_empty());
        // A second record of the same thread (none should come) writes nothing more.
        exits.post([end(104, 50, 110, 80)]);
        read_at(&mut threads, &mut out, &pids, 120 * MS);
        assert!(out.take_batch().samples.is_empty());
        let described = threads.describe();
        assert!(
            described.contains("1 thread lived between two listings, from its exit record;")
                && described.contains("1 more thread without rows"),
            "{described}"
        );
    }

    /// A thread a reading found gone (real /proc: a fixture's open files outlive it) keeps
    /// waiting for its exit record, which then gives its totals at exit.
    #[test]
    fn a_thread_found_gone_before_its_exit_record_still_gets_its_totals() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
            rx.recv().ok()
        });
        let tid = tid_rx.recv().unwrap();
        let own = std::process::id();
        let ticks = crate::session::procfs::system_ticks_per_second();
        let mut threads = Threads::open(Path::new("/proc"), ticks).unwrap();
        let exits = ThreadExits::default();
        threads.hear_exits(exits.clone());
        let mut out = Readings::new(vec!["threads"]);
        let pids = [own];
        let read_at =
            |threads: &mut Threads, out: &mut Readings, t_ns| read_at(threads, out, &pids, t_ns);
        read_at(&mut threads, &mut out, 0);
        assert!(threads.threads.contains_key(&tid));
        tx.send(()).unwrap();
        worker.join().unwrap();
        // A joined thread's task goes a moment after: read until a reading finds it gone.
        let mut t_ns = 0;
        while threads.threads.contains_key(&tid) && t_ns < 200 * MS {
            std::thread::sleep(std::time::Duration::from_millis(10));
            t_ns += MS;
            read_at(&mut threads, &mut out, t_ns);
        }
        assert!(threads.awaiting.contains_key(&tid), "not found gone");
        let counters = ThreadCounters {
            cpu_ns: 1_000 * MS,
            ..ThreadCounters::default()
        };
        exits.post([ThreadEnd {
            pid: own,
            tid,
            counters,
            by_ns: t_ns + 5 * MS,
            ..ThreadEnd::default()
        }]);
        read_at(&mut threads, &mut out, t_ns + 10 * MS);
        let batch = out.take_batch();
        let entity = format!("{own}/{tid}");
        let (id, _) = (batch.series.iter())
            .find(|(_, s)| s.entity == entity && s.metric == "cpu_time")
            .unwrap();
        let last = batch.samples.iter().rfind(|s| s.series == *id).unwrap();
        assert_eq!((last.t_ns, last.value), (t_ns + 5 * MS, 1_000 * MS));
        assert!(threads.awaiting.is_empty());
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
