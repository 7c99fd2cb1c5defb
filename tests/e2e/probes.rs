//! Stages from an unmodified program (docs/probes.md): a C program built here with
//! `-O2 -fomit-frame-pointer`, whose `encode_frame(int frame)` logs its own
//! `clock_gettime` duration, is run under `framelab run --probe`. The spans must be
//! exactly its calls, carry its argument as the frame id, and last what its own log says
//! (the probes' measured cost taken off); a real Debian binary (ffmpeg's libx264) and
//! bpftrace beside framelab check the same from outside. Kernel tracepoints paired by
//! `--pair` must give the program's own count of calls.
//!
//! Tests that place probes skip, saying why on stderr, where the uprobe PMU is absent or
//! framelab is not root; `FRAMELAB_REQUIRE_UPROBES=1` (set by .ci/run) makes them fail
//! instead. The bad-input tests run everywhere.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static FILE *own_log;
static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
volatile unsigned long sink;

/* Starts each frame: what --frame-probe counts. */
__attribute__((noinline)) void next_frame(void) { sink++; }

/* Never called: a probe on it sees nothing. */
__attribute__((noinline)) void unused_function(int x) { sink += x; }

/* Does nothing: a probe's span of it is the probes' own cost alone. In assembly, so that
   it starts with a push (emulated: the steadiest class) whatever the compiler does. */
__asm__(".text\n.globl empty_call\n.type empty_call,@function\nempty_call:\n"
        "push %rbp\npop %rbp\nret\n.size empty_call, .-empty_call\n");
void empty_call(void);

/* A known amount of work, timed by itself. */
__attribute__((noinline)) void encode_frame(int frame) {
    long long start = now_ns();
    unsigned long x = frame;
    for (long i = 0; i < WORK; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
    fprintf(own_log, "%d %lld", frame, now_ns() - start);
}

int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    own_log = fopen(argv[2], "w");
    char empty_path[4096];
    snprintf(empty_path, sizeof empty_path, "%s.empty", argv[2]);
    FILE *empty_log = fopen(empty_path, "w");
    for (int i = 0; i < calls; i++) {
        next_frame();
        /* Timed from outside: the whole of both traps lies between the two reads. */
        long long before = now_ns();
        empty_call();
        fprintf(empty_log, "%lld\n", now_ns() - before);
        before = now_ns();
        encode_frame(i * 3 + 7);
        fprintf(own_log, " %lld\n", now_ns() - before);
    }
    fclose(empty_log);
    fclose(own_log);
    return 0;
}
"#;

const USDT_PROGRAM: &str = r#"
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* With _SDT_HAS_SEMAPHORES every probe of this file has one. */
__extension__ unsigned short demo_encode_begin_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short demo_encode_end_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short demo_frame_done_semaphore __attribute__((unused)) __attribute__((section(".probes")));
__extension__ unsigned short demo_from_memory_semaphore __attribute__((unused)) __attribute__((section(".probes")));

static FILE *own_log;
static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
volatile unsigned long sink;
volatile int frames_done;

__attribute__((noinline)) void encode_frame(int frame) {
    long long outer = now_ns();
    STAP_PROBE1(demo, encode_begin, frame);
    long long start = now_ns();
    unsigned long x = frame;
    for (long i = 0; i < 150000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    sink = x;
    long long took = now_ns() - start;
    STAP_PROBE1(demo, encode_end, frame);
    outer = now_ns() - outer;
    /* Fires only while a tracer holds the semaphore up. */
    if (demo_frame_done_semaphore) STAP_PROBE1(demo, frame_done, frame);
    frames_done++;
    /* An argument read from memory. */
    STAP_PROBE1(demo, from_memory, frames_done);
    fprintf(own_log, "%d %lld %lld\n", frame, took, outer);
}

int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    own_log = fopen(argv[2], "w");
    for (int i = 0; i < calls; i++) encode_frame(i * 3 + 7);
    fclose(own_log);
    return 0;
}
"#;

/// Whether probes can be placed here; otherwise says why (and fails under
/// `FRAMELAB_REQUIRE_UPROBES=1`).
fn uprobes_or_skip(test: &str) -> bool {
    let why = if !Path::new("/sys/bus/event_source/devices/uprobe/type").exists() {
        Some("this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)")
    } else if unsafe { libc::geteuid() } != 0 {
        Some("uprobes need root (or CAP_SYS_ADMIN) and the tests do not run as root")
    } else {
        None
    };
    let Some(why) = why else {
        return true;
    };
    if std::env::var_os("FRAMELAB_REQUIRE_UPROBES").is_some_and(|v| v == "1") {
        panic!("{test} cannot run: {why} (FRAMELAB_REQUIRE_UPROBES=1)");
    }
    eprintln!("SKIPPED {test}: {why}; run as root on a kernel with uprobes");
    false
}

/// The program built in `dir` with `work` iterations per call.
fn build(dir: &Path, work: u64) -> PathBuf {
    let work = format!("-DWORK={work}");
    compile_c(
        dir,
        "prog",
        PROGRAM,
        &["-O2", "-fomit-frame-pointer", &work],
        "prog",
    )
}

