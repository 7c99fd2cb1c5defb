//! The NVML source through `dlopen`, against a stand-in for the driver's library
//! (tests/fixtures/nvml/fake_nvml.c, built here with the C compiler CI has): the binding's
//! symbols and struct layouts, an unsupported call named once, and a GPU lost mid-run that
//! stops the source while the run goes on; and power as a compare metric: runs at steady
//! known draws (`FAKE_NVML_POWER_MW`) compared on W, J/frame and J/request, exactly. The
//! real driver was checked on an H100 (docs/gpu-h100-report.md), power on an H200 with
//! tests/tools/power_gpu_check.sh (docs/bench.md, "Power and energy").

use crate::common;

use common::json::{framelab_json, row};
use common::*;
use framelab::model::SourceState;
use std::path::{Path, PathBuf};

/// Builds the fake library into `dir` and returns its path.
fn fake_nvml(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nvml/fake_nvml.c");
    let code = std::fs::read_to_string(source).unwrap();
    let flags = ["-shared", "-fPIC", "-O1"];
    compile_c(dir, "fake_nvml", &code, &flags, "libnvidia-ml.so.1")
}

#[test]
fn the_binding_reads_every_metric_the_library_offers() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .args([
            "sources",
            "--count",
            "2",
            "--sample-every",
            "5ms",
            "--no-sample",
            "threads",
        ])
        // A process to ask the GPU about: the fake answers Not Supported.
        .args(["--pid", &std::process::id().to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "nvml      on       GPU 0 Fake GPU · driver 0.fake; GPU 0 does not report process utilisation (Not Supported)"
        ),
        "{text}"
    );
    let row = |metric: &str| -> String {
        text.lines()
            .find(|l| l.split_whitespace().nth(1) == Some(metric))
            .unwrap_or_else(|| panic!("no {metric} row in {text}"))
            .to_string()
    };
    assert!(
        row("sm_clock").ends_with("1980 1980"),
        "{}",
        row("sm_clock")
    );
    assert!(row("mem_clock").ends_with("2619 2619"));
    assert!(row("gpu_busy").ends_with("97 97"));
    assert!(row("mem_busy").ends_with("40 40"));
    assert!(row("power").ends_with("350000 350000"));
    // The fake's counter grows 1750 mJ a call: two calls of the rehearsal before the
    // readings, then one a reading.
    assert!(
        row("energy").ends_with("1005250 1007000"),
        "{}",
        row("energy")
    );
    assert!(row("mem_used").ends_with("2147483648 2147483648"));
    assert!(row("throttle").ends_with("0x4 0x4"));
}

#[test]
fn a_gpu_lost_mid_run_stops_the_source_not_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let path = temp_run(&dir, "lost");
    // The rehearsal before the launch makes 19 calls (nine metrics twice, process
    // utilisation once: refused), then nine a reading: the GPU is lost during the fifth.
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .env("FAKE_NVML_LOSE_AFTER", "60")
        .args(["run", "--fps", "500", "--sample-every", "5ms", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "spans", "300"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("framelab: warning: telemetry source nvml stopped: GPU 0 lost at "),
        "{err}"
    );

    let run = load(&path);
    assert_eq!(run.spans.len(), 900, "the run itself is whole");
    let nvml = &run.telemetry.sources[0];
    assert_eq!(nvml.state, SourceState::Stopped);
    assert!(
        nvml.detail
            .contains("(GPU is lost (NVML error 15)); its readings until then are kept"),
        "{}",
        nvml.detail
    );
    // Four whole readings before the loss, and the fifth's first five metrics: five SM
    // clock readings (fewer only if a call were put off as slow, which the fake never is
    // unless this machine stalls the sampler twice in a row).
    let sm_clock = run
        .telemetry
        .series
        .iter()
        .position(|s| s.source == "nvml" && s.metric == "sm_clock")
        .unwrap();
    let kept = run
        .telemetry
        .samples
        .iter()
        .filter(|s| s.series as usize == sm_clock)
        .count();
    assert!((1..=5).contains(&kept), "{kept} SM clock readings kept");
    let text = stdout(&out);
    assert!(text.contains("nvml      stopped  GPU 0 lost at "), "{text}");
}

