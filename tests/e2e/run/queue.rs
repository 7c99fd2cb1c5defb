//! A GPU queue the program names is a resource: examples/async_stage records its `render`
//! stage on the queue `gpu0.compute` (3 ms a frame at least: the device sleeps that long),
//! against 1 ms of `prepare` on the main thread and 0.2 ms of `present` on the device thread.
//! At depth 2 the queue is the busiest resource whatever the machine's load, so the report
//! must name it as the bottleneck, and `whatif` must keep it as an in-order resource.
//! Structure and bounds that follow from the sleep, never a measured speed.

use crate::common;

use common::*;

#[test]
fn the_named_gpu_queue_is_the_bottleneck_of_the_async_example() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_run(&dir, "async");
    let out = framelab()
        .args(["run", "--fps", "400", "--warmup", "200ms", "-o"])
        .arg(&path)
        .args(["--", &example("async_stage"), "2", "400", "400"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let report = report_json(&path);
    let pipeline = &report["pipeline"];
    let queue = (pipeline["resources"].as_array().unwrap().iter())
        .find(|r| r["name"] == "gpu0.compute")
        .unwrap_or_else(|| panic!("no queue resource: {pipeline}"));
    assert_eq!(queue["queue"], true);
    assert_eq!(queue["stages"][0]["stage"], "render");
    assert_eq!(queue["stages"].as_array().unwrap().len(), 1);
    let device = (pipeline["resources"].as_array().unwrap().iter())
        .find(|r| r["name"] == "device")
        .unwrap();
    assert_eq!(device["queue"], false);
    assert_eq!(device["stages"][0]["stage"], "present");

    let bound = &pipeline["bottleneck"];
    assert_eq!(bound["resource"], "gpu0.compute", "{pipeline}");
    assert_eq!(
        (bound["queue"].as_bool(), bound["stage"].as_str()),
        (Some(true), Some("render"))
    );
    // Every render span lasts 3 ms or more: the queue allows at most 333.3 fps; and the
    // bound is the measured frames over the queue's busy seconds.
    let fps_bound = bound["fps_bound"].as_f64().unwrap();
    assert!(fps_bound <= 1e9 / 3e6 + 1e-6, "{fps_bound}");
    let frames = report["frames"].as_f64().unwrap();
    let busy_s = queue["busy_ns"].as_f64().unwrap() / 1e9;
    assert!((fps_bound - frames / busy_s).abs() < 1e-6 * fps_bound);

    let text = run(&["report", path.to_str().unwrap()]);
    let text = stdout(&text);
    assert!(text.contains("gpu0.compute (queue)"), "{text}");
    assert!(text.contains("queue gpu0.compute "), "{text}");
    // The resource table lists the queue beside the threads, and its heading says so.
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("thread/queue ") && l.contains("busy %")),
        "{text}"
    );

    let whatif = run(&["whatif", path.to_str().unwrap(), "--depth", "3"]);
    assert!(whatif.status.success(), "{}", stderr(&whatif));
    let whatif = stdout(&whatif);
    assert!(whatif.contains("gpu0.compute (queue): render"), "{whatif}");
    // Split over more threads, the frame's first stage stays on the first thread (the
    // pacer's wait is no stage: nothing of it is placed).
    assert!(whatif.contains("thread 1: prepare"), "{whatif}");
    let schedules = (whatif.lines()).filter(|l| l.contains("depth ") && l.contains(" · "));
    assert!(schedules.clone().count() == 2, "{whatif}");
    assert!(
        schedules.into_iter().all(|l| !l.contains("pace")),
        "{whatif}"
    );
}
