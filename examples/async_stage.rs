//! A pipeline with a GPU-like asynchronous stage: the CPU prepares a frame (1 ms busy), a
//! "device" (a thread that sleeps 3 ms, as a GPU runs without the CPU) renders it and records
//! the span from its own timestamps on the GPU queue it names (`gpu0.compute`, with
//! `record_ns_on`: the queue, not the device thread, is the resource render occupies), then
//! presents it (0.2 ms busy). At
//! most DEPTH frames are in flight: at depth 1 the CPU waits for the device, at depth 2 it
//! prepares the next frame meanwhile. Paced by the SDK pacer (its lateness is a line of its own, not a stage).
//!
//! `framelab run --fps 400 -- target/debug/examples/async_stage DEPTH FRAMES FPS`

use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use framelab_probe::pacer::{LatePolicy, Pacer};
use framelab_probe::{monotonic_ns, Laps, Queue, Stage};

fn main() {
    let arg = |i: usize, default: f64| -> f64 {
        (std::env::args().nth(i))
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (depth, frames, fps) = (arg(1, 1.0) as usize, arg(2, 600.0) as u64, arg(3, 400.0));
    let (prepare, render, present) = (
        Stage::new("prepare"),
        Stage::new("render"),
        Stage::new("present"),
    );
    let gpu = Queue::new("gpu0.compute");
    // A token per frame in flight, returned once the frame is presented.
    let (free, slots) = sync_channel::<()>(depth.max(1));
    for _ in 0..depth.max(1) {
        free.send(()).expect("room for every token");
    }
    let (submit, submitted) = sync_channel::<u64>(depth.max(1));
    let device = std::thread::Builder::new()
        .name("device".into())
        .spawn(move || {
            for frame in submitted {
                let start = monotonic_ns();
                std::thread::sleep(Duration::from_millis(3));
                render.record_ns_on(&gpu, frame, start, monotonic_ns());
                let mut laps = Laps::start(frame);
                work(Duration::from_micros(200));
                laps.lap(present);
                if free.send(()).is_err() {
                    return;
                }
            }
        })
        .expect("a device thread");
    let mut pacer = Pacer::new(fps, LatePolicy::Skip).expect("a valid frame rate");
    for frame in 0..frames {
        pacer.wait(frame);
        if slots.recv().is_err() {
            break;
        }
        let mut laps = Laps::start(frame);
        work(Duration::from_millis(1));
        laps.lap(prepare);
        if submit.send(frame).is_err() {
            break;
        }
    }
    drop(submit);
    device.join().expect("the device thread ends");
}

/// Stands in for CPU work: keeps the CPU busy for `d`.
fn work(d: Duration) {
    let until = Instant::now() + d;
    let mut x = 1u64;
    while Instant::now() < until {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}