/// The USDT program built in `dir`, or `None` (said) where `<sys/sdt.h>` is missing.
fn build_usdt(dir: &Path, test: &str) -> Option<PathBuf> {
    let flags = ["-O2", "-fomit-frame-pointer"];
    let why = match try_compile_c(dir, "usdt", USDT_PROGRAM, &flags, "usdt") {
        Ok(exe) => return Some(exe),
        Err(e) => format!("<sys/sdt.h> does not compile: {e}"),
    };
    if std::env::var_os("FRAMELAB_REQUIRE_UPROBES").is_some_and(|v| v == "1") {
        panic!("{test} cannot run: {why} (tests/tools/install.sh installs systemtap-sdt-dev)");
    }
    eprintln!("SKIPPED {test}: {why}; run tests/tools/install.sh");
    None
}

/// `framelab run -o FILE ARGS -- PROG CALLS LOG`: the test program making `calls` calls,
/// each in its own log `LOG`, under what `args` ask.
fn run_program(file: &Path, args: &[&str], prog: &Path, calls: u32, log: &Path) -> Output {
    framelab()
        .args(["run", "-o"])
        .arg(file)
        .args(args)
        .arg("--")
        .arg(prog)
        .arg(calls.to_string())
        .arg(log)
        .output()
        .unwrap()
}

/// One call as the program logged it: its frame, the duration it timed inside the probed
/// code, and the duration it timed around the probed code (both traps within).
struct OwnCall {
    frame: u64,
    inside_ns: i64,
    around_ns: i64,
}

/// Each line the program logged: `FRAME INSIDE AROUND`.
fn own_log(path: &Path) -> Vec<OwnCall> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let fields: Vec<i64> = l.split(' ').map(|f| f.parse().unwrap()).collect();
            let [frame, inside_ns, around_ns] = fields[..] else {
                panic!("a line of the program's own log: {l:?}")
            };
            OwnCall {
                frame: frame as u64,
                inside_ns,
                around_ns,
            }
        })
        .collect()
}

/// Each span between what the program timed inside and around the probed code, less what
/// was subtracted (a span made 0 by it too): the probes' timestamps fall between those
/// clock reads, on the same clock, so this holds on any machine under any load. (How much
/// of the probes' cost the subtraction takes off on average is a figure of the machine:
/// benches/probes.sh.)
fn assert_within_own_log(spans: &[(u64, i64)], own: &[OwnCall], subtracted: i64) {
    assert_eq!(spans.len(), own.len());
    for ((frame, span), call) in spans.iter().zip(own) {
        assert_eq!(*frame, call.frame);
        let (low, high) = (
            call.inside_ns - subtracted,
            (call.around_ns - subtracted).max(0),
        );
        assert!(
            low <= *span && *span <= high,
            "frame {frame}: span {span} ns outside the program's own {} to {} ns less {subtracted} ns subtracted",
            call.inside_ns,
            call.around_ns
        );
    }
}

/// The spans of `stage`: (frame, duration ns), by frame.
fn spans_of(run: &framelab::model::Run, stage: &str) -> Vec<(u64, i64)> {
    let mut spans: Vec<(u64, i64)> = spans_in_time_order(run, stage)
        .iter()
        .map(|s| (s.frame, s.dur_ns))
        .collect();
    spans.sort();
    spans
}

/// The spans of `stage` in the order they started.
fn spans_in_time_order(run: &framelab::model::Run, stage: &str) -> Vec<framelab::model::Span> {
    let index = run
        .stages
        .iter()
        .position(|s| s == stage)
        .expect("the stage") as u16;
    let mut spans: Vec<_> = run
        .spans
        .iter()
        .filter(|s| s.stage == index)
        .copied()
        .collect();
    spans.sort_by_key(|s| s.start_ns);
    spans
}

