//! The C ABI from C, under `framelab run`: what the C program says it recorded is what the run
//! file holds. Compiles tests/c/abi_test.c with the system C compiler (`cc`, or `$CC`).

use crate::common;

use common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn compile_abi_test(dir: &Path) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let static_lib = probe_static_lib();
    assert!(static_lib.exists(), "{} not built", static_lib.display());
    let out = dir.join("abi_test");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-Wall", "-Wextra", "-Werror", "-std=c11", "-O1", "-I"])
        .arg(manifest.join("probe/include"))
        .arg(manifest.join("tests/c/abi_test.c"))
        .arg(&static_lib)
        .args(["-lpthread", "-lm", "-ldl", "-lrt", "-lgcc_s", "-o"])
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("a C compiler is needed for this test ({cc}): {e}"));
    assert!(status.success(), "compiling the C ABI test failed");
    out
}

#[test]
fn a_c_program_records_through_the_c_abi() {
    let dir = tempfile::tempdir().unwrap();
    let program = compile_abi_test(dir.path());
    let path = temp_run(&dir, "c-abi");
    let frames = 500;
    let out = framelab()
        .args(["run", "-o"])
        .arg(&path)
        .arg("--")
        .arg(&program)
        .arg(frames.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));

    // The program prints `stage NAME COUNT`, `counter NAME COUNT sum SUM`, `event NAME COUNT`, `invalid N`.
    let said = stdout(&out);
    let run = load(&path);
    let mut spans_by_stage: HashMap<&str, usize> = HashMap::new();
    for span in &run.spans {
        *spans_by_stage
            .entry(run.stages[span.stage as usize].as_str())
            .or_default() += 1;
    }
    let mut checked = 0;
    for line in said.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["stage", name, count] => {
                assert_eq!(
                    spans_by_stage.get(name).copied().unwrap_or(0),
                    count.parse::<usize>().unwrap(),
                    "stage {name}"
                );
                checked += 1;
            }
            ["counter", name, count, "sum", sum] => {
                let id = run
                    .counter_names
                    .iter()
                    .position(|n| n == name)
                    .expect("counter name") as u16;
                let values: Vec<i64> = run
                    .counters
                    .iter()
                    .filter(|c| c.counter == id)
                    .map(|c| c.value)
                    .collect();
                assert_eq!(
                    values.len(),
                    count.parse::<usize>().unwrap(),
                    "counter {name}"
                );
                assert_eq!(
                    values.iter().sum::<i64>(),
                    sum.parse::<i64>().unwrap(),
                    "counter {name} sum"
                );
                checked += 1;
            }
            ["event", name, count] => {
                let id = run
                    .event_names
                    .iter()
                    .position(|n| n == name)
                    .expect("event name") as u16;
                assert_eq!(
                    run.events.iter().filter(|e| e.event == id).count(),
                    count.parse::<usize>().unwrap()
                );
                checked += 1;
            }
            ["invalid", count] => {
                assert_eq!(
                    run.meta.invalid_records,
                    count.parse::<u64>().unwrap(),
                    "records with ids never interned"
                );
                checked += 1;
            }
            _ => {}
        }
    }
    assert!(checked >= 10, "the program said what it recorded:\n{said}");
    assert_eq!(run.meta.dropped_events, 0);
    let pids: std::collections::HashSet<u32> = run.threads.iter().map(|t| t.pid).collect();
    assert_eq!(
        pids.len(),
        2,
        "the forked child recorded too: {:?}",
        run.threads
    );
}