/// `framelab run --fps 500 -o path -- testprog ARGS` with the fake driver, `knob` set; it
/// must succeed.
fn run_with_driver(
    library: &Path,
    knob: (&str, &str),
    path: &Path,
    args: &str,
) -> std::process::Output {
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", library)
        .env(knob.0, knob.1)
        .args(["run", "--fps", "500", "-o"])
        .arg(path)
        .arg("--")
        .arg(example("testprog"))
        .args(args.split(' '))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

#[test]
fn the_sources_open_before_the_command_starts_and_their_start_up_is_not_in_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let path = temp_run(&dir, "init");
    // A driver whose start-up costs 400 ms of CPU, far above what framelab spends in the
    // window of a 300-frame run (a few ms).
    let out = run_with_driver(
        &library,
        ("FAKE_NVML_INIT_CPU_MS", "400"),
        &path,
        "spans 300",
    );
    assert!(!stderr(&out).contains("still opening"), "{}", stderr(&out));
    let run = load(&path);
    let nvml = &run.telemetry.sources[0];
    assert_eq!(nvml.state, SourceState::On, "{}", nvml.detail);
    let collector_ms = run.meta.collector_cpu_ns as f64 / 1e6;
    assert!(
        collector_ms < 200.0,
        "framelab's CPU in the window is {collector_ms:.1} ms: the driver's start-up was in it"
    );
}

#[test]
fn sources_that_take_too_long_to_open_let_the_command_start_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let path = temp_run(&dir, "hung");
    let out = run_with_driver(
        &library,
        ("FAKE_NVML_INIT_SLEEP_MS", "3000"),
        &path,
        "rate 1000 2",
    );
    let said: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.contains("still opening"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        said,
        [
            "framelab: warning: telemetry sources still opening after 2 s (a GPU driver?): the \
          command starts now, and their start-up is inside its measured window \
          (--no-sample SOURCE leaves one out)"
        ],
    );
    let run = load(&path);
    assert_eq!(run.spans.len(), 2000, "the run itself is whole");
    // The source opened beside the command (3 s after it began to, 1 s into the command's
    // 2 s) and was read from then on.
    let nvml = &run.telemetry.sources[0];
    assert_eq!(nvml.state, SourceState::On, "{}", nvml.detail);
    assert!(
        run.telemetry
            .samples
            .iter()
            .any(|s| run.telemetry.series[s.series as usize].source == "nvml"),
        "NVML was read once open"
    );
}