#[test]
fn function_probe_spans_are_the_programs_calls_with_its_frame_ids_and_durations() {
    if !uprobes_or_skip(
        "function_probe_spans_are_the_programs_calls_with_its_frame_ids_and_durations",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 150_000);
    let log = dir.path().join("own.log");
    let file = temp_run(&dir, "probed");
    let probe = format!("encode={}:encode_frame", prog.display());
    let out = run_program(
        &file,
        &["--probe", &probe, "--frame-arg", "encode=arg1"],
        &prog,
        300,
        &log,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let own = own_log(&log);
    let spans = spans_of(&run, "encode");
    // Exactly its calls, each with its argument as the frame id.
    assert_eq!(spans.len(), 300, "{}", stderr(&out));
    let facts = &run.meta.session.probes[0];
    assert_eq!((facts.hits, facts.spans), (300, 300));
    let subtracted = facts.subtracted_ns.expect("the in-span cost was measured");
    assert!(subtracted > 0, "{facts:?}");
    // Entry and return lie between the program's clock reads inside and around the call,
    // less the probes' cost taken off.
    assert_within_own_log(&spans, &own, subtracted);
    // The header says where the stage came from, what a call cost and what was taken off.
    let report = stdout(&out);
    assert!(report.contains("probes    encode uprobe"), "{report}");
    assert!(report.contains("300 calls"), "{report}");
    assert!(report.contains("µs per call (entry + return; "), "{report}");
    assert!(
        report.contains(&format!(
            "{:.1} µs subtracted from each span",
            subtracted as f64 / 1e3
        )),
        "{report}"
    );
}

#[test]
fn an_empty_function_probed_lasts_what_the_program_timed_around_it_less_the_probes_cost() {
    let test =
        "an_empty_function_probed_lasts_what_the_program_timed_around_it_less_the_probes_cost";
    if !uprobes_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 10);
    let file = temp_run(&dir, "empty");
    let probe = format!("empty={}:empty_call", prog.display());
    let log = dir.path().join("own.log");
    let out = run_program(&file, &["--probe", &probe], &prog, 2000, &log);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let facts = &run.meta.session.probes[0];
    assert_eq!(
        facts.first_instruction,
        framelab::probes::cost::InstructionClass::Push
    );
    let subtracted = facts.subtracted_ns.expect("the in-span cost was measured");
    assert!(subtracted > 0, "{facts:?}");
    let spans: Vec<i64> = spans_in_time_order(&run, "empty")
        .iter()
        .map(|s| s.dur_ns)
        .collect();
    let around: Vec<i64> = std::fs::read_to_string(log.with_extension("log.empty"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!((spans.len(), around.len()), (2000, 2000));
    // The function does nothing: what the probes record of it is their own cost, and the
    // program's clock reads around each call hold both traps whole. With the cost taken
    // off, a span is never negative and never more than that less the subtraction,
    // whatever the load. (How near 0 the typical span comes is a figure of the machine:
    // benches/probes.sh.)
    for (call, (span, around)) in spans.iter().zip(&around).enumerate() {
        assert!(
            0 <= *span && *span <= (around - subtracted).max(0),
            "call {call}: span {span} ns, {around} ns timed around it, {subtracted} ns subtracted"
        );
    }
    // Spans that came out shorter than what was taken off are counted and made 0 (a span
    // exactly as long as what was taken off is 0 too, not counted).
    let zero = spans.iter().filter(|&&s| s == 0).count() as u64;
    assert!(
        facts.clamped <= zero,
        "{} clamped, {zero} spans of 0",
        facts.clamped
    );
}

#[test]
fn a_frame_probe_numbers_the_frames_and_a_function_never_called_is_said() {
    if !uprobes_or_skip("a_frame_probe_numbers_the_frames_and_a_function_never_called_is_said") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 20_000);
    let file = temp_run(&dir, "frames");
    let p = prog.display();
    let (encode, unused) = (
        format!("encode={p}:encode_frame"),
        format!("unused={p}:unused_function"),
    );
    let frame = format!("{p}:next_frame");
    let args = [
        "--probe",
        &encode,
        "--probe",
        &unused,
        "--frame-probe",
        &frame,
    ];
    let out = run_program(&file, &args, &prog, 50, &dir.path().join("own.log"));
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let frames: Vec<u64> = spans_of(&run, "encode").iter().map(|s| s.0).collect();
    assert_eq!(frames, (1..=50).collect::<Vec<u64>>());
    let err = stderr(&out);
    assert!(
        err.contains("unused_function") && err.contains("0 hits"),
        "{err}"
    );
    // The frame probe's own cost, measured as the other probes' are: one entry a hit.
    let frame = (run.meta.session.probes.iter())
        .find(|f| f.frame_probe)
        .unwrap();
    assert!(frame.cost_per_hit_ns.is_some_and(|ns| ns > 0), "{frame:?}");
    let report = stdout(&out);
    assert!(report.contains("per hit (entry; "), "{report}");
}

/// A refused `framelab run --probe`: one error line containing `says`, and nothing of the
/// run (no run file; the command never started). Returns the exit code.
fn assert_refused(args: &[&str], env: &[(&str, &str)], says: &str) -> Option<i32> {
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "refused");
    let marker = dir.path().join("started");
    let mut command = framelab();
    command.args(["run", "-o"]).arg(&file).args(args);
    command.args(["--", "touch"]).arg(&marker);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    let line = error_line(&out);
    assert!(line.contains(says), "{line}");
    assert!(!file.exists(), "a run file was left: {line}");
    assert!(!marker.exists(), "the command ran: {line}");
    out.status.code()
}

#[test]
fn bad_probes_are_refused_in_one_line_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 10);
    let p = prog.display().to_string();
    // A function that does not exist: its near matches. What the binary holds is no
    // usage error (exit 1); an option malformed as given is one (exit 2).
    let missing = assert_refused(
        &["--probe", &format!("encode={p}:encode_fram")],
        &[],
        "near matches: encode_frame",
    );
    assert_eq!(missing, Some(1));
    // A file that is not ELF.
    let script = dir.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    assert_refused(
        &["--probe", &format!("encode={}:main", script.display())],
        &[],
        "is not an ELF binary",
    );
    // The same function twice.
    assert_refused(
        &[
            "--probe",
            &format!("a={p}:encode_frame"),
            "--probe",
            &format!("b={p}:encode_frame"),
        ],
        &[],
        "probed twice",
    );
    // An offset outside every function.
    assert_refused(
        &["--probe", &format!("encode={p}:0x7fffffff")],
        &[],
        "not inside any function",
    );
    // An offset inside a function, past its entry: its return probe would corrupt it.
    let entry = framelab::probes::elf::Binary::read(&prog)
        .unwrap()
        .function("encode_frame")
        .unwrap()
        .file_offset;
    assert_refused(
        &["--probe", &format!("encode={p}:{:#x}", entry + 2)],
        &[],
        "not at its entry",
    );
    // A --frame-arg for no probe stage.
    let unknown_stage = assert_refused(
        &[
            "--probe",
            &format!("encode={p}:encode_frame"),
            "--frame-arg",
            "decode=arg1",
        ],
        &[],
        "no --probe or --usdt stage decode",
    );
    assert_eq!(unknown_stage, Some(2));
    // The same tracepoint twice.
    assert_refused(
        &[
            "--tracepoint",
            "a=syscalls:sys_enter_write",
            "--tracepoint",
            "b=syscalls:sys_enter_write",
        ],
        &[],
        "syscalls:sys_enter_write is probed twice (stages a and b)",
    );
    // A pair of a probe stage's name: stages are no events.
    assert_refused(
        &[
            "--probe",
            &format!("encode={p}:encode_frame"),
            "--pair",
            "x=encode:encode",
        ],
        &[],
        "encode is the stage of --probe encode=",
    );
    // A pair given without its stage.
    let no_stage = assert_refused(
        &["--pair", "enter:exit"],
        &[],
        "is not STAGE=START:END[:KEY]",
    );
    assert_eq!(no_stage, Some(2));
    // A kernel without the uprobe PMU.
    assert_refused(
        &["--probe", &format!("encode={p}:encode_frame")],
        &[("FRAMELAB_TEST_UPROBE_PMU", "/nonexistent")],
        "offers no uprobe PMU",
    );
}

