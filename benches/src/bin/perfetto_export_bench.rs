//! `framelab export --format perfetto` speed and size, and importing that file back.
//!
//! cargo build --release -p framelab-benches
//! target/release/perfetto_export_bench [--frames N] [--repeat N] [--file PATH] [--keep]
//!     [--export-only]
//!
//! The run: 4 stages per frame, each on its own thread (a pipeline), 2.5M frames 12 µs
//! apart (10M spans over 30 s), stage durations 0.5–2.9 µs in their 3 µs slot and one
//! span in 1,000 running 12 µs longer, into the next frame's span of its thread (so the
//! overlap tracks are exercised). Spans are in the order a recorded run holds them: the
//! collector's drains, 4,096 spans of one thread at a time, not sorted by time.
//! Generated before timing; each repeat exports to the file, then imports it.

use std::path::PathBuf;
use std::time::Instant;

use framelab::export::export_to_path;
use framelab::import::{parse_bytes, read_input, Format, ImportOptions};
use framelab::model::{Run, Span, ThreadInfo};

const STAGES: u16 = 4;
const FRAME_NS: i64 = 12_000;
const SLOT_NS: i64 = 3_000;
const DRAIN: usize = 4096;

struct Options {
    frames: u64,
    repeat: usize,
    file: PathBuf,
    keep: bool,
    /// Skip the import (for profiling the export alone).
    export_only: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        frames: 2_500_000,
        repeat: 3,
        file: std::env::temp_dir().join("perfetto_export_bench.pftrace"),
        keep: false,
        export_only: false,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--frames" => options.frames = value()?.parse().map_err(|e| format!("{e}"))?,
            "--repeat" => options.repeat = value()?.parse().map_err(|e| format!("{e}"))?,
            "--file" => options.file = PathBuf::from(value()?),
            "--keep" => options.keep = true,
            "--export-only" => options.export_only = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// xorshift64*: reproducible noise without a dependency.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
}

fn generate(frames: u64) -> Run {
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    let per_thread: Vec<Vec<Span>> = (0..STAGES)
        .map(|stage| {
            (0..frames)
                .map(|frame| {
                    let start = frame as i64 * FRAME_NS + i64::from(stage) * SLOT_NS;
                    let mut dur = 500 + noise.below(2_400);
                    if noise.below(1_000) == 0 {
                        dur += FRAME_NS;
                    }
                    Span {
                        frame,
                        stage,
                        thread: u32::from(stage),
                        start_ns: start + noise.below(100),
                        dur_ns: dur,
                    }
                })
                .collect()
        })
        .collect();
    let mut spans = Vec::with_capacity(frames as usize * usize::from(STAGES));
    for chunk in 0..(frames as usize).div_ceil(DRAIN) {
        for thread in &per_thread {
            let from = chunk * DRAIN;
            spans.extend_from_slice(&thread[from..(from + DRAIN).min(thread.len())]);
        }
    }
    Run {
        stages: ["capture", "decode", "render", "present"]
            .map(String::from)
            .to_vec(),
        threads: (0..u32::from(STAGES))
            .map(|i| ThreadInfo {
                pid: 4000,
                tid: 4001 + i,
                name: format!("stage{i}"),
                dropped: 0,
            })
            .collect(),
        spans,
        ..Run::default()
    }
}

/// CPU time of this thread: on a shared machine wall time also counts others' work.
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("perfetto_export_bench: {e}");
            std::process::exit(2);
        }
    };
    let run = generate(options.frames);
    println!(
        "run: {} spans, {} frames, {} threads; file {}",
        run.spans.len(),
        options.frames,
        run.threads.len(),
        options.file.display()
    );
    let (mut export_s, mut export_cpu, mut import_s, mut import_cpu) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0;
    for i in 0..options.repeat {
        let (t, cpu) = (Instant::now(), cpu_s());
        export_to_path(
            &run,
            framelab::render::Format::Perfetto,
            &options.file,
            None,
        )
        .expect("export");
        let (exported, exported_cpu) = (t.elapsed().as_secs_f64(), cpu_s() - cpu);
        bytes = std::fs::metadata(&options.file).expect("written").len();

        if options.export_only {
            println!(
                "repeat {}: export {exported:.2} s wall, {exported_cpu:.2} s CPU",
                i + 1
            );
            continue;
        }
        let (t, cpu) = (Instant::now(), cpu_s());
        let input = read_input(&options.file).expect("read");
        let back = parse_bytes(Format::Perfetto, &input, ImportOptions::default()).expect("import");
        let (imported, imported_cpu) = (t.elapsed().as_secs_f64(), cpu_s() - cpu);
        assert_eq!(back.spans.len(), run.spans.len());
        drop((back, input));

        let mb = bytes as f64 / 1e6;
        println!(
            "repeat {}: export {exported:.2} s wall, {exported_cpu:.2} s CPU ({:.0} MB/s of \
             CPU); import {imported:.2} s wall, {imported_cpu:.2} s CPU ({:.0} MB/s of CPU)",
            i + 1,
            mb / exported_cpu,
            mb / imported_cpu
        );
        export_s.push(exported);
        export_cpu.push(exported_cpu);
        import_s.push(imported);
        import_cpu.push(imported_cpu);
    }
    if options.export_only {
        return;
    }
    let mb = bytes as f64 / 1e6;
    let import_cpu = median(import_cpu);
    println!(
        "median: export {:.2} s wall, {:.2} s CPU; {mb:.0} MB ({:.1} bytes/span); import {:.2} \
         s wall, {import_cpu:.2} s CPU ({:.0} MB/s)",
        median(export_s),
        median(export_cpu),
        bytes as f64 / run.spans.len() as f64,
        median(import_s),
        mb / import_cpu
    );
    if !options.keep {
        let _ = std::fs::remove_file(&options.file);
    }
}