#[test]
fn a_driver_that_never_opens_neither_holds_the_command_back_nor_hangs_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let path = temp_run(&dir, "never");
    // Ten minutes in nvmlInit: the run of 2 s must end long before the driver does.
    let mut child = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .env("FAKE_NVML_INIT_SLEEP_MS", "600000")
        .args(["run", "-o"])
        .arg(&path)
        .args(["--", &example("testprog"), "rate", "1000", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Generous (60 s for a run of 2 s): this waits for the end, it times nothing.
    let ended = (0..1200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
        panic!("framelab waited for the driver");
    }
    assert!(child.wait().unwrap().success());
    let run = load(&path);
    assert_eq!(run.spans.len(), 2000, "the run itself is whole");
    let sampler = &run.telemetry.sources[0];
    assert_eq!(sampler.source, "sampler");
    assert_eq!(sampler.state, SourceState::Stopped);
    assert!(
        sampler
            .detail
            .starts_with("the sources were still opening when the run ended"),
        "{}",
        sampler.detail
    );
}

/// How the fake GPU draws power in a run.
#[derive(Clone, Copy)]
enum Gpu {
    /// A steady draw in mW, with no energy counter: framelab integrates the power readings,
    /// so mean power and energy are exact whenever the sampler read (an energy counter's
    /// reading would be as late as the sampler was, on a busy machine).
    Steady(u32),
    /// No NVML library: no GPU readings at all.
    Absent,
}

/// `framelab run --fps 500 … -o path extra…` with the fake GPU drawing as `gpu` says.
fn run_at_power(library: &Path, gpu: Gpu, path: &Path, extra: &[&str]) {
    let mut command = framelab();
    match gpu {
        Gpu::Steady(mw) => command
            .env("FRAMELAB_NVML_LIBRARY", library)
            .env("FAKE_NVML_POWER_MW", mw.to_string()),
        Gpu::Absent => command.env("FRAMELAB_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"),
    };
    let out = command
        .args(["run", "--fps", "500", "--sample-every", "5ms"])
        .args(ONLY_THE_GPU)
        .arg("-o")
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Only the fake GPU is sampled: a machine with RAPL or an AMD card would add devices.
const ONLY_THE_GPU: [&str; 8] = [
    "--no-sample",
    "amdgpu",
    "--no-sample",
    "rapl",
    "--no-sample",
    "cpufreq",
    "--no-sample",
    "threads",
];

fn spans(frames: u32) -> [String; 4] {
    [
        "--".into(),
        example("testprog"),
        "spans".into(),
        frames.to_string(),
    ]
}

fn compare_json(args: &[&str]) -> serde_json::Value {
    framelab_json(&[&["compare", "--format", "json"], args].concat())
}

fn rows(c: &serde_json::Value) -> &Vec<serde_json::Value> {
    c["groups"][0]["comparisons"][0]["rows"].as_array().unwrap()
}

fn assert_within(got: f64, want: f64, relative: f64) {
    assert!(
        (got - want).abs() <= relative * want.abs(),
        "{got} is not {want} (±{relative} relative)"
    );
}

/// Each run's (window seconds, measured frames), from the report.
fn windows(path: &Path, runs: usize) -> Vec<(f64, f64)> {
    (1..=runs)
        .map(|id| {
            let out = framelab()
                .args(["report", "--format", "json", "--run-id", &id.to_string()])
                .arg(path)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            let seconds = v["window"]["length_ns"].as_f64().unwrap() / 1e9;
            (seconds, v["frames"].as_f64().unwrap())
        })
        .collect()
}

/// The median of two runs' values: their mean.
fn median_of_two(values: &[f64]) -> f64 {
    assert_eq!(values.len(), 2);
    (values[0] + values[1]) / 2.0
}

#[test]
fn power_and_energy_per_frame_are_compared_at_two_known_powers() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let (low, high) = (temp_run(&dir, "100W"), temp_run(&dir, "250W"));
    let command = spans(300);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    for _ in 0..2 {
        run_at_power(&library, Gpu::Steady(100_000), &low, &command);
        run_at_power(&library, Gpu::Steady(250_000), &high, &command);
    }
    let (low_s, high_s) = (low.to_str().unwrap(), high.to_str().unwrap());
    let c = compare_json(&[low_s, high_s]);

    // Mean power: the fake's steady draw in every run; the interval of a ratio of
    // constants is the ratio itself.
    let power = row(&c, "power.GPU0");
    assert_eq!(power["label"], "mean power, GPU0");
    assert_eq!(power["unit"], "watts");
    let exact =
        |got: &serde_json::Value, want: f64| assert_within(got.as_f64().unwrap(), want, 1e-9);
    exact(&power["baseline"]["median"], 100.0);
    exact(&power["variant"]["median"], 250.0);
    exact(&power["difference"], 150.0);
    for end in ["ratio", "low", "high"] {
        exact(&power["ratio"][end], 2.5);
    }
    // Energy per frame: power × the window ÷ its frames, run by run.
    let per_frame = row(&c, "energy_per_frame.GPU0");
    assert_eq!(
        (&per_frame["label"], &per_frame["unit"]),
        (&"energy per frame, GPU0".into(), &"joules".into())
    );
    for (path, watts, side) in [(&low, 100.0, "baseline"), (&high, 250.0, "variant")] {
        let want: Vec<f64> = (windows(path, 2).iter())
            .map(|(seconds, frames)| watts * seconds / frames)
            .collect();
        exact(&per_frame[side]["median"], median_of_two(&want));
    }
    assert!(per_frame["ratio"]["low"].as_f64().unwrap() > 0.0);

    // Every format has the rows, in watts and joules.
    let shown = |format: &str| {
        let out = framelab()
            .args(["compare", "--format", format, low_s, high_s])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let text = shown("text");
    let line = (text.lines())
        .find(|l| l.contains("mean power, GPU0"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells[3..10],
        ["W", "100.0", "±0.0%", "250.0", "±0.0%", "+150.0", "+150.0%"],
        "{line}"
    );
    assert!(text.contains("energy per frame, GPU0     J  "), "{text}");
    let markdown = shown("markdown");
    assert!(
        markdown.contains("| mean power, GPU0 | W | 100.0 ±0.0% | 250.0 ±0.0% | +150.0 |"),
        "{markdown}"
    );
    let csv = shown("csv");
    assert!(
        csv.lines()
            .any(|l| l.starts_with(",250W,100W,power.GPU0,W,lower_is_better,2,")),
        "{csv}"
    );
    assert!(shown("html").contains("mean power, GPU0"));
}

#[test]
fn a_side_without_gpu_readings_has_no_power_rows_and_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let (with, without) = (temp_run(&dir, "gpu"), temp_run(&dir, "nogpu"));
    let command = spans(100);
    let command: Vec<&str> = command.iter().map(String::as_str).collect();
    run_at_power(&library, Gpu::Steady(100_000), &with, &command);
    run_at_power(&library, Gpu::Absent, &without, &command);
    let files = [with.to_str().unwrap(), without.to_str().unwrap()];

    let c = compare_json(&files);
    assert!(
        rows(&c).iter().all(|r| {
            let key = r["metric"].as_str().unwrap();
            !key.starts_with("power.") && !key.starts_with("energy_per")
        }),
        "{c}"
    );
    let notes: Vec<&str> = (c["notes"].as_array().unwrap().iter())
        .filter_map(|n| n.as_str())
        .filter(|n| n.contains("GPU0"))
        .collect();
    assert_eq!(
        notes,
        [
            "GPU0: nogpu has no nvml readings of it (telemetry off or absent there), so \
          power.GPU0, energy_per_frame.GPU0 are left out, not shown as zero"
        ]
    );

    // Asked for by name, the row stays, with no value on that side (never 0).
    let c = compare_json(&[&files[..], &["--show", "fps,power.GPU0"]].concat());
    let power = row(&c, "power.GPU0");
    assert_within(power["baseline"]["median"].as_f64().unwrap(), 100.0, 1e-9);
    assert!(power["variant"].is_null(), "{power}");
    assert!(power["difference"].is_null() && power["ratio"].is_null());
    let note = c["notes"].to_string();
    assert!(
        note.contains("so power.GPU0 show no value there, not zero"),
        "{note}"
    );

    // A variant with the GPU in one run of two: compared on that run, and the other counted.
    let mixed = temp_run(&dir, "mixed");
    run_at_power(&library, Gpu::Steady(250_000), &mixed, &command);
    run_at_power(&library, Gpu::Absent, &mixed, &command);
    let c = compare_json(&[files[0], mixed.to_str().unwrap()]);
    let power = row(&c, "power.GPU0");
    assert_eq!(power["variant"]["runs"], 1);
    assert_within(power["variant"]["median"].as_f64().unwrap(), 250.0, 1e-9);
    let note = c["notes"].to_string();
    assert!(
        note.contains(
            "GPU0: 1 of 2 runs of mixed had no nvml readings of it; its power and energy \
             there are of the other runs"
        ),
        "{note}"
    );
}

#[test]
fn energy_per_request_divides_the_windows_energy_by_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let (low, high) = (temp_run(&dir, "light"), temp_run(&dir, "heavy"));
    // The command's own count of work (600 requests) and a rate, for the refusal.
    let script = format!(
        "{} spans 300 && echo 'served 600 requests'",
        example("testprog")
    );
    let command = [
        "--metric",
        r"requests:lower=served (\d+) requests",
        "--metric",
        r"req_s[req/s]:higher=served (\d+) requests",
        "--",
        "sh",
        "-c",
        &script,
    ];
    run_at_power(&library, Gpu::Steady(100_000), &low, &command);
    run_at_power(&library, Gpu::Steady(250_000), &high, &command);
    let files = [low.to_str().unwrap(), high.to_str().unwrap()];

    let c = compare_json(
        &[
            &files[..],
            &["--show", "energy_per.requests.GPU0,power.GPU0"],
        ]
        .concat(),
    );
    let per_request = row(&c, "energy_per.requests.GPU0");
    assert_eq!(per_request["label"], "energy per requests, GPU0");
    assert_eq!(per_request["unit"], "joules");
    // One run a side: the values and the change, no interval. Power × the window ÷ 600.
    for (path, watts, side) in [(&low, 100.0, "baseline"), (&high, 250.0, "variant")] {
        let (seconds, _) = windows(path, 1)[0];
        let got = per_request[side]["median"].as_f64().unwrap();
        assert_within(got, watts * seconds / 600.0, 1e-9);
        let power = row(&c, "power.GPU0")[side]["median"].as_f64().unwrap();
        assert_within(power, watts, 1e-9);
    }
    assert!(per_request["ratio"]["low"].is_null(), "{per_request}");

    // A rate counts no work: refused in one line that says what qualifies.
    let out = framelab()
        .args(["compare", "--show", "energy_per.req_s.GPU0"])
        .args(files)
        .output()
        .unwrap();
    // As for any --show name compare does not know: a usage error.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let line = error_line(&out);
    assert!(
        line.contains("no metric 'energy_per.req_s.GPU0': req_s is a rate (req/s)"),
        "{line}"
    );
}

#[test]
fn bench_step_and_sweep_tables_carry_power() {
    let dir = tempfile::tempdir().unwrap();
    let library = fake_nvml(dir.path());
    let file = temp_run(&dir, "sweep");
    let testprog = example("testprog");
    let out = framelab()
        .env("FRAMELAB_NVML_LIBRARY", &library)
        .env("FAKE_NVML_POWER_MW", "120000")
        // bench samples as `run` does by default: every 50 ms, every source.
        .args(["bench", "-n", "2", "--fps", "500"])
        .args([
            "--param",
            "n=100,200",
            "--show",
            "power.GPU0,fps",
            "--format",
            "json",
        ])
        .arg("--variant")
        .arg(format!("a={testprog} spans {{n}}"))
        .arg("--variant")
        .arg(format!("b=env V=b {testprog} spans {{n}}"))
        .arg("--variant")
        .arg(format!("c=env V=c {testprog} spans {{n}}"))
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(c["headline_metric"], "power.GPU0");
    for group in c["groups"].as_array().unwrap() {
        let steps = group["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "{group}");
        for step in steps {
            assert_within(step["median"].as_f64().unwrap(), 120.0, 1e-9);
        }
        assert_within(steps[2]["step"]["ratio"].as_f64().unwrap(), 1.0, 1e-9);
    }
    let sweep = &c["sweeps"][0];
    assert_eq!(
        (&sweep["metric"], &sweep["unit"]),
        (&"power.GPU0".into(), &"watts".into())
    );
    for r in sweep["rows"].as_array().unwrap() {
        for median in r["medians"].as_array().unwrap() {
            assert_within(median.as_f64().unwrap(), 120.0, 1e-9);
        }
    }
}