#[test]
fn a_refused_uprobe_says_what_permission_it_needs() {
    if !uprobes_or_skip("a_refused_uprobe_says_what_permission_it_needs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 10);
    let probe = format!("encode={}:encode_frame", prog.display());
    assert_refused(
        &["--probe", &probe],
        &[("FRAMELAB_TEST_PERF_ERRNO", "1")],
        "uprobes need root or CAP_SYS_ADMIN",
    );
    // One line: the calibration's refusal is the same refusal, not a warning before it.
    let out = framelab()
        .args(["run", "-o"])
        .arg(dir.path().join("x.framelab"))
        .args(["--probe", &probe, "--", "true"])
        .env("FRAMELAB_TEST_PERF_ERRNO", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = stderr(&out);
    assert!(!text.contains("the cost of a probe hit"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("refused the uprobe"))
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn probes_lists_a_binarys_functions_and_their_first_instruction() {
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 10);
    let out = run(&["probes", &prog.display().to_string(), "frame"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("encode_frame") && text.contains("next_frame"),
        "{text}"
    );
    assert!(!text.contains("unused_function"), "{text}");
    // One match is one function (it said "1 functions").
    let out = run(&["probes", &prog.display().to_string(), "encode_frame"]);
    let text = stdout(&out);
    assert!(
        text.contains(" · 1 function matching \"encode_frame\""),
        "{text}"
    );
    let out = run(&["probes", &prog.display().to_string(), "encod_frame"]);
    assert!(
        stdout(&out).contains("near matches: encode_frame"),
        "{}",
        stdout(&out)
    );
}

/// `framelab probes BINARY | head -1`: the reader goes away and the listing ends quietly
/// (it printed itself with `print!`, which panicked on the closed pipe).
#[test]
fn probes_into_a_reader_that_went_away_is_not_a_panic() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 10);
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // The read end closed before framelab writes: its one write meets a closed pipe.
    drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    let write_end = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    let out = framelab()
        .arg("probes")
        .arg(&prog)
        .stdout(write_end)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// Whether `program` is installed; otherwise says why (and fails under
/// `FRAMELAB_REQUIRE_UPROBES=1`: tests/tools/install.sh installs it).
fn installed_or_skip(test: &str, program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var_os("FRAMELAB_REQUIRE_UPROBES").is_some_and(|v| v == "1") {
        panic!(
            "{test} cannot run: {program} is not installed (tests/tools/install.sh installs it)"
        );
    }
    eprintln!("SKIPPED {test}: {program} is not installed; run tests/tools/install.sh");
    false
}

#[test]
fn ffmpeg_probed_in_libx264_gives_one_span_per_encoder_call() {
    let test = "ffmpeg_probed_in_libx264_gives_one_span_per_encoder_call";
    if !uprobes_or_skip(test) || !installed_or_skip(test, "ffmpeg") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = temp_run(&dir, "ffmpeg");
    // By soname: the loader's cache finds the file ffmpeg loads.
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args([
            "--probe",
            "encode=libx264.so.164:x264_encoder_encode",
            "--",
            "ffmpeg",
            "-hide_banner",
            "-nostdin",
            "-stats",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=320x240:rate=25",
            "-frames:v",
            "60",
            "-c:v",
            "libx264",
            "-tune",
            "zerolatency",
            "-f",
            "null",
            "-",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // ffmpeg's own count, from its last progress line (`frame=   60 fps=…`).
    let err = stderr(&out);
    let frames: u64 = err
        .rsplit("frame=")
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no frame count from ffmpeg: {err}"));
    assert_eq!(frames, 60, "{err}");
    let run = load(&file);
    // One call per frame, and the one call with no picture that flushes the encoder at
    // the end (libavcodec's libx264.c calls x264_encoder_encode once with NULL even when
    // nothing is delayed, as with -tune zerolatency).
    assert_eq!(spans_of(&run, "encode").len() as u64, frames + 1, "{err}");
}

/// The bucket bpftrace's `hist()` puts `ns` in: its lower bound, a power of two.
fn log2_bucket(ns: i64) -> i64 {
    if ns <= 0 {
        return 0;
    }
    1i64 << (63 - (ns as u64).leading_zeros())
}

/// `[128K, 256K)   89 |@@@|` lines of a bpftrace histogram: lower bound → count.
fn bpftrace_histogram(text: &str) -> std::collections::BTreeMap<i64, u64> {
    let value = |t: &str| -> i64 {
        let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
        let n: i64 = digits.parse().unwrap_or(0);
        n * match unit {
            "K" => 1 << 10,
            "M" => 1 << 20,
            "G" => 1 << 30,
            _ => 1,
        }
    };
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix('[')?;
            let (low, rest) = rest.split_once(',')?;
            let count = rest
                .split_once(')')?
                .1
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            Some((value(low.trim()), count))
        })
        .collect()
}

#[test]
fn framelab_and_bpftrace_on_the_same_function_agree_on_count_and_log2_buckets() {
    let test = "framelab_and_bpftrace_on_the_same_function_agree_on_count_and_log2_buckets";
    if !uprobes_or_skip(test) || !installed_or_skip(test, "bpftrace") {
        return;
    }
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    // About 180 µs a call: the middle of bpftrace's [128K, 256K) bucket.
    let prog = build(dir.path(), 120_000);
    let p = prog.display();
    let script = format!(
        "BEGIN {{ printf(\"ready\\n\"); }} \
         uprobe:{p}:encode_frame {{ @start[tid] = nsecs; }} \
         uretprobe:{p}:encode_frame /@start[tid]/ {{ @ns = hist(nsecs - @start[tid]); \
         @calls = count(); delete(@start[tid]); }}"
    );
    let mut bpftrace = Command::new("bpftrace")
        .args(["-B", "line", "-e", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its lines come through a thread: a bpftrace that never gets ready fails the test at a
    // deadline instead of hanging it.
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = std::io::BufReader::new(bpftrace.stdout.take().unwrap());
    std::thread::spawn(move || {
        stdout
            .lines()
            .map_while(Result::ok)
            .try_for_each(|l| tx.send(l))
    });
    // BEGIN runs once every probe is attached.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains("ready") => break,
            Ok(_) => {}
            Err(e) => {
                let _ = bpftrace.kill();
                let _ = bpftrace.wait();
                panic!("bpftrace never attached its probes (no 'ready' line: {e})");
            }
        }
    }
    let file = temp_run(&dir, "side-by-side");
    let probe = format!("encode={p}:encode_frame");
    let log = dir.path().join("own.log");
    let out = run_program(&file, &["--probe", &probe], &prog, 200, &log);
    // SAFETY: signalling the bpftrace this test started, by its pid.
    unsafe { libc::kill(bpftrace.id() as i32, libc::SIGINT) };
    let printed: String = lines.iter().collect::<Vec<_>>().join("\n");
    let _ = bpftrace.wait();
    assert!(out.status.success(), "{}", stderr(&out));
    let calls: u64 = printed
        .split("@calls:")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no @calls from bpftrace: {printed}"));
    let theirs = bpftrace_histogram(&printed);
    let run = load(&file);
    let spans = spans_of(&run, "encode");
    assert_eq!(calls, 200, "{printed}");
    assert_eq!(spans.len() as u64, calls);
    let mut ours = std::collections::BTreeMap::new();
    for (_, ns) in &spans {
        *ours.entry(log2_bucket(*ns)).or_insert(0u64) += 1;
    }
    // The two tools read the clock a few µs apart at each end: only a call that close to
    // a bucket's edge may fall on the other side of it. A call over 1 ms (five times its
    // work) was preempted, and the scheduler may run other work between the two tools'
    // handlers, so on a loaded machine such a call may land anywhere near its value
    // (CI once saw one call of about 4 ms in the bucket below bpftrace's).
    let preempted = |ns: i64| ns > 1_000_000;
    let near_an_edge = spans
        .iter()
        .filter(|(_, ns)| {
            let low = log2_bucket(*ns);
            preempted(*ns) || (*ns - low) < 20_000 || (2 * low - *ns) < 20_000
        })
        .count() as u64;
    let differing: u64 = ours
        .keys()
        .chain(theirs.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|b| {
            ours.get(b)
                .unwrap_or(&0)
                .abs_diff(*theirs.get(b).unwrap_or(&0))
        })
        .sum::<u64>()
        / 2;
    assert!(
        differing <= near_an_edge,
        "framelab {ours:?} vs bpftrace {theirs:?}: {differing} calls in other buckets, {near_an_edge} near an edge"
    );
}

#[test]
fn usdt_spans_and_events_match_the_programs_own_log() {
    let test = "usdt_spans_and_events_match_the_programs_own_log";
    if !uprobes_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build_usdt(dir.path(), test) else {
        return;
    };
    let p = prog.display();
    let log = dir.path().join("own.log");
    let file = temp_run(&dir, "usdt");
    let (usdt, event) = (
        format!("encode={p}:demo:encode_begin,encode_end"),
        format!("done={p}:demo:frame_done"),
    );
    let args = [
        "--usdt",
        &usdt,
        "--frame-arg",
        "encode=arg1",
        "--usdt-event",
        &event,
    ];
    let out = run_program(&file, &args, &prog, 200, &log);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let own = own_log(&log);
    let spans = spans_of(&run, "encode");
    assert_eq!(spans.len(), own.len(), "{}", stderr(&out));
    let facts = &run.meta.session.probes[0];
    let subtracted = facts.subtracted_ns.expect("the in-span cost was measured");
    // Begin and end lie between the program's clock reads inside and around them, less
    // what was taken off.
    assert_within_own_log(&spans, &own, subtracted);
    // The event fires only with its semaphore raised: one per frame, keyed by the frame.
    let done = run
        .event_names
        .iter()
        .position(|n| n == "done")
        .expect("the event") as u16;
    let mut keys: Vec<u64> = run
        .events
        .iter()
        .filter(|e| e.event == done)
        .map(|e| e.key)
        .collect();
    keys.sort();
    let frames: Vec<u64> = own.iter().map(|o| o.frame).collect();
    assert_eq!(keys, frames);
    let report = stdout(&out);
    assert!(report.contains("encode usdt "), "{report}");
    assert!(report.contains("done usdt event "), "{report}");
}

#[test]
fn bad_usdt_probes_are_refused_in_one_line_before_the_run() {
    let test = "bad_usdt_probes_are_refused_in_one_line_before_the_run";
    let dir = tempfile::tempdir().unwrap();
    let Some(prog) = build_usdt(dir.path(), test) else {
        return;
    };
    let p = prog.display();
    // No such probe: the ones the file has.
    assert_refused(
        &[
            "--usdt",
            &format!("encode={p}:demo:encode_start,encode_end"),
        ],
        &[],
        "has no USDT probe demo:encode_start; it has demo:encode_begin",
    );
    // An argument in memory cannot be read at the probe.
    assert_refused(
        &["--usdt-event", &format!("mem={p}:demo:from_memory")],
        &[],
        "which framelab cannot read",
    );
    // A binary without USDT probes.
    let plain = build(dir.path(), 10);
    assert_refused(
        &[
            "--usdt-event",
            &format!("x={}:demo:frame_done", plain.display()),
        ],
        &[],
        "it has no USDT probes",
    );
}

#[test]
fn a_tracepoint_gives_one_event_per_hit_keyed_by_its_field() {
    let test = "a_tracepoint_gives_one_event_per_hit_keyed_by_its_field";
    if !uprobes_or_skip(test) {
        return;
    }
    if !Path::new("/sys/kernel/tracing/events/syscalls").exists()
        && !Path::new("/sys/kernel/debug/tracing/events/syscalls").exists()
    {
        eprintln!("SKIPPED {test}: this kernel has no syscalls tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 40 writes of 7777 bytes: a size nothing else on the machine is likely to write.
    let exe = compile_c(
        dir.path(),
        "writer",
        "#include <unistd.h>\n#include <fcntl.h>\nstatic char buf[7777];\n\
         int main(void) { int fd = open(\"/dev/null\", O_WRONLY);\n\
         for (int i = 0; i < 40; i++) write(fd, buf, sizeof buf); return 0; }\n",
        &[],
        "writer",
    );
    let file = temp_run(&dir, "tracepoint");
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args(["--tracepoint", "write=syscalls:sys_enter_write:count", "--"])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let write = run.event_names.iter().position(|n| n == "write").unwrap() as u16;
    let ours = run
        .events
        .iter()
        .filter(|e| e.event == write && e.key == 7777)
        .count();
    assert_eq!(ours, 40);
    assert!(stdout(&out).contains("write tracepoint syscalls:sys_enter_write:count"));
    // A tracepoint or a field that does not exist: one line, before the run.
    assert_refused(
        &["--tracepoint", "w=syscalls:sys_enter_wrte"],
        &[],
        "no tracepoint syscalls:sys_enter_wrte; near matches: sys_enter_write",
    );
    assert_refused(
        &["--tracepoint", "w=syscalls:sys_enter_write:cnt"],
        &[],
        "has no field cnt; its fields: __syscall_nr, fd, buf, count",
    );
    // No permission for system-wide tracepoints: what gives it.
    assert_refused(
        &["--tracepoint", "w=syscalls:sys_enter_write"],
        &[("FRAMELAB_TEST_PERF_ERRNO", "13")],
        "perf_event_open refused the tracepoint of --tracepoint w=syscalls:sys_enter_write",
    );
}

/// Whether this kernel has the syscalls tracepoints; otherwise says so.
fn syscall_tracepoints_or_skip(test: &str) -> bool {
    let found = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| Path::new(t).join("events/syscalls").exists());
    if !found {
        eprintln!("SKIPPED {test}: this kernel has no syscalls tracepoints");
    }
    found
}

const SLEEPER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    int calls = atoi(argv[1]), slept = 0;
    struct timespec d = {0, 1000000};
    for (int i = 0; i < calls; i++)
        if (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) == 0) slept++;
    printf("slept %d\n", slept);
    return 0;
}
"#;

#[test]
fn a_tracepoint_pair_keyed_by_thread_becomes_a_stage_with_the_programs_count() {
    let test = "a_tracepoint_pair_keyed_by_thread_becomes_a_stage_with_the_programs_count";
    if !uprobes_or_skip(test) || !syscall_tracepoints_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = compile_c(dir.path(), "sleeper", SLEEPER, &[], "sleeper");
    let file = temp_run(&dir, "pair");
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args([
            "--tracepoint",
            "enter=syscalls:sys_enter_clock_nanosleep",
            "--tracepoint",
            "exit=syscalls:sys_exit_clock_nanosleep",
            "--pair",
            "sleep=enter:exit:tid",
            "--pair",
            "missing=enter:nosuch",
            "--",
        ])
        .arg(&exe)
        .arg("40")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The program's own count of the calls it made.
    let slept: usize = stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("slept ")?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count from the program: {}", stdout(&out)));
    assert_eq!(slept, 40);
    let run = load(&file);
    // One span per call of the program's, whatever the machine's other tasks slept: their
    // events are left out. Numbered 1, 2, … as the calls of a probe without frame ids.
    let spans = spans_of(&run, "sleep");
    assert_eq!(spans.len(), slept, "{}", stderr(&out));
    let frames: Vec<u64> = spans.iter().map(|s| s.0).collect();
    assert_eq!(frames, (1..=40).collect::<Vec<u64>>());
    // Each is a sleep the kernel made at least as long as asked (1 ms).
    assert!(spans.iter().all(|s| s.1 >= 1_000_000), "{spans:?}");
    let pairs = &run.meta.session.probe_pairs;
    assert_eq!((pairs[0].stage.as_str(), pairs[0].spans), ("sleep", 40));
    // Like any stage: the report's table, and the header line.
    let report = stdout(&out);
    assert!(
        report.contains("sleep pair enter:exit by tid · 40 spans"),
        "{report}"
    );
    assert!(report.contains("\n  sleep "), "{report}");
    // Exported like any stage: one CSV row per span.
    let csv = framelab()
        .args(["export", "--format", "csv", "-o", "-"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(csv.status.success(), "{}", stderr(&csv));
    let rows = stdout(&csv)
        .lines()
        .filter(|l| l.split(',').nth(1) == Some("sleep"))
        .count();
    assert_eq!(rows, 40, "{}", stdout(&csv));
    // A pair whose END no option records says so in a note.
    let json = report_json(&file);
    let notes = json["notes"].to_string();
    assert!(
        notes
            .contains("--pair missing=enter:nosuch:key: the run has no event named \\\"nosuch\\\""),
        "{notes}"
    );
}

/// `--pair` pairs the SDK's events too, and needs no permission then: testprog marks one
/// `tick` per frame, keyed by the frame id, on one thread.
#[test]
fn sdk_events_pair_by_thread_and_what_does_not_pair_is_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let (out, path) = run_testprog(
        &dir,
        "sdk-pair",
        &["--pair", "t=tick:tick:tid", "--pair", "k=tick:tick"],
        &["spans", "10"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&path);
    // By thread, START and END one name: consecutive ticks pair, 10 make 5 spans.
    let frames: Vec<u64> = spans_of(&run, "t").iter().map(|s| s.0).collect();
    assert_eq!(frames, vec![1, 2, 3, 4, 5]);
    // By key, each frame's tick is alone: no span, and the note says what was left.
    assert!(!run.stages.iter().any(|s| s == "k"), "{:?}", run.stages);
    let pairs = &run.meta.session.probe_pairs;
    assert_eq!((pairs[1].spans, pairs[1].unmatched_starts), (0, 10));
    let notes = report_json(&path)["notes"].to_string();
    assert!(
        notes.contains("--pair k=tick:tick:key: 10 tick with no tick of the same key"),
        "{notes}"
    );
    let report = stdout(&out);
    assert!(
        report.contains("t pair tick:tick by tid · 5 spans"),
        "{report}"
    );
}

#[test]
fn a_library_the_command_never_loads_is_said_after_the_run_with_what_it_did_map() {
    let test = "a_library_the_command_never_loads_is_said_after_the_run_with_what_it_did_map";
    if !uprobes_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = compile_c(
        dir.path(),
        "unused",
        "int unused_entry(int x) { return x + 1; }\n",
        &["-shared", "-fPIC", "-O2"],
        "libunused.so",
    );
    // About a second of work: the run's maps are read while the probe has no hit.
    let prog = build(dir.path(), 150_000);
    let probe = format!("u={}:unused_entry", lib.display());
    let (file, log) = (temp_run(&dir, "unloaded"), dir.path().join("own.log"));
    let out = run_program(&file, &["--probe", &probe], &prog, 6000, &log);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--probe u=") && err.contains("0 hits"),
        "{err}"
    );
    assert!(
        err.contains("the run's processes never loaded that file; they mapped prog, "),
        "{err}"
    );
    assert!(err.contains("libc.so.6"), "{err}");
}

#[test]
fn a_probed_run_is_in_the_html_page_a_perfetto_export_and_the_live_histograms() {
    let test = "a_probed_run_is_in_the_html_page_a_perfetto_export_and_the_live_histograms";
    if !uprobes_or_skip(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 150_000);
    let file = temp_run(&dir, "downstream");
    // Over a second of calls: at least one whole --live interval, then the run's end.
    let calls = 7000;
    let out = framelab()
        .args(["run", "--live", "1s", "-o"])
        .arg(&file)
        .arg("--probe")
        .arg(format!("encode={}:encode_frame", prog.display()))
        .args(["--frame-arg", "encode=arg1", "--"])
        .arg(&prog)
        .arg(calls.to_string())
        .arg(dir.path().join("own.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    let count = spans_of(&run, "encode").len();
    assert_eq!(count, calls);
    // --live: the probe stage's histogram at each interval; every span printed once.
    let err = stderr(&out);
    assert!(err.contains("--- 0.0–1.0 s ---\n@encode (µs):\n"), "{err}");
    assert!(err.contains(" s (end of the run) ---\n"), "{err}");
    let printed = bucket_total(&err);
    assert_eq!(printed, count as u64, "{err}");
    // The HTML page: the stage among its plotted stages, the probes in its header.
    let page = dir.path().join("page.html");
    let html = framelab()
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .arg(&file)
        .output()
        .unwrap();
    assert!(html.status.success(), "{}", stderr(&html));
    let data = page_data(&page);
    let names: Vec<&str> = data["stages"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"encode"), "{names:?}");
    let facts = data["facts"].to_string();
    assert!(
        facts.contains("encode uprobe") && facts.contains("subtracted from each span"),
        "{facts}"
    );
    // Markdown and JSON say what was taken off each span too.
    let subtracted = run.meta.session.probes[0]
        .subtracted_ns
        .expect("the in-span cost was measured");
    let markdown = framelab()
        .args(["report", "--format", "markdown"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        stdout(&markdown).contains(&format!(
            "{:.1} µs subtracted from each span",
            subtracted as f64 / 1e3
        )),
        "{}",
        stdout(&markdown)
    );
    let json = report_json(&file);
    assert_eq!(
        json["probes"]["probes"][0]["subtracted_ns"], subtracted,
        "{}",
        json["probes"]
    );
    // A Perfetto trace with every span of the probe: imported back, the same count.
    let trace = dir.path().join("probed.pftrace");
    let exported = framelab()
        .args(["export", "--format", "perfetto", "-o"])
        .arg(&trace)
        .arg(&file)
        .output()
        .unwrap();
    assert!(exported.status.success(), "{}", stderr(&exported));
    let back = temp_run(&dir, "back");
    let imported = framelab()
        .arg("import")
        .arg(&trace)
        .arg("-o")
        .arg(&back)
        .output()
        .unwrap();
    assert!(imported.status.success(), "{}", stderr(&imported));
    assert_eq!(spans_of(&load(&back), "encode").len(), count);
}

/// Processes that live a millisecond and are reaped by their parent (a shell) before
/// framelab drains the probes' rings: the kernel said at each fork that they were the
/// run's, and at each exec their name, so no hit of theirs is dropped or left unnamed for
/// /proc no longer knowing them.
#[test]
fn every_call_of_short_processes_reaped_before_a_drain_is_kept() {
    if !uprobes_or_skip("every_call_of_short_processes_reaped_before_a_drain_is_kept") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 2_000);
    let file = temp_run(&dir, "short");
    let probe = format!("encode={}:encode_frame", prog.display());
    let processes = 40;
    let script = format!(
        "i=0; while [ $i -lt {processes} ]; do {} 5 /dev/null || exit 1; i=$((i+1)); done",
        prog.display()
    );
    let out = framelab()
        .args(["run", "-o"])
        .arg(&file)
        .args(["--probe", &probe, "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = load(&file);
    assert_eq!(
        spans_of(&run, "encode").len(),
        processes * 5,
        "{}",
        stderr(&out)
    );
    // Each named as the kernel named it at its exec, though gone from /proc.
    let threads: Vec<&str> = (spans_in_time_order(&run, "encode").iter())
        .map(|s| run.threads[s.thread as usize].name.as_str())
        .collect();
    assert!(threads.iter().all(|&n| n == "prog"), "{threads:?}");
}

#[test]
fn a_bench_attaches_the_probes_given_once_to_every_run_of_every_variant() {
    if !uprobes_or_skip("a_bench_attaches_the_probes_given_once_to_every_run_of_every_variant") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = build(dir.path(), 20_000);
    let experiment = dir.path().join("probed.framelab");
    let probe = format!("encode={}:encode_frame", prog.display());
    let out = framelab()
        .args(["bench", "--runs", "2", "-o"])
        .arg(&experiment)
        .args(["--probe", &probe, "--frame-arg", "encode=arg1"])
        .arg("--variant")
        .arg(format!("short={} 100 /dev/null", prog.display()))
        .arg("--variant")
        .arg(format!("long={} 200 /dev/null", prog.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Every run of both variants has the probe's spans: compare reads their counts.
    let compared = framelab()
        .args(["compare", "--format", "json", "--show", "encode.count"])
        .arg(&experiment)
        .output()
        .unwrap();
    assert!(compared.status.success(), "{}", stderr(&compared));
    let c: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    let row = &c["groups"][0]["comparisons"][0]["rows"][0];
    assert_eq!(row["metric"], "encode.count", "{row}");
    assert_eq!(row["baseline"]["median"], 100.0, "{row}");
    assert_eq!(row["variant"]["median"], 200.0, "{row}");
    assert_eq!(row["baseline"]["runs"], 2, "{row}");
    // A bad probe is refused before the first run, as in `run`.
    let refused = framelab()
        .args(["bench", "--runs", "2", "-o"])
        .arg(dir.path().join("refused.framelab"))
        .args(["--probe", "encode=/etc/hostname:main", "--variant"])
        .arg(format!("a={} 10 /dev/null", prog.display()))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(!dir.path().join("refused.framelab").exists());
}
